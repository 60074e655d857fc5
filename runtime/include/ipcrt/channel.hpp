// Bounded channels between tasks. channel<T> is for tasks of one runtime: no atomics, no syscalls.
// mt_channel<T> may be shared by runtimes on different threads: a mutex guards it and a waiter on
// another runtime is woken through that runtime's inbox (IORING_OP_MSG_RING, eventfd fallback).
#pragma once

#include <coroutine>
#include <cstddef>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "ipcrt/runtime.hpp"

namespace ipcrt {

namespace detail {

struct no_lock {
  void lock() noexcept {}
  void unlock() noexcept {}
};

struct wake_node final : remote_node {
  sched_node* target = nullptr;
  void run(runtime& rt) override { rt.schedule(target); }
};

}  // namespace detail

/// Bounded FIFO channel; capacity 0 is a rendezvous (send waits for a receiver).
template <class T, bool Shared>
class basic_channel {
 public:
  class recv_awaiter;

 private:
  // Fields are filled only when a task actually parks, so the no-wait path stores nothing here.
  struct waiter {
    waiter* prev;
    waiter* next;
    detail::sched_node* node;
    runtime* rt;
    T* value;            // sender: the value on offer
    recv_awaiter* slot;  // receiver: where to put it
    bool ok;
    bool queued;
    [[no_unique_address]] std::conditional_t<Shared, detail::wake_node, std::monostate> remote;
  };
  struct wait_list {
    waiter* head = nullptr;
    waiter* tail = nullptr;
    void push_back(waiter* w) noexcept {
      w->next = nullptr;
      w->prev = tail;
      (tail ? tail->next : head) = w;
      tail = w;
      w->queued = true;
    }
    waiter* pop_front() noexcept {
      waiter* w = head;
      if (w) unlink(w);
      return w;
    }
    void unlink(waiter* w) noexcept {
      (w->prev ? w->prev->next : head) = w->next;
      (w->next ? w->next->prev : tail) = w->prev;
      w->queued = false;
    }
  };
  using lock_type = std::conditional_t<Shared, std::mutex, detail::no_lock>;

 public:
  /// A channel holding up to capacity values (0 = rendezvous).
  explicit basic_channel(std::size_t capacity) : cap_(capacity), buf_(capacity ? capacity : 1) {}
  basic_channel(const basic_channel&) = delete;
  basic_channel& operator=(const basic_channel&) = delete;

  class [[nodiscard]] send_awaiter {
   public:
    send_awaiter(basic_channel* ch, T v) : ch_(ch), value_(std::move(v)) {}
    send_awaiter(const send_awaiter&) = delete;
    ~send_awaiter() { ch_->leave(w_, suspended_); }
    bool await_ready() {
      ch_->lock_.lock();
      if (ch_->closed_) {
        w_.ok = false;
      } else if (waiter* r = ch_->recvq_.pop_front()) {
        r->slot->set(std::move(value_));
        r->ok = true;
        ch_->wake(r);
        w_.ok = true;
      } else if (ch_->count_ < ch_->cap_) {
        ch_->push(std::move(value_));
        w_.ok = true;
      } else {
        return false;  // keep the lock: await_suspend enqueues under it
      }
      ch_->lock_.unlock();
      return true;
    }
    template <class P>
    void await_suspend(std::coroutine_handle<P> h) {
      w_.node = &detail::checked_promise(h).node;
      w_.rt = runtime::current();
      w_.value = &value_;
      w_.slot = nullptr;
      suspended_ = true;
      ch_->sendq_.push_back(&w_);
      ch_->lock_.unlock();
    }
    /// true if the value was delivered, false if the channel was closed.
    bool await_resume() const noexcept { return w_.ok; }

   private:
    basic_channel* ch_;
    T value_;
    waiter w_;
    bool suspended_ = false;
  };

  class [[nodiscard]] recv_awaiter {
   public:
    explicit recv_awaiter(basic_channel* ch) noexcept : ch_(ch) {}
    recv_awaiter(const recv_awaiter&) = delete;
    ~recv_awaiter() {
      ch_->leave(w_, suspended_);
      if (has_) value_.~T();
    }
    bool await_ready() {
      ch_->lock_.lock();
      if (ch_->count_) {
        set(ch_->pop());
        if (waiter* s = ch_->sendq_.pop_front()) {
          ch_->push(std::move(*s->value));
          s->ok = true;
          ch_->wake(s);
        }
      } else if (waiter* s = ch_->sendq_.pop_front()) {
        set(std::move(*s->value));
        s->ok = true;
        ch_->wake(s);
      } else if (!ch_->closed_) {
        return false;
      }
      ch_->lock_.unlock();
      return true;
    }
    template <class P>
    void await_suspend(std::coroutine_handle<P> h) {
      w_.node = &detail::checked_promise(h).node;
      w_.rt = runtime::current();
      w_.slot = this;
      w_.value = nullptr;
      suspended_ = true;
      ch_->recvq_.push_back(&w_);
      ch_->lock_.unlock();
    }
    /// The next value, or nullopt once the channel is closed and drained.
    std::optional<T> await_resume() noexcept {
      if (has_) return std::optional<T>(std::in_place, std::move(value_));
      return std::nullopt;
    }
    void set(T&& v) {
      ::new (static_cast<void*>(&value_)) T(std::move(v));
      has_ = true;
    }

   private:
    basic_channel* ch_;
    // Not a std::optional: copying one out as a 16-byte block right after its two narrower stores
    // defeats store-to-load forwarding and cost ~15 ns per message.
    union {
      T value_;
    };
    bool has_ = false;
    waiter w_;
    bool suspended_ = false;
  };

  /// co_await ch.send(v): waits while the channel is full; yields false if it is closed.
  send_awaiter send(T v) { return send_awaiter(this, std::move(v)); }
  /// co_await ch.recv(): waits while the channel is empty; yields nullopt once closed and drained.
  recv_awaiter recv() noexcept { return recv_awaiter(this); }

  /// Sends without waiting; false if full or closed.
  bool try_send(T& v) {
    std::lock_guard g(lock_);
    if (closed_) return false;
    if (waiter* r = recvq_.pop_front()) {
      r->slot->set(std::move(v));
      r->ok = true;
      wake(r);
      return true;
    }
    if (count_ < cap_) {
      push(std::move(v));
      return true;
    }
    return false;
  }
  /// Receives without waiting; nullopt if empty.
  std::optional<T> try_recv() {
    std::lock_guard g(lock_);
    std::optional<T> out;
    if (count_) {
      out.emplace(pop());
      if (waiter* s = sendq_.pop_front()) {
        push(std::move(*s->value));
        s->ok = true;
        wake(s);
      }
    } else if (waiter* s = sendq_.pop_front()) {
      out.emplace(std::move(*s->value));
      s->ok = true;
      wake(s);
    }
    return out;
  }
  /// Closes the channel: waiting receivers get nullopt, waiting and later senders get false; buffered
  /// values can still be received.
  void close() {
    std::lock_guard g(lock_);
    closed_ = true;
    while (waiter* r = recvq_.pop_front()) {
      r->ok = false;
      wake(r);
    }
    while (waiter* s = sendq_.pop_front()) {
      s->ok = false;
      wake(s);
    }
  }
  /// True after close().
  bool closed() const {
    std::lock_guard g(lock_);
    return closed_;
  }
  /// Values currently buffered.
  std::size_t size() const {
    std::lock_guard g(lock_);
    return count_;
  }
  /// The capacity given at construction.
  std::size_t capacity() const noexcept { return cap_; }

 private:
  void push(T&& v) {
    std::size_t i = head_ + count_;
    if (i >= cap_) i -= cap_;
    buf_[i].emplace(std::move(v));
    ++count_;
  }
  T pop() {
    T v = std::move(*buf_[head_]);
    buf_[head_].reset();
    if (++head_ == cap_) head_ = 0;
    --count_;
    return v;
  }
  void wake(waiter* w) {
    if constexpr (Shared) {
      if (w->rt != runtime::current()) {
        w->remote.target = w->node;
        w->rt->send_remote(&w->remote);
        return;
      }
    }
    w->rt->schedule(w->node);
  }
  // A frame destroyed while waiting must not stay linked into the channel.
  void leave(waiter& w, bool suspended) {
    if (!suspended) return;
    std::lock_guard g(lock_);
    if (w.queued) (w.slot ? recvq_ : sendq_).unlink(&w);
  }

  std::size_t cap_;
  std::vector<std::optional<T>> buf_;
  std::size_t head_ = 0;
  std::size_t count_ = 0;
  wait_list sendq_;
  wait_list recvq_;
  bool closed_ = false;
  mutable lock_type lock_;
};

/// Channel for tasks on one runtime (no atomics, no syscalls).
template <class T>
using channel = basic_channel<T, false>;
/// Channel shared between runtimes on different threads.
template <class T>
using mt_channel = basic_channel<T, true>;

}  // namespace ipcrt
