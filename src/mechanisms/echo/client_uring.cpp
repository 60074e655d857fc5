// The echo client's io_uring loop (client=uring): one multishot recv per connection into a ring of
// provided buffers (ipcrt::buf_ring), each message sent with one SQE, and one io_uring_enter per
// loop turn that submits the turn's sends and waits for the next completions. Against the epoll
// loop it makes no syscall per message, and the server's sends wake it through io_uring's poll
// callback and task work rather than through the client's epoll instance. Over loopback the
// sender runs that path, so the choice of client changes what the server pays per echo (uring vs
// epoll server CPU 0.88-0.94 with this client, 0.96-0.99 with the epoll one, measured with
// echo/ab: docs/echo.md).
#include "mechanisms/echo/client.hpp"

#if __has_include(<ipcrt/ipcrt.hpp>)
#include <liburing.h>
#include <sys/socket.h>
#include <ipcrt/buf_ring.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>
#include <system_error>

#include "core/base/clock.hpp"
#include "mechanisms/echo/common.hpp"

namespace ipclab::echo {
namespace {

constexpr uint16_t kClientGroup = 0;
enum ClientOp : uint64_t { kClientRecv, kClientSend, kClientCancel };
uint64_t client_ud(size_t idx, ClientOp op) { return uint64_t(idx) << 2 | op; }

class Loop {
 public:
  explicit Loop(Client& cl) : cl_(cl) {
    const unsigned n = unsigned(cl.cs.size());
    io_uring_params ip{};
    // A recv and a send per connection can be in flight, and each turn re-arms or sends at most
    // that many: the CQ never needs more than 2n entries, the SQ never more than n + a few.
    ip.cq_entries = std::max(256u, std::bit_ceil(4 * n));
    const unsigned sq = std::max(64u, std::bit_ceil(2 * n));
    int r = -EINVAL;
    for (unsigned extra : {IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, 0u}) {
      ip.flags = IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL | extra;
      if ((r = io_uring_queue_init_params(sq, &ring_, &ip)) == 0) break;
    }
    if (r != 0) {
      cl.error = fmt::format("io_uring_queue_init_params: {}", strerror(-r));
      return;
    }
    ok_ = true;
    // Buffers as the server sizes them; a connection whose recv finds none waits for this turn's
    // to come back (re-armed after publish()).
    const BufferPlan plan = provided_buffers(cl.size, n);
    try {
      br_.emplace(&ring_, kClientGroup, plan.entries, plan.buf_size);
    } catch (const std::system_error& e) {
      cl.error = fmt::format("provided buffer ring: {}", e.what());
    }
  }
  // Cancels what is still in flight and waits for it (at most a second), so that no recv can be
  // filling a buffer when the buffers are unmapped.
  ~Loop() {
    if (ok_ && inflight_) {
      io_uring_sqe* s = sqe();
      io_uring_prep_cancel64(s, 0, IORING_ASYNC_CANCEL_ANY);
      io_uring_sqe_set_data64(s, client_ud(0, kClientCancel));
      const uint64_t give_up = now_ns() + 1'000'000'000;
      while (inflight_ && now_ns() < give_up) {
        __kernel_timespec ts{.tv_sec = 0, .tv_nsec = 10'000'000};
        io_uring_cqe* cqe = nullptr;
        io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&ring_, head, cqe) {
          ++seen;
          settle(*cqe);
        }
        io_uring_cq_advance(&ring_, seen);
      }
    }
    br_.reset();
    if (ok_) io_uring_queue_exit(&ring_);
  }

  void run() {
    if (!cl_.error.empty()) return;
    for (size_t i = 0; i < cl_.cs.size(); ++i) arm_recv(i);
    cl_.begin();
    std::vector<size_t> rearm;
    while (cl_.tick()) {
      for (size_t i : cl_.kick) send(i);
      cl_.kick.clear();
      // Submit this turn's SQEs and wait for a completion, at most 20 ms (tick() must run).
      __kernel_timespec ts{.tv_sec = 0, .tv_nsec = 20'000'000};
      io_uring_cqe* cqe = nullptr;
      const int r = io_uring_submit_and_wait_timeout(&ring_, &cqe, 1, &ts, nullptr);
      if (r < 0 && r != -ETIME && r != -EINTR && r != -EBUSY) {
        cl_.error = fmt::format("io_uring_enter: {}", strerror(-r));
        break;
      }
      unsigned head, seen = 0;
      io_uring_for_each_cqe(&ring_, head, cqe) {
        ++seen;
        if (cl_.error.empty())
          complete(*cqe, rearm);
        else
          settle(*cqe);
      }
      io_uring_cq_advance(&ring_, seen);
      br_->publish();
      for (size_t i : rearm) arm_recv(i);  // after publish: the ring has buffers again
      rearm.clear();
    }
  }

 private:
  io_uring_sqe* sqe() {
    io_uring_sqe* s = io_uring_get_sqe(&ring_);
    while (!s) {  // cannot happen with the sizes above, but never drop an operation
      io_uring_submit(&ring_);
      s = io_uring_get_sqe(&ring_);
    }
    return s;
  }

  void arm_recv(size_t i) {
    io_uring_sqe* s = sqe();
    io_uring_prep_recv_multishot(s, cl_.cs[i].fd, nullptr, 0, 0);
    s->flags |= IOSQE_BUFFER_SELECT;
    s->buf_group = kClientGroup;
    io_uring_sqe_set_data64(s, client_ud(i, kClientRecv));
    ++inflight_;
  }

  // MSG_WAITALL: the kernel completes a short send itself; a short result is still handled.
  void send(size_t i) {
    Conn& c = cl_.cs[i];
    io_uring_sqe* s = sqe();
    io_uring_prep_send(s, c.fd, c.msg + c.sent, cl_.size - c.sent, MSG_NOSIGNAL | MSG_WAITALL);
    io_uring_sqe_set_data64(s, client_ud(i, kClientSend));
    ++inflight_;
  }

  // Counts an operation as finished when its last CQE arrives.
  void settle(const io_uring_cqe& e) {
    const auto op = ClientOp(e.user_data & 3);
    if (op == kClientSend || (op == kClientRecv && !(e.flags & IORING_CQE_F_MORE))) --inflight_;
  }

  void complete(const io_uring_cqe& e, std::vector<size_t>& rearm) {
    settle(e);
    const auto op = ClientOp(e.user_data & 3);
    if (op == kClientCancel) return;
    const size_t i = size_t(e.user_data >> 2);
    Conn& c = cl_.cs[i];
    if (op == kClientSend) {
      if (e.res < 0) {
        cl_.error = fmt::format("send: {}", strerror(-e.res));
        return;
      }
      c.sent += size_t(e.res);
      if (c.sent < cl_.size) send(i);
      return;
    }
    if (e.res > 0) {
      const auto bid = uint16_t(e.flags >> IORING_CQE_BUFFER_SHIFT);
      const auto* data = reinterpret_cast<const unsigned char*>(br_->buffer(bid).data());
      const bool done = cl_.received(i, data, size_t(e.res));
      br_->recycle_later(bid);
      if (done) send(i);
    }
    if (e.flags & IORING_CQE_F_MORE) return;
    // The multishot recv ended: out of buffers (re-armed once they are back), or for good.
    if (e.res == -ENOBUFS || e.res > 0)
      rearm.push_back(i);
    else if (e.res == 0)
      cl_.error = "the server closed a connection";
    else
      cl_.error = fmt::format("recv: {}", strerror(-e.res));
  }

  Client& cl_;
  io_uring ring_{};
  bool ok_ = false;
  unsigned inflight_ = 0;  // operations whose last CQE has not arrived
  std::optional<ipcrt::buf_ring> br_;
};

}  // namespace

bool have_uring_client() { return true; }

void drive_uring(Client& cl) {
  Loop loop(cl);
  loop.run();
}

}  // namespace ipclab::echo

#else

namespace ipclab::echo {
bool have_uring_client() { return false; }
void drive_uring(Client& cl) { cl.error = "client=uring: this build has no io_uring runtime"; }
}  // namespace ipclab::echo

#endif
