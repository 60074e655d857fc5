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

/// The header of a message of at least kHeaderSize bytes, its payload unchecked (for a hook that
/// needs its times, not a verdict).
Header read_header(const std::byte* buf, size_t len);

/// True when the message is a stop marker.
bool is_stop(const std::byte* buf, size_t len);

}  // namespace ipclab::msg
