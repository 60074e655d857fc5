#pragma once
// The message every transport carries. The sender writes every byte, the receiver checks every
// byte, so both sides touch the whole payload, and loss, duplication and corruption are caught.
//
// Messages of at least kHeaderSize bytes start with a header:
//   word 0: sequence number (48 bits) | producer index (16 bits)
//   word 1: send timestamp, ns on CLOCK_MONOTONIC (0 = not sampled)
//   word 2: flags (low 32 bits) | size (high 32 bits)
//   word 3: only with flag kIntended (open-loop load): the intended send time, ns
// and continue with payload words derived from (sequence, producer, word index).
// Smaller messages (round trips only) hold byte i = (seq + i) mod 255; a stop message is all 0xFF.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ipclab::msg {

constexpr size_t kHeaderSize = 24;
/// The header of a message that carries its intended send time (kIntended).
constexpr size_t kIntendedHeaderSize = 32;
enum Flags : uint32_t { kStop = 1, kMeasured = 2, kIntended = 4 };

struct Header {
  uint64_t seq = 0;
  uint32_t producer = 0;
  uint64_t send_ns = 0;
  uint32_t flags = 0;
  uint64_t intended_ns = 0;  // with kIntended (needs len >= kIntendedHeaderSize)
};

/// verify=sample (the bulk suite): only the header, the tail and one payload word per 4 KiB page
/// are written and checked, the same words a full encode writes there — so a message left stale
/// is still caught page by page, and what touching every byte costs shows against verify=full.
constexpr size_t kSampleStride = 4096;

/// Fills `buf` (len bytes). `random` derives payload words from a hash rather than a constant;
/// `sampled`: only the words verify=sample checks.
void encode(std::byte* buf, size_t len, const Header& h, bool random, bool sampled = false);

struct Decoded {
  bool ok = false;  // every byte as expected
  Header h;
};
/// Checks every byte of `buf`. For small messages `expect_seq` is the sequence number expected
/// (small messages carry it only modulo 255).
Decoded decode(const std::byte* buf, size_t len, bool random, uint64_t expect_seq = 0, bool sampled = false);

/// Copies message `src` to `dst` (len bytes): every byte, or with `sampled` only those decode(...,
/// sampled) reads (the header, the sampled words, the tail) — what a transport that must rewrite
/// an echo into memory of its own needs to carry, and no more.
void copy(std::byte* dst, const std::byte* src, size_t len, bool sampled);

/// The header of a message of at least kHeaderSize bytes, its payload unchecked (for a hook that
/// needs its times, not a verdict).
Header read_header(const std::byte* buf, size_t len);

/// True when the message is a stop marker.
bool is_stop(const std::byte* buf, size_t len);

/// What a receiver has seen of one sender's sequence numbers: the highest + 1, and as a ring of
/// bits which of the last kBits arrived — a sliding window like IPsec's anti-replay check (RFC 4303
/// 3.4.3), wide enough for a copy put back into a queue long after the original passed — so that
/// a repeat (duplicated) is told from a late first arrival (reordered). One older than the window
/// is taken as a repeat. The common step (the next number) clears and sets one bit.
class SeqWindow {
 public:
  enum Verdict { kNew, kLate, kRepeat };
  static constexpr uint64_t kBits = uint64_t(1) << 16;
  Verdict take(uint64_t seq);

 private:
  uint64_t& word(uint64_t s) { return seen_[(s % kBits) / 64]; }
  static uint64_t mask(uint64_t s) { return uint64_t(1) << (s % 64); }
  uint64_t next_ = 0;
  std::vector<uint64_t> seen_ = std::vector<uint64_t>(kBits / 64, 0);
};

}  // namespace ipclab::msg
