// Lazy coroutine task<T>, the join_handle returned by spawn, and the scheduling node every frame carries.
#pragma once

#include <coroutine>
#include <cstdio>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "ipcrt/frame_alloc.hpp"

namespace ipcrt {

class runtime;

namespace detail {

struct op_state;

// Intrusive ready-queue link: lives in the promise, so scheduling never allocates.
struct sched_node {
  sched_node* next = nullptr;
  std::coroutine_handle<> handle;
};

struct promise_base {
  sched_node node;
  std::coroutine_handle<> continuation;
  // Cancellation is tracked per spawned root; nested tasks point at it.
  promise_base* root = this;
  op_state* current_op = nullptr;
  promise_base** alive_head = nullptr;  // spawned roots: the runtime's list of unfinished tasks
  promise_base* alive_prev = nullptr;
  promise_base* alive_next = nullptr;
  std::exception_ptr exception;
  bool cancelled = false;
  bool detached = false;
  bool done = false;

  static void* operator new(std::size_t n) { return frame_allocate(n); }
  static void operator delete(void* p, std::size_t n) noexcept { frame_deallocate(p, n); }

  promise_base() = default;
  promise_base(const promise_base&) = delete;
  ~promise_base() {
    // Only an unfinished frame can still be in a ready queue; checking that instead of keeping a
    // "queued" flag saves two stores per switch.
    if (!done) [[unlikely]]
      on_destroy();
    if (alive_head) {
      (alive_prev ? alive_prev->alive_next : *alive_head) = alive_next;
      if (alive_next) alive_next->alive_prev = alive_prev;
    }
  }
  void on_destroy() noexcept;  // defined in runtime.cpp: leave the ready queue

  std::suspend_always initial_suspend() noexcept { return {}; }
  void unhandled_exception() noexcept { exception = std::current_exception(); }

  struct final_awaiter {
    bool await_ready() noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
      promise_base& p = h.promise();
      p.done = true;
      if (p.detached) {
        if (p.exception) std::fputs("ipcrt: detached task ended with an exception\n", stderr);
        h.destroy();
        return std::noop_coroutine();
      }
      if (p.continuation) return p.continuation;
      return std::noop_coroutine();
    }
    void await_resume() noexcept {}
  };
  final_awaiter final_suspend() noexcept { return {}; }
};

template <class T>
struct promise final : promise_base {
  std::optional<T> value;
  auto get_return_object() noexcept;
  template <class U>
  void return_value(U&& v) {
    value.emplace(std::forward<U>(v));
  }
  T take() {
    if (exception) std::rethrow_exception(exception);
    return std::move(*value);
  }
};

template <>
struct promise<void> final : promise_base {
  auto get_return_object() noexcept;
  void return_void() noexcept {}
  void take() {
    if (exception) std::rethrow_exception(exception);
  }
};

// Root of the promise that is awaiting; foreign coroutine types simply have no root.
template <class P>
promise_base* root_of(std::coroutine_handle<P> h) noexcept {
  if constexpr (std::is_base_of_v<promise_base, P>)
    return h.promise().root;
  else
    return nullptr;
}

void request_cancel(promise_base& root) noexcept;  // runtime.cpp

}  // namespace detail

/// A lazy coroutine: nothing runs until it is co_awaited, spawned or passed to sync_wait.
template <class T = void>
class [[nodiscard]] task {
 public:
  using promise_type = detail::promise<T>;
  using handle_type = std::coroutine_handle<promise_type>;

  task() noexcept = default;
  explicit task(handle_type h) noexcept : h_(h) {}
  task(task&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  task& operator=(task&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, {});
    }
    return *this;
  }
  ~task() { reset(); }

  /// Hands the frame over (used by spawn); the caller becomes responsible for destroying it.
  handle_type release() noexcept { return std::exchange(h_, {}); }
  /// True when the task holds a coroutine frame.
  explicit operator bool() const noexcept { return static_cast<bool>(h_); }

  struct awaiter {
    handle_type h;
    bool await_ready() const noexcept { return !h; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> parent) noexcept {
      h.promise().continuation = parent;
      if (auto* r = detail::root_of(parent)) h.promise().root = r;
      return h;  // symmetric transfer: the child starts inline
    }
    T await_resume() { return h.promise().take(); }
  };
  /// Runs the task inline and yields its result (rethrows its exception).
  awaiter operator co_await() && noexcept { return awaiter{h_}; }

 private:
  void reset() noexcept {
    if (h_) std::exchange(h_, {}).destroy();
  }
  handle_type h_;
};

namespace detail {
template <class T>
inline auto promise<T>::get_return_object() noexcept {
  auto h = std::coroutine_handle<promise<T>>::from_promise(*this);
  node.handle = h;
  return task<T>(h);
}
inline auto promise<void>::get_return_object() noexcept {
  auto h = std::coroutine_handle<promise<void>>::from_promise(*this);
  node.handle = h;
  return task<void>(h);
}
}  // namespace detail

/// Handle to a spawned task: co_await it to join, drop or detach() it to let the task run on alone.
template <class T = void>
class [[nodiscard]] join_handle {
 public:
  using handle_type = std::coroutine_handle<detail::promise<T>>;

  join_handle() noexcept = default;
  explicit join_handle(handle_type h) noexcept : h_(h) {}
  join_handle(join_handle&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  join_handle& operator=(join_handle&& o) noexcept {
    if (this != &o) {
      detach();
      h_ = std::exchange(o.h_, {});
    }
    return *this;
  }
  ~join_handle() { detach(); }

  /// Lets the task finish on its own; its frame is freed when it completes.
  void detach() noexcept {
    if (!h_) return;
    if (h_.promise().done)
      h_.destroy();
    else
      h_.promise().detached = true;
    h_ = {};
  }
  /// True once the task has run to completion.
  bool done() const noexcept { return h_ && h_.promise().done; }
  /// Asks the task to stop: its in-flight operation is cancelled and later ones fail with -ECANCELED.
  void cancel() noexcept {
    if (h_ && !h_.promise().done) detail::request_cancel(h_.promise());
  }

  struct awaiter {
    handle_type h;
    bool await_ready() const noexcept { return h.promise().done; }
    void await_suspend(std::coroutine_handle<> waiter) noexcept { h.promise().continuation = waiter; }
    T await_resume() { return h.promise().take(); }
  };
  /// Waits for the task and yields its result (rethrows its exception).
  awaiter operator co_await() noexcept { return awaiter{h_}; }

 private:
  handle_type h_;
};

}  // namespace ipcrt
