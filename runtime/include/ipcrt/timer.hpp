// Timers: sleep_for on IORING_OP_TIMEOUT, and deadlines on any op via a linked timeout.
#pragma once

#include <chrono>

#include "ipcrt/ops.hpp"

namespace ipcrt {

namespace detail {

// Sleeps use the runtime's userspace timer heap: arming costs a heap push instead of a kernel timer,
// and all sleepers share one wait timeout (the kernel's IORING_OP_TIMEOUT stays available as
// async_timeout).
class [[nodiscard]] sleep_awaiter {
 public:
  explicit sleep_awaiter(uint64_t deadline_ns) noexcept : deadline_(deadline_ns) {}
  sleep_awaiter(const sleep_awaiter&) = delete;
  ~sleep_awaiter() {
    if (st_) [[unlikely]] {
      if (root_->current_op == st_) root_->current_op = nullptr;
      runtime::current()->abandon(st_, false);
    }
  }
  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    promise_base& p = checked_promise(h);
    root_ = p.root;
    if (root_->cancelled) [[unlikely]] {
      res_ = -ECANCELED;
      return false;
    }
    runtime* rt = runtime::current();
    st_ = rt->acquire_op();
    st_->waiter = &p.node;
    rt->add_timer(st_, deadline_);
    root_->current_op = st_;
    return true;
  }
  /// 0 when the time has passed, -ECANCELED if the task was cancelled.
  int await_resume() noexcept {
    if (st_) {
      res_ = st_->res;
      root_->current_op = nullptr;
      runtime::current()->release_op(st_);
      st_ = nullptr;
    }
    return res_;
  }

 private:
  uint64_t deadline_;
  op_state* st_ = nullptr;
  promise_base* root_ = nullptr;
  int res_ = 0;
};

}  // namespace detail

/// Suspends the task for d (a zero or negative d still lets other ready tasks run once); yields 0,
/// or -ECANCELED if the task was cancelled.
template <class Rep, class Period>
detail::sleep_awaiter sleep_for(std::chrono::duration<Rep, Period> d) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  return detail::sleep_awaiter(runtime::now_ns() + static_cast<uint64_t>(ns > 0 ? ns : 0));
}

/// Sleeps until the steady clock reaches t.
template <class Duration>
detail::sleep_awaiter sleep_until(std::chrono::time_point<std::chrono::steady_clock, Duration> t) {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  return detail::sleep_awaiter(ns > 0 ? static_cast<uint64_t>(ns) : 0);
}

/// Gives op a deadline: it yields -ECANCELED if not complete after d. Same as op.timeout(d).
template <class Op, class Rep, class Period>
decltype(auto) with_timeout(Op&& o, std::chrono::duration<Rep, Period> d) {
  return std::move(o).timeout(d);
}

}  // namespace ipcrt
