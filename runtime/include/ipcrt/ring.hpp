// Thin RAII wrapper over struct io_uring: setup with flag fallback, SQE acquisition, CQE batch reaping.
#pragma once

#include <liburing.h>

#include <cstdint>

#include "ipcrt/options.hpp"

namespace ipcrt {

/// One io_uring instance; owned by exactly one thread's runtime.
class ring {
 public:
  /// Sets up the ring, dropping DEFER_TASKRUN -> COOP_TASKRUN -> nothing until the kernel accepts.
  explicit ring(const options& opt);
  ~ring();
  ring(const ring&) = delete;
  ring& operator=(const ring&) = delete;

  /// Next free SQE; submits pending ones first when the SQ is full.
  io_uring_sqe* get_sqe() {
    io_uring_sqe* s = io_uring_get_sqe(&ring_);
    if (s) [[likely]]
      return s;
    return get_sqe_slow();
  }
  /// Ensures n SQEs can be taken without an intervening submit (needed for linked pairs).
  void reserve(unsigned n) {
    if (io_uring_sq_space_left(&ring_) < n) submit();
  }
  /// SQEs prepared but not yet submitted.
  unsigned pending() const noexcept { return io_uring_sq_ready(&ring_); }
  /// Submits pending SQEs; returns the count or -errno.
  int submit() noexcept { return io_uring_submit(&ring_); }
  /// Submits and blocks until at least want CQEs are ready.
  int submit_and_wait(unsigned want) noexcept { return io_uring_submit_and_wait(&ring_, want); }
  /// Submits and runs deferred task work so CQEs appear, without blocking.
  int submit_and_get_events() noexcept { return io_uring_submit_and_get_events(&ring_); }
  /// True when completions need a kernel entry to show up (DEFER_TASKRUN / TASKRUN flag set).
  bool needs_enter() const noexcept {
    return (setup_flags_ & IORING_SETUP_DEFER_TASKRUN) ||
           (IO_URING_READ_ONCE(*ring_.sq.kflags) & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW));
  }
  /// True when user space can see all the ring's pending work (shows_work()) and there is none:
  /// no SQE waiting to be submitted, no completion waiting for task work (IORING_SQ_TASKRUN) or
  /// in overflow, no CQE to reap. Loads only, relaxed: a completion that lands a moment after
  /// is seen by the next call, and a caller on its fast path keeps its own values in registers
  /// (an acquire load or a store here makes the compiler reload them).
  bool quiet() const noexcept {
    return ring_.sq.sqe_tail == ring_.sq.sqe_head &&
           !(__atomic_load_n(ring_.sq.kflags, __ATOMIC_RELAXED) &
             (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)) &&
           __atomic_load_n(ring_.cq.ktail, __ATOMIC_RELAXED) == *ring_.cq.khead;
  }
  /// Whether quiet() can be trusted: every completion shows in user space without a kernel entry
  /// (a flag or a CQE) — false for DEFER/COOP_TASKRUN rings set up without TASKRUN_FLAG.
  bool shows_work() const noexcept { return shows_work_; }
  /// Copies up to n ready CQE pointers without a syscall.
  unsigned peek_batch(io_uring_cqe** cqes, unsigned n) noexcept {
    return io_uring_peek_batch_cqe(&ring_, cqes, n);
  }
  /// Marks n CQEs as consumed.
  void cq_advance(unsigned n) noexcept { io_uring_cq_advance(&ring_, n); }
  /// CQEs waiting in the CQ.
  unsigned cq_ready() const noexcept { return io_uring_cq_ready(&ring_); }

  /// The ring fd (target of IORING_OP_MSG_RING).
  int fd() const noexcept { return ring_.ring_fd; }
  /// IORING_SETUP_* flags the ring was actually created with.
  unsigned setup_flags() const noexcept { return setup_flags_; }
  /// The liburing object, for calls this wrapper does not cover.
  io_uring* native() noexcept { return &ring_; }

 private:
  io_uring_sqe* get_sqe_slow();
  io_uring ring_{};
  unsigned setup_flags_ = 0;
  bool shows_work_ = false;
};

}  // namespace ipcrt
