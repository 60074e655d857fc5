#pragma once
// Test hooks, read from IPCLAB_FAULT, so tests can prove end to end that the harness notices what
// it claims to notice. One spec per run:
//   corrupt:N           flips one byte of every Nth message a consumer (roundtrip: the server)
//                       receives; the run must fail with corrupt = the messages flipped;
//   slow:MECH:NS        busy-waits NS ns after every receive of mechanism MECH (compare must flag it);
//   ramp:MECH:NS        busy-waits after every receive of mechanism MECH for a time growing linearly
//                       from 0 at the start of the measured window (as the receiver sees it) to NS
//                       at its end: a run whose rate drifts, which the series must flag non_steady;
//   queue:MECH:NS       the receiver of MECH becomes a single server of deterministic service time
//                       NS in virtual time: each message is done at max(its intended send time, or
//                       its send time, the previous one's done) + NS, and the receive returns then,
//                       or when it arrives if later (the open-loop queueing tests);
//   stall:MECH:ROLE:MS  the ROLE side (producer, consumer, client, server) of mechanism MECH
//                       freezes once for MS ms in the middle of the measured window — for the
//                       frozen-peer tests of thread-based runs, where SIGSTOP cannot stop one side
//                       alone. It spins (state R, as a side stuck in its own work would), and lets
//                       go early once the session aborts;
//   stall:MECH:ROLE:MS:EVERY_MS  the same, every EVERY_MS ms of the window (> MS), from EVERY_MS
//                       after its start: the periodic stall of the open-loop tests.
//   crash:MECH:ROLE:HOW the ROLE side of mechanism MECH crashes once in the middle of the measured
//                       window: HOW is abort (abort(), as a library that gives up), segv (a write
//                       through a null pointer), bus, fpe or ill (that signal raised). With
//                       mode=threads the side is a thread of ipclab, which then dies of it (the
//                       crash tests, core/ownership/crash.hpp); a forked side dies alone;
// MECH is a mechanism's name (`pipe`) or full name (`messaging/pipe`). A worker that moves
// messages makes one FaultPoint and calls it around each send and receive; where IPCLAB_FAULT asks
// nothing of that side, each call is one inlined test of a bool.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/model/mechanism.hpp"

namespace ipclab {

class Worker;

/// The valid forms, for error messages.
inline constexpr const char* kFaultForms =
    "corrupt:N, slow:MECH:NS, ramp:MECH:NS, queue:MECH:NS, stall:MECH:ROLE:MS[:EVERY_MS] or "
    "crash:MECH:ROLE:abort|segv|bus|fpe|ill";

/// Checks IPCLAB_FAULT up front: UsageError naming the valid forms when it is set but malformed.
void check_fault_env();

/// One side's fault hooks. Made inside the worker, once; `w` tells them where the measured window is.
class FaultPoint {
 public:
  /// The hooks IPCLAB_FAULT asks for on the `role` side of mechanism `mech` in a run of
  /// `duration_s`, `roundtrip` or not (which names the side: role_name): corrupt, slow and ramp act
  /// on receivers (Role::Consumer), stall on its own role. (Nothing of the Session: a worker that
  /// cannot be stopped may outlive it.)
  FaultPoint(const Mechanism& mech, double duration_s, Role role, bool roundtrip, const Worker& w);
  /// With the queue hook: says on stderr how late, on average, this side got the window's messages
  /// done beyond their virtual completion and their send ("fault queue: N messages of the window,
  /// done X ns late on average").
  ~FaultPoint();
  FaultPoint(const FaultPoint&) = delete;
  FaultPoint& operator=(const FaultPoint&) = delete;

  /// Call before each send.
  void before_send() {
    if (armed_) [[unlikely]]
      maybe_stall();
  }
  /// Some hook acts on this side (a stall may make a send late after its sender's wait).
  bool armed() const { return armed_; }
  /// Call after each receive, with the message received (`n` bytes at `got`), before looking at
  /// it; returns where to look. A message received in place (`got` is the transport's memory, maybe
  /// read-only, not the side's own buffer `own`) is corrupted in a copy in `own`.
  std::byte* after_recv(std::byte* got, std::byte* own, size_t n) {
    if (armed_) [[unlikely]] {
      if (corrupt_every_ && got != own) {
        std::memcpy(own, got, n);
        got = own;
      }
      received(got, n);
    }
    return got;
  }

 private:
  void received(std::byte* buf, size_t n);
  void maybe_stall();

  const Worker& w_;
  bool armed_ = false;  // any hook below applies to this side
  uint64_t corrupt_every_ = 0, slow_ns_ = 0, ramp_ns_ = 0, queue_ns_ = 0, stall_ns_ = 0, period_ns_ = 0;
  int crash_ = 0;  // crash: the signal, SIGABRT by abort(), SIGSEGV by a bad write, others raised
  uint64_t window_ns_ = 0, ramp_start_ = 0;       // ramp: the window's length, and its start as seen here
  uint64_t queue_done_ = 0;                       // queue: when the last message is done
  uint64_t queue_late_ns_ = 0, queue_taken_ = 0;  // queue: this side's lateness over the window's messages
  uint64_t half_window_ns_ = 0;
  uint64_t count_ = 0, window_seen_ = 0, next_stall_ = 0;
  bool stalled_ = false;
};

}  // namespace ipclab
