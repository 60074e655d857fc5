// The per-thread event loop: a ready queue of coroutines, one io_uring, and the pool of operation states
// the runtime (not the coroutine frame) owns until each operation's CQE arrives.
#pragma once

#include <linux/time_types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "ipcrt/features.hpp"
#include "ipcrt/options.hpp"
#include "ipcrt/ring.hpp"
#include "ipcrt/task.hpp"

namespace ipcrt {

class buf_ring;

namespace detail {

// State of one io_uring operation. Pooled by the runtime; the CQE's user_data points here, so an
// awaiter that dies early can hand it back ("orphan") and the kernel still finds valid memory.
struct op_state {
  int32_t res = 0;
  uint32_t flags = 0;
  sched_node* waiter = nullptr;
  op_state* next_free = nullptr;
  buf_ring* provided = nullptr;  // buffer ring whose buffers orphaned CQEs must return
  __kernel_timespec ts{};        // timeouts point the kernel here, so it must outlive the awaiter
  bool in_flight = false;
  bool orphaned = false;
  bool multishot = false;
  bool result_is_fd = false;  // orphaned success results are closed, not leaked
  bool internal = false;      // runtime-owned (eventfd read): not counted as user work
  bool timer = false;         // lives in the runtime's timer heap, not in the kernel
  uint32_t gen = 0;           // bumped on release so stale timer-heap entries are recognised
  // Multishot CQEs that arrived while nobody was waiting.
  std::vector<std::pair<int32_t, uint32_t>> backlog;
  std::size_t backlog_head = 0;
  bool has_backlog() const noexcept { return backlog_head < backlog.size(); }
};

// A unit of work handed to another runtime; delivered by MSG_RING (pointer in user_data) or by the
// locked list + eventfd fallback.
struct remote_node {
  remote_node* next = nullptr;
  runtime* target = nullptr;
  // MSG_RING hands over through the kernel, which sanitizers cannot see; this makes the edge explicit.
  std::atomic<uint32_t> handoff{0};
  virtual void run(runtime& rt) = 0;
  // Called instead of run() when the target runtime is shutting down.
  virtual void discard() noexcept {}
  virtual ~remote_node() = default;
};

template <class F>
struct fn_node final : remote_node {
  F fn;
  explicit fn_node(F f) : fn(std::move(f)) {}
  void run(runtime&) override {
    fn();
    delete this;
  }
  void discard() noexcept override { delete this; }
};

inline thread_local constinit runtime* tls_runtime = nullptr;

}  // namespace detail

/// Event loop owning one io_uring; exactly one per thread, current() finds it.
class runtime {
 public:
  /// Creates the ring (flags probed, see options) and makes this the thread's current runtime.
  explicit runtime(const options& opt = options());
  /// Destroys unfinished spawned tasks, cancels and drains every in-flight operation, then closes the ring.
  ~runtime();
  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  /// The calling thread's runtime, or nullptr.
  static runtime* current() noexcept { return detail::tls_runtime; }

  /// Runs t to completion on this thread, driving I/O meanwhile; rethrows its exception.
  template <class T>
  T block_on(task<T> t);
  /// Runs tasks and I/O until stop() is called (from any thread).
  void run();
  /// Makes run() return; thread-safe.
  void stop();
  /// Runs fn on this runtime's thread; thread-safe, woken via MSG_RING or eventfd.
  template <class F>
  void post(F&& fn) {
    send_remote(new detail::fn_node<std::decay_t<F>>(std::forward<F>(fn)));
  }
  /// Starts t detached on this runtime; thread-safe (the frame is handed over with post).
  void spawn_detached(task<void> t);

  /// Registers fds as the fixed-file table; returns 0 or -errno.
  int register_files(std::span<const int> fds);
  /// Replaces fixed-file slots from off on; returns the count updated or -errno.
  int update_files(unsigned off, std::span<const int> fds);
  /// Registers iovecs as fixed buffers (replacing those from options); returns 0 or -errno.
  int register_buffers(std::span<const iovec> bufs);
  /// Fixed buffer i allocated from options().fixed_buffers().
  std::span<std::byte> fixed_buffer(unsigned i) noexcept;

  /// The underlying ring.
  class ring& io() noexcept {
    return ring_;
  }
  /// Kernel features (process-wide probe).
  const struct features& kernel() const noexcept { return *features_; }
  /// Options this runtime was created with.
  const options& config() const noexcept { return opt_; }
  /// Operations submitted and not yet completed (excluding the runtime's own wake-up read).
  std::size_t in_flight() const noexcept { return inflight_ + active_timers_; }

  // ---- used by awaiters; not needed by applications ----
  /// Queues a suspended coroutine to run in this loop turn (FIFO, no allocation).
  void schedule(detail::sched_node* n) noexcept {
    n->next = nullptr;
    if (tail_)
      tail_->next = n;
    else
      head_ = n;
    tail_ = n;
  }
  detail::op_state* acquire_op() {
    detail::op_state* s = free_ops_;
    if (!s) [[unlikely]]
      s = grow_pool();
    free_ops_ = s->next_free;
    return s;
  }
  void release_op(detail::op_state* s) noexcept {
    ++s->gen;
    s->timer = false;
    s->waiter = nullptr;
    s->orphaned = s->multishot = s->result_is_fd = false;
    s->provided = nullptr;
    s->backlog.clear();
    s->backlog_head = 0;
    s->next_free = free_ops_;
    free_ops_ = s;
  }
  /// Arms a userspace timer: s's waiter is scheduled once the steady clock passes deadline_ns.
  void add_timer(detail::op_state* s, uint64_t deadline_ns);
  /// Steady-clock nanoseconds, the timer heap's time base.
  static uint64_t now_ns() noexcept;
  void mark_submitted(detail::op_state* s) noexcept {
    s->in_flight = true;
    ++inflight_;
  }
  /// Gives an operation's state back while it may still be in flight: cancels it, and if the kernel
  /// may still touch caller memory (drain), waits here for its CQE without resuming any task.
  void abandon(detail::op_state* s, bool drain);
  /// Issues IORING_OP_ASYNC_CANCEL for s.
  void cancel_op(detail::op_state* s);
  /// yield()'s fast path: true when no other task is ready and no hand-off to another runtime
  /// waits to be submitted: continuing at once is then what the queue would do, without the round
  /// trip through it (suspend, push, pop, resume). When the ring shows all its work in user space
  /// and no timer is armed, the check is that nothing is due there either (ring::quiet: loads
  /// only, so a yielding loop keeps its variables in registers); otherwise one of this turn's
  /// budget() inline yields is used, so that I/O completions and timers are polled as often as
  /// through the queue.
  bool yield_inline() noexcept {
    if (head_ || remote_unsent_) return false;
    if (timers_.empty() && ring_.shows_work()) return ring_.quiet();
    if (!inline_yields_) return false;
    --inline_yields_;
    return true;
  }
  /// Removes n from the ready queue (frame destroyed while queued).
  void unschedule(detail::sched_node* n) noexcept;
  void adopt(detail::promise_base& p) noexcept;
  void send_remote(detail::remote_node* n);

 private:
  template <class Done>
  void run_until(Done&& done) {
    for (;;) {
      for (unsigned i = budget_; i; --i) {
        detail::sched_node* n = head_;
        if (!n) break;
        head_ = n->next;
        if (!head_) tail_ = nullptr;
        n->handle.resume();
        // A hand-off to another runtime must not wait behind the rest of the budget (up to
        // budget_ more tasks): that runtime may be idle, waiting for exactly this message.
        if (remote_unsent_) [[unlikely]] {
          remote_unsent_ = false;
          ring_.submit();
        }
      }
      if (done()) {
        // Work queued for others (MSG_RING wakes, sends) must not wait for our next turn.
        if (ring_.pending()) ring_.submit();
        return;
      }
      turn(head_ == nullptr);
    }
  }
  void turn(bool idle);
  void poll_idle();
  void fire_timers(uint64_t now) noexcept;
  void reap();
  void dispatch(const io_uring_cqe* cqe);
  void complete(detail::op_state* s, int32_t res, uint32_t flags);
  bool sched_node_wake(detail::op_state* s) noexcept;
  void orphan_result(detail::op_state* s, int32_t res, uint32_t flags) noexcept;
  detail::op_state* grow_pool();
  void arm_eventfd();
  void drain_remote();
  void push_locked(detail::remote_node* n);

  options opt_;
  const struct features* features_;
  class ring ring_;
  detail::sched_node* head_ = nullptr;
  detail::sched_node* tail_ = nullptr;
  unsigned budget_;
  unsigned inline_yields_ = budget_;  // yield_inline's allowance until the next turn()
  std::size_t inflight_ = 0;
  // Min-heap of (deadline, state, generation): one kernel wait timeout serves every sleeping task.
  struct timer_entry {
    uint64_t deadline;
    detail::op_state* st;
    uint32_t gen;
  };
  std::vector<timer_entry> timers_;
  std::size_t active_timers_ = 0;
  detail::op_state* free_ops_ = nullptr;
  std::vector<std::unique_ptr<detail::op_state[]>> op_chunks_;
  detail::promise_base* alive_ = nullptr;
  bool stopping_ = false;
  // Read by other threads posting to this runtime (send_remote), written by the destructor.
  std::atomic<bool> closing_{false};
  bool use_msg_ring_ = false;
  // A MSG_RING hand-off was prepared by the running task and is not submitted yet.
  bool remote_unsent_ = false;

  // Cross-thread inbox (eventfd fallback and same-thread posts).
  int efd_ = -1;
  uint64_t efd_value_ = 0;
  detail::op_state* efd_op_ = nullptr;
  std::mutex inbox_mu_;
  detail::remote_node* inbox_head_ = nullptr;
  detail::remote_node* inbox_tail_ = nullptr;
  std::atomic<bool> efd_signalled_{false};

  std::unique_ptr<std::byte, void (*)(void*)> fixed_mem_{nullptr, nullptr};
};

namespace detail {
template <class P>
promise_base& checked_promise(std::coroutine_handle<P> h) noexcept {
  static_assert(std::is_base_of_v<promise_base, P>, "ipcrt awaitables must be awaited from an ipcrt::task");
  return h.promise();
}
}  // namespace detail

template <class T>
T runtime::block_on(task<T> t) {
  auto h = t.release();
  struct guard {
    typename task<T>::handle_type h;
    ~guard() { h.destroy(); }
  } g{h};
  schedule(&h.promise().node);
  run_until([&] { return h.promise().done; });
  return h.promise().take();
}

/// Starts t on the current runtime now; co_await the handle to join, or detach() it.
template <class T>
join_handle<T> spawn(task<T> t) {
  auto h = t.release();
  runtime* rt = runtime::current();
  rt->adopt(h.promise());
  rt->schedule(&h.promise().node);
  return join_handle<T>(h);
}

/// Runs t on rt until it completes (rt must belong to the calling thread).
template <class T>
T sync_wait(runtime& rt, task<T> t) {
  return rt.block_on(std::move(t));
}

/// Runs t on the thread's current runtime, creating a default one for the call if there is none.
template <class T>
T sync_wait(task<T> t) {
  if (runtime* rt = runtime::current()) return rt->block_on(std::move(t));
  runtime rt;
  return rt.block_on(std::move(t));
}

/// Awaitable that moves the current task to the back of the ready queue — or, when no other task
/// is ready, lets it go on at once (runtime::yield_inline).
struct yield_awaiter {
  bool await_ready() const noexcept { return runtime::current()->yield_inline(); }
  template <class P>
  void await_suspend(std::coroutine_handle<P> h) const noexcept {
    runtime::current()->schedule(&detail::checked_promise(h).node);
  }
  void await_resume() const noexcept {}
};
/// co_await yield(): let every other ready task run once before continuing.
inline yield_awaiter yield() noexcept { return {}; }

}  // namespace ipcrt
