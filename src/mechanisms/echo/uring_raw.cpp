// echo/uring loop=raw: a hand-written liburing event loop, the leanest io_uring echo server we know
// how to write on Linux 6.x, against which the ipcrt coroutine server (loop=ipcrt) is measured.
//  - One ring, IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN (completions are produced only while we
//    wait in io_uring_enter, so nothing interrupts the loop) | SUBMIT_ALL; the ring fd registered.
//  - multishot=1: one multishot recv per connection into a provided-buffer ring, so receiving
//    costs no SQE; each chunk is sent back from the buffer it arrived in, and the buffer returns to
//    the ring when its send completes. multishot=0 re-arms a one-shot recv (same buffers) per chunk.
//  - One io_uring_enter per loop turn submits every send and waits for the next completions;
//    wait_nr/min_wait_us batch the wake-ups (IORING_ENTER_EXT_ARG min_wait_usec, Linux 6.13).
//  - fixed_files=1: multishot accept straight into the registered file table
//    (IORING_FILE_INDEX_ALLOC), no fd lookup per op and no update syscall per connection.
// No allocation after set-up (fixed arrays sized from the parameters), no syscall per echo.
#if __has_include(<ipcrt/ipcrt.hpp>)
#include <liburing.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <ipcrt/buf_ring.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <system_error>
#include <vector>

#include "core/measure/session.hpp"
#include "mechanisms/echo/common.hpp"

namespace ipclab::echo {
namespace {

// liburing 2.3 predates these (the kernel has them since 6.13).
constexpr uint32_t kFeatMinTimeout = 1u << 15;  // IORING_FEAT_MIN_TIMEOUT
struct GeteventsArg {                           // struct io_uring_getevents_arg, 6.13 layout
  uint64_t sigmask;
  uint32_t sigmask_sz;
  uint32_t min_wait_usec;  // was `pad`
  uint64_t ts;
};

enum Op : uint64_t { kAccept, kRecv, kSend, kClose, kIgnore };
constexpr unsigned kOpBits = 3;
constexpr uint16_t kServerGroup = 0;
constexpr uint32_t kNone = UINT32_MAX;
constexpr unsigned kFileSlots = 8192;  // > the suite's 4096 connections

uint64_t server_ud(uint32_t conn, Op op) { return uint64_t(conn) << kOpBits | op; }

struct RawConn {
  int fd = -1;                          // socket, or its slot in the registered file table
  uint32_t head = kNone, tail = kNone;  // received buffers not yet sent back, linked by next_
  uint32_t off = 0;                     // bytes of the head buffer already sent
  bool recv_armed = false, send_busy = false, eof = false, broken = false, cancelling = false,
       closing = false, starved = false;
};

class Server {
 public:
  Server(int lfd, const Params& p)
      : lfd_(lfd),
        fixed_(p.flag("fixed_files")),
        multishot_(p.flag("multishot")),
        poll_first_(p.flag("poll_first")),
        wait_nr_(unsigned(p.i64("wait_nr"))),
        min_wait_us_(unsigned(p.i64("min_wait_us"))) {
    const auto nconn = size_t(p.i64("connections"));
    // At most 64 MiB of buffers (4096 connections of 64 KiB messages would ask for 4 GiB): a
    // connection that finds the ring empty waits for buffers to come back (see `starved_`).
    const BufferPlan plan = provided_buffers(size_t(p.i64("size")), nconn);
    buf_size_ = plan.buf_size;
    entries_ = plan.entries;
    conns_.resize(std::max<size_t>(nconn * 2, 64));  // clients that reconnect leave closing slots
    for (uint32_t i = uint32_t(conns_.size()); i-- > 0;) free_.push_back(i);
    starved_.reserve(conns_.size() * 2);
    next_.assign(entries_, kNone);
    len_.assign(entries_, 0);

    io_uring_params ip{};
    ip.cq_entries = std::max<unsigned>(4096, std::bit_ceil(entries_ * 2));
    const unsigned base = IORING_SETUP_CQSIZE | IORING_SETUP_SUBMIT_ALL;
    int r = -EINVAL;
    for (unsigned extra : {IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
                           IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG, 0u}) {
      ip.flags = base | extra;
      if ((r = io_uring_queue_init_params(1024, &ring_, &ip)) == 0) break;
    }
    if (r != 0) die("io_uring_queue_init_params", r);
    if (!(ip.features & kFeatMinTimeout)) min_wait_us_ = 0;  // the workload says so in the record
    if (io_uring_register_ring_fd(&ring_) == 1) enter_flags_ |= IORING_ENTER_REGISTERED_RING;
    // The kernel takes SQEs in ring order; liburing 2.3 fills this identity map too, but its own
    // flush is internal, and enter() below does its own (it needs IORING_ENTER_EXT_ARG).
    for (unsigned i = 0; i < ring_.sq.ring_entries; ++i) ring_.sq.array[i] = i;
    if (fixed_ && (r = io_uring_register_files_sparse(&ring_, kFileSlots)) != 0)
      die("io_uring_register_files_sparse", r);
    setup_buffers();
  }

  [[noreturn]] void run() {
    arm_accept();
    for (;;) {
      enter();
      // Not io_uring_peek_batch_cqe: when the CQ is empty it may enter the kernel to flush.
      while (io_uring_cq_ready(&ring_)) {
        unsigned head, n = 0;
        io_uring_cqe* e;
        io_uring_for_each_cqe(&ring_, head, e) {
          complete(*e);
          ++n;
        }
        io_uring_cq_advance(&ring_, n);
      }
      held_ -= br_->publish();
      // Connections whose recv ran dry receive again once the ring has buffers.
      if (!starved_.empty() && held_ < entries_) {
        for (uint32_t ci : starved_)
          if (conns_[ci].starved) conns_[ci].starved = false, arm_recv(ci);
        starved_.clear();
      }
    }
  }

 private:
  [[noreturn]] static void die(const char* what, int err) {
    fmt::print(stderr, "echo/uring: {}: {}\n", what, strerror(-err));
    _exit(1);
  }

  void setup_buffers() {
    try {
      br_.emplace(&ring_, kServerGroup, entries_, buf_size_);
    } catch (const std::system_error& e) {
      die(e.what(), -e.code().value());
    }
  }

  io_uring_sqe* sqe() {
    io_uring_sqe* s = io_uring_get_sqe(&ring_);
    while (!s) {  // more than 1024 SQEs in one turn: hand these over first
      flush_and_enter(0);
      s = io_uring_get_sqe(&ring_);
    }
    return s;
  }

  unsigned flush_sq() {
    io_uring_sq& sq = ring_.sq;
    const unsigned tail = sq.sqe_tail;
    sq.sqe_head = tail;
    __atomic_store_n(sq.ktail, tail, __ATOMIC_RELEASE);
    return tail - __atomic_load_n(sq.khead, __ATOMIC_ACQUIRE);
  }

  int flush_and_enter(unsigned wait_nr, const GeteventsArg* arg = nullptr) {
    unsigned flags = enter_flags_ | (wait_nr ? IORING_ENTER_GETEVENTS : 0u);
    if (arg) flags |= IORING_ENTER_EXT_ARG;
    const unsigned submit = flush_sq();
    const int fd = (enter_flags_ & IORING_ENTER_REGISTERED_RING) ? ring_.enter_ring_fd : ring_.ring_fd;
    long r = syscall(__NR_io_uring_enter, fd, submit, wait_nr, flags,
                     arg ? static_cast<const void*>(arg) : nullptr, arg ? sizeof *arg : size_t(_NSIG / 8));
    if (r < 0 && errno != EINTR && errno != ETIME && errno != EBUSY && errno != EAGAIN)
      die("io_uring_enter", -errno);
    return int(r);
  }

  // One syscall per turn: submit what the last completions produced, then sleep. min_wait_us=0:
  // until any completion, so sends that complete inline (most do) end the wait at once and the
  // next turn waits again. Otherwise until wait_nr completions beyond those sends, or any once
  // min_wait_us has passed (the cap also covers a send that did not complete inline).
  void enter() {
    const unsigned sends = sends_queued_;
    sends_queued_ = 0;
    if (!min_wait_us_) {
      flush_and_enter(1);
      return;
    }
    // With no general timeout the kernel would return at min_wait even with nothing completed.
    static const __kernel_timespec idle{.tv_sec = 1, .tv_nsec = 0};
    const GeteventsArg arg{.sigmask = 0,
                           .sigmask_sz = _NSIG / 8,
                           .min_wait_usec = min_wait_us_,
                           .ts = reinterpret_cast<uintptr_t>(&idle)};
    flush_and_enter(sends + wait_nr_, &arg);
  }

  // Back to the kernel at the end of this loop turn (one publish for all of the turn's buffers).
  void recycle(uint32_t bid) { br_->recycle_later(uint16_t(bid)); }

  void arm_accept() {
    io_uring_sqe* s = sqe();
    if (fixed_)
      io_uring_prep_multishot_accept_direct(s, lfd_, nullptr, nullptr, 0);
    else
      io_uring_prep_multishot_accept(s, lfd_, nullptr, nullptr, SOCK_CLOEXEC);
    io_uring_sqe_set_data64(s, server_ud(0, kAccept));
  }

  // After io_uring_prep_*, which clears sqe->flags.
  void conn_flags(io_uring_sqe* s, uint8_t flags = 0) const {
    s->flags |= flags | (fixed_ ? IOSQE_FIXED_FILE : 0);
  }

  void arm_recv(uint32_t ci) {
    RawConn& c = conns_[ci];
    io_uring_sqe* s = sqe();
    if (multishot_)
      io_uring_prep_recv_multishot(s, c.fd, nullptr, 0, 0);
    else
      io_uring_prep_recv(s, c.fd, nullptr, buf_size_, 0);
    conn_flags(s, IOSQE_BUFFER_SELECT);
    s->buf_group = kServerGroup;
    // The last recv emptied the socket: wait for data before trying (one-shot recv only).
    if (poll_first_ && !multishot_) s->ioprio |= IORING_RECVSEND_POLL_FIRST;
    io_uring_sqe_set_data64(s, server_ud(ci, kRecv));
    c.recv_armed = true;
  }

  void send_head(uint32_t ci) {
    RawConn& c = conns_[ci];
    io_uring_sqe* s = sqe();
    // MSG_WAITALL: the kernel retries a short send itself; a short result is still handled.
    io_uring_prep_send(s, c.fd, br_->buffer(uint16_t(c.head)).data() + c.off, len_[c.head] - c.off,
                       MSG_NOSIGNAL | MSG_WAITALL);
    conn_flags(s);
    io_uring_sqe_set_data64(s, server_ud(ci, kSend));
    c.send_busy = true;
    ++sends_queued_;
  }

  // Returns the buffers of a broken connection, but not the one its send still reads.
  void drop_queue(RawConn& c) {
    const uint32_t keep = c.send_busy ? c.head : kNone;
    for (uint32_t b = c.head; b != kNone; b = next_[b])
      if (b != keep) recycle(b);
    c.head = c.tail = keep;
    c.off = 0;
  }

  // Ends the connection once nothing of ours is in flight on it.
  void settle(uint32_t ci) {
    RawConn& c = conns_[ci];
    if (c.closing || !(c.eof || c.broken)) return;
    if (c.broken && c.recv_armed && !c.cancelling) {
      io_uring_sqe* s = sqe();  // the recv's last CQE brings us back here
      io_uring_prep_cancel64(s, server_ud(ci, kRecv), 0);
      io_uring_sqe_set_data64(s, server_ud(ci, kIgnore));
      c.cancelling = true;
    }
    if (c.recv_armed || c.send_busy || c.head != kNone) return;
    c.starved = false;
    io_uring_sqe* s = sqe();
    if (fixed_)
      io_uring_prep_close_direct(s, unsigned(c.fd));
    else
      io_uring_prep_close(s, c.fd);
    io_uring_sqe_set_data64(s, server_ud(ci, kClose));
    c.closing = true;
  }

  void complete(const io_uring_cqe& e) {
    const auto op = Op(e.user_data & ((1u << kOpBits) - 1));
    const auto ci = uint32_t(e.user_data >> kOpBits);
    switch (op) {
      case kAccept:
        if (e.res >= 0) {
          if (free_.empty()) {  // more clients than the parameter said: refuse this one
            io_uring_sqe* s = sqe();
            if (fixed_)
              io_uring_prep_close_direct(s, unsigned(e.res));
            else
              io_uring_prep_close(s, e.res);
            io_uring_sqe_set_data64(s, server_ud(0, kIgnore));
          } else {
            const uint32_t n = free_.back();
            free_.pop_back();
            conns_[n] = RawConn{.fd = e.res};
            arm_recv(n);
          }
        }
        if (!(e.flags & IORING_CQE_F_MORE)) arm_accept();
        return;
      case kRecv: {
        RawConn& c = conns_[ci];
        if (e.res > 0) {
          const uint32_t bid = e.flags >> IORING_CQE_BUFFER_SHIFT;
          ++held_;
          if (c.broken) {
            recycle(bid);
          } else {
            len_[bid] = uint32_t(e.res);
            next_[bid] = kNone;
            (c.tail == kNone ? c.head : next_[c.tail]) = bid;
            c.tail = bid;
            if (!c.send_busy) send_head(ci);
          }
        }
        if (e.flags & IORING_CQE_F_MORE) return;
        c.recv_armed = false;
        if (e.res == -ENOBUFS && !c.broken) {
          if (!c.starved) c.starved = true, starved_.push_back(ci);
        } else if (e.res > 0 && !c.broken) {
          arm_recv(ci);  // one-shot recv, or a multishot the kernel ended (e.g. CQ overflow)
        } else if (e.res == 0) {
          c.eof = true;
        } else if (e.res < 0) {
          c.broken = true;
          drop_queue(c);
        }
        settle(ci);
        return;
      }
      case kSend: {
        RawConn& c = conns_[ci];
        c.send_busy = false;
        if (e.res <= 0 || c.broken) {
          c.broken = true;
          drop_queue(c);  // now including the buffer this send was reading
        } else if ((c.off += uint32_t(e.res)) == len_[c.head]) {
          const uint32_t done = c.head;
          c.head = next_[done];
          if (c.head == kNone) c.tail = kNone;
          c.off = 0;
          recycle(done);
        }
        if (c.head != kNone && !c.broken) send_head(ci);
        settle(ci);
        return;
      }
      case kClose:
        conns_[ci] = RawConn{};
        free_.push_back(ci);
        return;
      case kIgnore:
        return;
    }
  }

  int lfd_;
  bool fixed_, multishot_, poll_first_;
  unsigned wait_nr_, min_wait_us_;
  unsigned enter_flags_ = 0;
  io_uring ring_{};
  std::optional<ipcrt::buf_ring> br_;
  size_t buf_size_ = 0;
  unsigned entries_ = 0, held_ = 0, sends_queued_ = 0;  // held_: buffers out of the ring
  std::vector<RawConn> conns_;
  std::vector<uint32_t> free_, starved_, next_, len_;
};

}  // namespace

void serve_uring_raw(int listen_fd, const Params& p) {
  // The server lives until the harness kills it; a heap object so no destructor runs on that path.
  (new Server(listen_fd, p))->run();
}

}  // namespace ipclab::echo
#endif
