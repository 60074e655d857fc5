#pragma once
// The pingpong region (reference 004): a header followed by one 64-byte slot per worker pair.
// The host writes a and b, the guest answers a+b; `state` hands the slot back and forth.
// The layout is shared with the Go guest (peers/go/cmd/pingpong-guest): change both together.
//
// Memory ordering, for every strategy:
//  - a, b (host) and sum (guest) are plain fields. They are published by the release store of
//    `state` and read after an acquire load of `state` that saw the owner's hand-over, so each
//    side's plain accesses happen-before the other's: no field is ever written by both sides
//    while the other may read it.
//  - Strategies that sleep (adaptive_*, sem, futex) need a store→load order across two
//    locations, Dekker style: the waker stores `state` then loads the peer's `*_sleeping` flag;
//    the sleeper stores its flag then loads `state`. Both pairs are seq_cst, so at least one side
//    sees the other's store: either the waker sees the flag and posts/wakes, or the sleeper sees
//    the new state and does not block. Release/acquire alone would allow both to miss (a lost
//    wake-up, i.e. a hang); on x86 the seq_cst store is one xchg per hand-over.
//  - spin, spin_yield and eventfd never read the flags, so their hand-over is a release store.
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace ipclab::pingpong {

enum State : uint32_t { kWait = 0, kReqReady = 1, kRespReady = 2, kDone = 3 };

struct alignas(64) Slot {
  std::atomic<uint32_t> state{kWait};
  uint32_t req_id = 0;                     // round trip number (low 32 bits), echoed as a check
  std::atomic<uint32_t> host_sleeping{0};  // 1: the host blocks or is about to; post to wake it
  std::atomic<uint32_t> guest_sleeping{0};
  int64_t a = 0, b = 0, sum = 0;
  uint8_t padding[24] = {};
};
static_assert(sizeof(Slot) == 64 && alignof(Slot) == 64, "one slot per cache line");
static_assert(offsetof(Slot, a) == 16 && offsetof(Slot, sum) == 32, "layout shared with Go");

constexpr uint32_t kMagic = 0x50504731;  // "PPG1"
constexpr int kMaxPairs = 64;

/// Written by the guest, read by the host after the guest finished (its own cache lines, so the
/// guest's bookkeeping never shares a line with a slot).
struct alignas(64) Header {
  uint32_t magic = kMagic;
  uint32_t pairs = 0;
  // Set when the session opens the measured window (Session::on_phase); guests then start their
  // CPU window.
  std::atomic<uint32_t> measuring{0};
  uint32_t pad0 = 0;
  uint8_t pad1[48] = {};
  // Guest → host.
  std::atomic<uint32_t> attached{0};  // guest workers (threads, goroutines) ready to answer
  std::atomic<uint32_t> finished{0};  // 1 once the guest wrote its CPU window below
  uint64_t cpu_user_ns = 0, cpu_sys_ns = 0;
  uint64_t ctx_vol = 0, ctx_invol = 0;
  uint64_t bad_requests = 0;  // requests whose req_id did not follow the previous one
  uint8_t pad2[16] = {};
};
static_assert(sizeof(Header) == 128, "layout shared with Go");
static_assert(offsetof(Header, attached) == 64 && offsetof(Header, cpu_user_ns) == 72 &&
                  offsetof(Header, bad_requests) == 104,
              "layout shared with Go");

struct Region {
  Header header;
  Slot slots[kMaxPairs];
};

inline size_t region_size(int pairs) { return sizeof(Header) + sizeof(Slot) * size_t(pairs); }

}  // namespace ipclab::pingpong
