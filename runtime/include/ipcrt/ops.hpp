// One awaitable per io_uring operation, named after its io_uring_prep_* call. Each co_await yields the
// CQE result: >= 0 on success, -errno on failure (liburing's convention).
#pragma once

#include <liburing.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <span>

#include "ipcrt/buf_ring.hpp"
#include "ipcrt/runtime.hpp"

namespace ipcrt {

/// Index into the runtime's registered-file table; pass it wherever an fd is expected.
struct fixed_file {
  int index;
};

namespace detail {

// An fd or a fixed-file index; ops set IOSQE_FIXED_FILE from it.
struct fd_ref {
  int fd;
  bool fixed;
  fd_ref(int f) noexcept : fd(f), fixed(false) {}
  fd_ref(fixed_file f) noexcept : fd(f.index), fixed(true) {}
  uint8_t sqe_flags() const noexcept { return fixed ? IOSQE_FIXED_FILE : 0; }
};

template <class Rep, class Period>
__kernel_timespec to_timespec(std::chrono::duration<Rep, Period> d) noexcept {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  if (ns < 0) ns = 0;
  return __kernel_timespec{static_cast<long long>(ns / 1000000000), static_cast<long long>(ns % 1000000000)};
}

enum op_traits : uint8_t {
  kTouchesMemory = 1,  // the kernel reads/writes caller memory: abandoning must wait for the CQE
  kReturnsFd = 2,      // an orphaned success result is an fd to close
};

/// The awaitable behind every single-shot op. Prep fills the SQE; the op_state comes from the runtime pool.
template <class Prep>
class [[nodiscard]] op {
 public:
  using prep_type = Prep;
  op(Prep prep, uint8_t traits) noexcept : prep_(prep), traits_(traits) {}
  op(op&& o) noexcept : prep_(o.prep_), traits_(o.traits_), has_timeout_(o.has_timeout_), ts_(o.ts_) {}
  op& operator=(op&&) = delete;
  ~op() {
    if (st_) [[unlikely]] {
      if (root_ && root_->current_op == st_) root_->current_op = nullptr;
      runtime::current()->abandon(st_, traits_ & kTouchesMemory);
    }
  }

  /// Fails the operation with -ECANCELED unless it completes within d (IORING_OP_LINK_TIMEOUT).
  template <class Rep, class Period>
  op&& timeout(std::chrono::duration<Rep, Period> d) && noexcept {
    has_timeout_ = true;
    ts_ = to_timespec(d);
    return std::move(*this);
  }

  bool await_ready() const noexcept { return false; }
  template <class P>
  bool await_suspend(std::coroutine_handle<P> h) {
    promise_base& p = checked_promise(h);
    promise_base* root = p.root;
    if (root->cancelled) [[unlikely]] {
      res_ = -ECANCELED;
      return false;
    }
    runtime* rt = runtime::current();
    ring& r = rt->io();
    st_ = rt->acquire_op();
    st_->waiter = &p.node;
    st_->result_is_fd = traits_ & kReturnsFd;
    if (has_timeout_) r.reserve(2);
    io_uring_sqe* sqe = r.get_sqe();
    prep_(sqe, *st_);
    io_uring_sqe_set_data(sqe, st_);
    if (has_timeout_) {
      sqe->flags |= IOSQE_IO_LINK;
      st_->ts = ts_;
      io_uring_sqe* t = r.get_sqe();
      io_uring_prep_link_timeout(t, &st_->ts, 0);
      io_uring_sqe_set_data64(t, 0);
    }
    rt->mark_submitted(st_);
    root->current_op = st_;
    root_ = root;
    return true;
  }
  int await_resume() noexcept {
    if (st_) {
      res_ = st_->res;
      root_->current_op = nullptr;
      runtime::current()->release_op(st_);
      st_ = nullptr;
    }
    return res_;
  }

 protected:
  Prep prep_;
  op_state* st_ = nullptr;
  promise_base* root_ = nullptr;
  int res_ = 0;
  uint8_t traits_;
  bool has_timeout_ = false;
  __kernel_timespec ts_{};
};

template <class Prep>
op<Prep> make_op(Prep p, uint8_t traits) noexcept {
  return op<Prep>(p, traits);
}

}  // namespace detail

/// IORING_OP_NOP: a full round trip through the ring; yields 0.
inline auto async_nop() {
  return detail::make_op([](io_uring_sqe* s, detail::op_state&) { io_uring_prep_nop(s); }, 0);
}

/// io_uring_prep_read: up to len bytes at offset off (-1 = file position); yields bytes read.
inline auto async_read(detail::fd_ref fd, void* buf, unsigned len, uint64_t off = 0) {
  return detail::make_op(
      [=](io_uring_sqe* s, detail::op_state&) {
        io_uring_prep_read(s, fd.fd, buf, len, off);
        s->flags |= fd.sqe_flags();
      },
      detail::kTouchesMemory);
}

/// io_uring_prep_write: len bytes at offset off (-1 = file position); yields bytes written.
inline auto async_write(detail::fd_ref fd, const void* buf, unsigned len, uint64_t off = 0) {
  return detail::make_op(
      [=](io_uring_sqe* s, detail::op_state&) {
        io_uring_prep_write(s, fd.fd, buf, len, off);
        s->flags |= fd.sqe_flags();
      },
      detail::kTouchesMemory);
}

/// io_uring_prep_read_fixed: buf must lie inside registered buffer buf_index.
inline auto async_read_fixed(detail::fd_ref fd, void* buf, unsigned len, uint64_t off, int buf_index) {
  return detail::make_op(
      [=](io_uring_sqe* s, detail::op_state&) {
        io_uring_prep_read_fixed(s, fd.fd, buf, len, off, buf_index);
        s->flags |= fd.sqe_flags();
      },
      detail::kTouchesMemory);
}

/// io_uring_prep_write_fixed: buf must lie inside registered buffer buf_index.
inline auto async_write_fixed(detail::fd_ref fd, const void* buf, unsigned len, uint64_t off, int buf_index) {
  return detail::make_op(
      [=](io_uring_sqe* s, detail::op_state&) {
        io_uring_prep_write_fixed(s, fd.fd, buf, len, off, buf_index);
        s->flags |= fd.sqe_flags();
      },
      detail::kTouchesMemory);
}

/// io_uring_prep_openat: yields the new fd.
inline auto async_openat(int dfd, const char* path, int flags, mode_t mode = 0) {
  return detail::make_op(
      [=](io_uring_sqe* s, detail::op_state&) { io_uring_prep_openat(s, dfd, path, flags, mode); },
      detail::kTouchesMemory | detail::kReturnsFd);
}

/// io_uring_prep_close (io_uring_prep_close_direct for a fixed file).
inline auto async_close(detail::fd_ref fd) {
  return detail::make_op(
      [=](io_uring_sqe* s, detail::op_state&) {
        if (fd.fixed)
          io_uring_prep_close_direct(s, static_cast<unsigned>(fd.fd));
        else
          io_uring_prep_close(s, fd.fd);
      },
      0);
}

/// io_uring_prep_fsync (flags: IORING_FSYNC_DATASYNC).
inline auto async_fsync(detail::fd_ref fd, unsigned flags = 0) {
  return detail::make_op(
      [=](io_uring_sqe* s, detail::op_state&) {
        io_uring_prep_fsync(s, fd.fd, flags);
        s->flags |= fd.sqe_flags();
      },
      0);
}

/// io_uring_prep_accept: yields the connected fd; addr/addrlen may be null.
inline auto async_accept(detail::fd_ref fd, sockaddr* addr = nullptr, socklen_t* addrlen = nullptr,
                         int flags = 0) {
  return detail::make_op(
      [=](io_uring_sqe* s, detail::op_state&) {
        io_uring_prep_accept(s, fd.fd, addr, addrlen, flags);
        s->flags |= fd.sqe_flags();
      },
      (addr ? detail::kTouchesMemory : 0) | detail::kReturnsFd);
}

/// io_uring_prep_connect: yields 0.
inline auto async_connect(detail::fd_ref fd, const sockaddr* addr, socklen_t addrlen) {
  return detail::make_op(
      [=](io_uring_sqe* s, detail::op_state&) {
        io_uring_prep_connect(s, fd.fd, addr, addrlen);
        s->flags |= fd.sqe_flags();
      },
      detail::kTouchesMemory);
}

/// io_uring_prep_recv: yields bytes received, 0 at end of stream.
inline auto async_recv(detail::fd_ref fd, void* buf, std::size_t len, int flags = 0) {
  return detail::make_op(
      [=](io_uring_sqe* s, detail::op_state&) {
        io_uring_prep_recv(s, fd.fd, buf, len, flags);
        s->flags |= fd.sqe_flags();
      },
      detail::kTouchesMemory);
}

/// io_uring_prep_send: yields bytes sent.
inline auto async_send(detail::fd_ref fd, const void* buf, std::size_t len, int flags = MSG_NOSIGNAL) {
  return detail::make_op(
      [=](io_uring_sqe* s, detail::op_state&) {
        io_uring_prep_send(s, fd.fd, buf, len, flags);
        s->flags |= fd.sqe_flags();
      },
      detail::kTouchesMemory);
}

/// io_uring_prep_timeout: yields -ETIME when the time passes (see sleep_for for the friendly form).
template <class Rep, class Period>
auto async_timeout(std::chrono::duration<Rep, Period> d) {
  const __kernel_timespec ts = detail::to_timespec(d);
  return detail::make_op(
      [ts](io_uring_sqe* s, detail::op_state& st) {
        st.ts = ts;
        io_uring_prep_timeout(s, &st.ts, 0, 0);
      },
      0);
}

namespace detail {

// Shared machinery of multishot streams: one SQE, many CQEs queued in the op_state's backlog.
class multishot_base {
 public:
  multishot_base(const multishot_base&) = delete;
  multishot_base& operator=(const multishot_base&) = delete;
  multishot_base(multishot_base&& o) noexcept : st_(std::exchange(o.st_, nullptr)) {}
  ~multishot_base() {
    if (st_) runtime::current()->abandon(st_, false);
  }
  /// True while the kernel may still post results.
  bool active() const noexcept { return st_ && st_->in_flight; }
  /// Cancels the stream; pending next() calls see the final CQE (usually -ECANCELED).
  void cancel() {
    if (st_ && st_->in_flight) runtime::current()->cancel_op(st_);
  }

  /// Takes an op_state and queues the single SQE that prep fills.
  template <class Prep>
  multishot_base(Prep prep, bool returns_fd, buf_ring* br) {
    runtime* rt = runtime::current();
    st_ = rt->acquire_op();
    st_->multishot = true;
    st_->result_is_fd = returns_fd;
    st_->provided = br;
    io_uring_sqe* sqe = rt->io().get_sqe();
    prep(sqe);
    io_uring_sqe_set_data(sqe, st_);
    rt->mark_submitted(st_);
  }

 protected:
  struct next_base {
    multishot_base* self;
    promise_base* root = nullptr;
    bool await_ready() const noexcept { return self->st_->has_backlog() || !self->st_->in_flight; }
    template <class P>
    void await_suspend(std::coroutine_handle<P> h) {
      promise_base& p = checked_promise(h);
      root = p.root;
      self->st_->waiter = &p.node;
      root->current_op = self->st_;
      if (root->cancelled) runtime::current()->cancel_op(self->st_);
    }
    std::pair<int32_t, uint32_t> take() noexcept {
      if (root) {
        root->current_op = nullptr;
        self->st_->waiter = nullptr;
      }
      op_state* st = self->st_;
      if (st->has_backlog()) return st->backlog[st->backlog_head++];
      return {st->res, 0};
    }
  };

  op_state* st_ = nullptr;
};

}  // namespace detail

/// Connections from one multishot accept SQE (io_uring_prep_multishot_accept).
class [[nodiscard]] accept_stream : public detail::multishot_base {
 public:
  using multishot_base::multishot_base;
  struct awaiter : next_base {
    int await_resume() noexcept { return take().first; }
  };
  /// Yields the next accepted fd, or -errno once the stream has ended (-ENODATA if it ended cleanly).
  awaiter next() noexcept { return awaiter{{this}}; }
};

/// Starts a multishot accept on a listening socket; connections queue up until next() takes them.
inline accept_stream async_accept_multishot(detail::fd_ref fd, int flags = 0) {
  return accept_stream(
      [=](io_uring_sqe* s) {
        io_uring_prep_multishot_accept(s, fd.fd, nullptr, nullptr, flags);
        s->flags |= fd.sqe_flags();
      },
      true, nullptr);
}

/// One multishot recv completion: res > 0 bytes in buf, 0 end of stream, < 0 -errno.
struct recv_result {
  int res;
  provided_buffer buf;
};

/// Data from one multishot recv SQE, each chunk in a buffer picked from a buf_ring.
class [[nodiscard]] recv_stream : public detail::multishot_base {
 public:
  recv_stream(detail::fd_ref fd, buf_ring& br, int flags)
      : multishot_base(
            [&](io_uring_sqe* s) {
              io_uring_prep_recv_multishot(s, fd.fd, nullptr, 0, flags);
              s->flags |= fd.sqe_flags() | IOSQE_BUFFER_SELECT;
              s->buf_group = br.group();
            },
            false, &br),
        br_(&br) {}
  struct awaiter : next_base {
    buf_ring* br;
    recv_result await_resume() noexcept {
      auto [res, flags] = take();
      if (res > 0 && (flags & IORING_CQE_F_BUFFER))
        return {res, provided_buffer(br, static_cast<uint16_t>(flags >> IORING_CQE_BUFFER_SHIFT),
                                     static_cast<std::size_t>(res))};
      return {res, {}};
    }
  };
  /// Yields the next chunk; after the final CQE yields its result again (0 EOF, -errno, -ENODATA).
  awaiter next() noexcept { return awaiter{{this}, br_}; }

 private:
  buf_ring* br_;
};

/// Starts a multishot recv (io_uring_prep_recv_multishot) drawing buffers from br.
inline recv_stream async_recv_multishot(detail::fd_ref fd, buf_ring& br, int flags = 0) {
  return recv_stream(fd, br, flags);
}

}  // namespace ipcrt
