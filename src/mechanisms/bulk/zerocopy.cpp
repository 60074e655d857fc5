// bulk/zerocopy: sending from the sender's own pages instead of copying them into socket
// buffers, over TCP on loopback or a Unix stream socketpair. send=copy: plain send() (the
// socket's copying baseline); send=msg_zerocopy: send(MSG_ZEROCOPY) after SO_ZEROCOPY, each
// send's completion read from the socket's error queue; send=uring_send_zc: io_uring's
// IORING_OP_SEND_ZC, whose second completion (IORING_CQE_F_NOTIF) says the pages are free. The
// receiver recv()s into its buffer either way (one copy). A buffer is written again only once the
// kernel has said it let go of it: the sender cycles through four, waiting when the next one is
// still in flight. The pages pinned for a zero-copy send count against RLIMIT_MEMLOCK unless the
// process has CAP_IPC_LOCK; a size whose buffers exceed that limit is refused before the run.
#include <liburing.h>
#include <linux/errqueue.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/params.hpp"
#include "core/model/std_params.hpp"
#include "core/process/listener.hpp"
#include "core/transport/fd_transport.hpp"
#include "mechanisms/bulk/common.hpp"
#include "mechanisms/messaging/common.hpp"

namespace ipclab::bulk {
namespace {

using messaging::poll_abort;
using messaging::retry_errno;
using transport::check_rc;

constexpr size_t kBuffers = 4;

enum class Api { Copy, MsgZerocopy, UringSendZc };

Api api_of(const Params& p) {
  const std::string s = p.str("send");
  return s == "copy" ? Api::Copy : s == "msg_zerocopy" ? Api::MsgZerocopy : Api::UringSendZc;
}

bool has_cap_ipc_lock() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("CapEff:", 0) == 0)
      return (std::stoull(line.substr(7), nullptr, 16) >> 14) & 1;  // CAP_IPC_LOCK
  return false;
}

// Why a zero-copy send of this size cannot run here, or "": the buffers in flight are pinned,
// and count against RLIMIT_MEMLOCK without CAP_IPC_LOCK.
std::string memlock_why(const Params& p) {
  if (api_of(p) == Api::Copy || has_cap_ipc_lock()) return "";
  rlimit rl{};
  getrlimit(RLIMIT_MEMLOCK, &rl);
  const uint64_t need = uint64_t(kBuffers) * uint64_t(p.i64("size")) * (std_params::is_roundtrip(p) ? 2 : 1);
  if (rl.rlim_cur == RLIM_INFINITY || need <= rl.rlim_cur) return "";
  return fmt::format(
      "size {} needs {} of pinned pages in flight, over RLIMIT_MEMLOCK ({}); raise it (ulimit -l) or "
      "use a smaller size",
      size_text(p.i64("size")), size_text(int64_t(need)), size_text(int64_t(rl.rlim_cur)));
}

class ZerocopyEndpoint final : public Endpoint {
 public:
  ZerocopyEndpoint(int fd, Api api, size_t size, bool sends) : fd_(fd), api_(api) {
    if (!sends || api_ == Api::Copy) return;
    bufs_ = std::make_unique<Pages>(kBuffers * size);
    size_ = size;
    pending_.assign(kBuffers, 0);
    if (api_ == Api::UringSendZc) {
      const int rc = io_uring_queue_init(16, &ring_, 0);
      if (rc < 0) throw std::system_error(-rc, std::generic_category(), "io_uring_queue_init");
      have_ring_ = true;
    }
  }
  ~ZerocopyEndpoint() override {
    if (have_ring_) io_uring_queue_exit(&ring_);
  }

  std::byte* send_buffer(std::byte* own, size_t) override {
    if (!bufs_) return own;
    while (pending_[next_]) reap(true);  // the kernel still sends from it
    return buffer(next_);
  }

  void send(const std::byte* data, size_t len) override {
    if (!bufs_) {
      write_stream(data, len, 0);
      return;
    }
    std::byte* mine = send_buffer(nullptr, len);
    if (data != mine) std::memcpy(mine, data, len);  // an echo of what was received
    const size_t k = next_;
    next_ = (next_ + 1) % kBuffers;
    if (api_ == Api::MsgZerocopy)
      write_stream(mine, len, k + 1);
    else
      uring_send(mine, len, k);
  }

  size_t recv(std::byte* buf, size_t len) override {
    read_all(fd_, buf, len);
    return len;
  }

 private:
  std::byte* buffer(size_t k) const { return bufs_->get() + k * size_; }

  // send() until all `len` bytes are taken; with MSG_ZEROCOPY (`buffer` = k + 1) each call that
  // took bytes gets the next notification id, whose completion frees buffer k.
  void write_stream(const std::byte* data, size_t len, size_t buffer) {
    size_t done = 0;
    while (done < len) {
      const ssize_t n = ::send(fd_, data + done, len - done, MSG_NOSIGNAL | (buffer ? MSG_ZEROCOPY : 0));
      if (n < 0) {
        if (buffer && errno == ENOBUFS) {  // out of optmem for notifications: reap some first
          reap(true);
          continue;
        }
        retry_errno("send", false);
        continue;
      }
      done += size_t(n);
      if (buffer) {
        ids_.push_back(buffer - 1);
        ++pending_[buffer - 1];
      }
    }
  }

  void uring_send(const std::byte* data, size_t len, size_t k) {
    size_t done = 0;
    while (done < len) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
      while (!sqe) {
        reap(true);
        sqe = io_uring_get_sqe(&ring_);
      }
      io_uring_prep_send_zc(sqe, fd_, data + done, len - done, MSG_NOSIGNAL, 0);
      io_uring_sqe_set_data64(sqe, k);
      ++pending_[k];  // the notification
      sending_ = true;
      const int rc = io_uring_submit(&ring_);
      if (rc < 0) throw std::system_error(-rc, std::generic_category(), "io_uring_submit");
      while (sending_) reap(true);
      if (last_res_ < 0) {
        if (last_res_ == -EINTR || last_res_ == -EAGAIN) continue;
        throw std::system_error(-last_res_, std::generic_category(), "IORING_OP_SEND_ZC");
      }
      done += size_t(last_res_);
    }
  }

  // Takes in the kernel's word that buffers are free: MSG_ZEROCOPY's error-queue notes, or
  // io_uring's completions. With `wait`, blocks (in slices, so that an aborted run ends) until
  // at least one arrives.
  void reap(bool wait) {
    if (api_ == Api::UringSendZc) {
      io_uring_cqe* cqe = nullptr;
      int rc;
      for (;;) {
        __kernel_timespec ts{0, 100'000'000};
        rc = wait ? io_uring_wait_cqe_timeout(&ring_, &cqe, &ts) : io_uring_peek_cqe(&ring_, &cqe);
        if (rc == -ETIME || rc == -EINTR) {
          poll_abort();
          continue;
        }
        break;
      }
      if (rc == -EAGAIN) return;
      if (rc < 0) throw std::system_error(-rc, std::generic_category(), "io_uring_wait_cqe");
      const size_t k = size_t(io_uring_cqe_get_data64(cqe));
      if (cqe->flags & IORING_CQE_F_NOTIF) {
        --pending_[k];
      } else {
        last_res_ = cqe->res;
        sending_ = false;
        if (!(cqe->flags & IORING_CQE_F_MORE)) --pending_[k];  // no notification will follow
      }
      io_uring_cqe_seen(&ring_, cqe);
      return;
    }
    for (;;) {
      alignas(cmsghdr) char control[256];
      msghdr m{};
      m.msg_control = control;
      m.msg_controllen = sizeof control;
      const ssize_t n = ::recvmsg(fd_, &m, MSG_ERRQUEUE);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        if (!wait) return;
        pollfd p{fd_, 0, 0};
        if (::poll(&p, 1, 100) < 0 && errno != EINTR)
          throw std::system_error(errno, std::generic_category(), "poll");
        poll_abort();
        continue;
      }
      if (n < 0) {
        retry_errno("recvmsg MSG_ERRQUEUE", false);
        continue;
      }
      for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        sock_extended_err err;
        std::memcpy(&err, CMSG_DATA(c), sizeof err);
        if (err.ee_origin != SO_EE_ORIGIN_ZEROCOPY) {
          if (err.ee_errno)
            throw std::system_error(int(err.ee_errno), std::generic_category(), "send MSG_ZEROCOPY");
          continue;
        }
        // Ids [ee_info, ee_data] completed: each frees the buffer it was sent from.
        for (uint32_t id = err.ee_info; id - err.ee_info <= err.ee_data - err.ee_info; ++id) {
          const uint32_t i = id - first_id_;
          if (i < ids_.size() && ids_[i] != kDone) {
            --pending_[ids_[i]];
            ids_[i] = kDone;
          }
        }
        while (!ids_.empty() && ids_.front() == kDone) {
          ids_.erase(ids_.begin());
          ++first_id_;
        }
      }
      return;
    }
  }

  static constexpr size_t kDone = SIZE_MAX;
  int fd_;
  Api api_;
  std::unique_ptr<Pages> bufs_;  // the sender's buffers, written in turn
  size_t size_ = 0;
  std::vector<uint32_t> pending_;  // per buffer: sends or notifications the kernel still owes
  size_t next_ = 0;
  std::vector<size_t> ids_;  // MSG_ZEROCOPY: the buffer of each id from first_id_ on
  uint32_t first_id_ = 0;
  io_uring ring_{};
  bool have_ring_ = false, sending_ = false;
  int last_res_ = 0;
};

// Both sides here: a loopback connection or a socketpair. Across two hosts (--remote, socket=tcp:
// Mechanism::half), a TCP connection between them: the receivers' half listens on its host's
// address and takes the connection as its endpoint opens; the senders' half connects to it.
class ZerocopyTransport final : public Transport {
 public:
  explicit ZerocopyTransport(const Params& p, const Half* half = nullptr)
      : api_(api_of(p)), size_(size_t(p.i64("size"))), roundtrip_(std_params::is_roundtrip(p)) {
    const std::string socket = p.str("socket");
    probe(socket);
    try {
      if (!half) {
        c_ = socket == "tcp" ? transport::tcp_loopback_channel() : transport::stream_socketpair_channel();
        for (int fd : {c_.prod_w, c_.cons_w}) zerocopy_on(fd, socket);
      } else if (half->role == Role::Producer) {
        c_.prod_r = c_.prod_w =
            transport::connected_ipv4(SOCK_STREAM, half->address, half->port, "the receiving side");
        zerocopy_on(c_.prod_w, socket);
      } else {
        listener_ = listen_tcp(0, 1, false, false, half->address);
        zerocopy_on(listener_, socket);  // the connection it accepts inherits it
      }
    } catch (...) {
      close_all();
      throw;
    }
  }
  ~ZerocopyTransport() override { close_all(); }
  std::unique_ptr<Endpoint> open(Role role, int) override {
    const bool producer = role == Role::Producer;
    if (!producer && listener_ >= 0 && c_.cons_w < 0) c_.cons_r = c_.cons_w = accept_sender();
    return std::make_unique<ZerocopyEndpoint>(producer ? c_.prod_w : c_.cons_w, api_, size_,
                                              producer || roundtrip_);
  }
  int listening_port() const override { return listener_ >= 0 ? local_port(listener_) : 0; }

 private:
  // What the kernel supports on this kind of socket, found before the run on a pair of its own: a
  // missing feature skips. MSG_ZEROCOPY: SO_ZEROCOPY, set on the run's sockets (zerocopy_on).
  void probe(const std::string& socket) {
    if (api_ != Api::UringSendZc) return;
    // One byte sent zero-copy and read back tells whether this kernel and socket do it.
    transport::FdChannel c =
        socket == "tcp" ? transport::tcp_loopback_channel() : transport::stream_socketpair_channel();
    io_uring ring;
    const int init = io_uring_queue_init(4, &ring, 0);
    int res = init;
    if (init == 0) {
      const char byte = 'z';
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);
      io_uring_prep_send_zc(sqe, c.prod_w, &byte, 1, 0, 0);
      io_uring_submit(&ring);
      io_uring_cqe* cqe = nullptr;
      res = io_uring_wait_cqe(&ring, &cqe);
      if (res == 0) {
        res = cqe->res;
        const bool more = cqe->flags & IORING_CQE_F_MORE;
        io_uring_cqe_seen(&ring, cqe);
        if (more && io_uring_wait_cqe(&ring, &cqe) == 0) io_uring_cqe_seen(&ring, cqe);
      }
      io_uring_queue_exit(&ring);
      char got;
      if (res >= 0) res = int(::recv(c.cons_r, &got, 1, 0)) == 1 ? 0 : -errno;
    }
    for (int fd : {c.prod_w, c.cons_w}) ::close(fd);
    if (init < 0) throw Skip(fmt::format("io_uring_queue_init: {}", std::strerror(-init)));
    if (res < 0) throw Skip(fmt::format("IORING_OP_SEND_ZC on a {} socket: {}", socket, std::strerror(-res)));
  }
  void zerocopy_on(int fd, const std::string& socket) {
    int one = 1;
    if (api_ == Api::MsgZerocopy && ::setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one) != 0)
      throw Skip(fmt::format("SO_ZEROCOPY on a {} socket: {}", socket, std::strerror(errno)));
  }
  // The receivers' half: the sender's connection, waited for in slices so that an aborted run ends.
  int accept_sender() {
    for (;;) {
      pollfd p{listener_, POLLIN, 0};
      if (::poll(&p, 1, 100) < 0 && errno != EINTR)
        throw std::system_error(errno, std::generic_category(), "poll");
      poll_abort();
      if (!(p.revents & POLLIN)) continue;
      const int fd = check_rc(::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC), "accept");
      int one = 1;
      check_rc(::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one), "TCP_NODELAY");
      return fd;
    }
  }
  void close_all() {
    for (int fd : {c_.prod_w, c_.cons_w, listener_})
      if (fd >= 0) ::close(fd);
    c_ = {};
    listener_ = -1;
  }
  Api api_;
  size_t size_;
  bool roundtrip_;
  transport::FdChannel c_;
  int listener_ = -1;  // the receivers' half across hosts
};

IPCLAB_REGISTER(Mechanism{
    .suite = "bulk",
    .name = "zerocopy",
    .help = "send() from the sender's own pages: MSG_ZEROCOPY or io_uring SEND_ZC, over TCP loopback or a "
            "Unix socket",
    .params = suite_params({{.name = "socket",
                             .type = ParamType::String,
                             .def = "tcp",
                             .choices = {"tcp", "unix"},
                             .help = "tcp: a loopback connection (TCP_NODELAY); unix: a stream socketpair",
                             .quick = {"tcp"},
                             .full = {"tcp", "unix"}},
                            {.name = "send",
                             .type = ParamType::String,
                             .def = "msg_zerocopy",
                             .choices = {"copy", "msg_zerocopy", "uring_send_zc"},
                             .help = "copy: plain send(); msg_zerocopy: send(MSG_ZEROCOPY); uring_send_zc: "
                                     "IORING_OP_SEND_ZC",
                             .quick = {"copy", "msg_zerocopy", "uring_send_zc"}}}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<ZerocopyTransport>(p);
    },
    .check =
        [](const Params& p) {
          std::string why = check(Caps{}, p);
          return why.empty() ? memlock_why(p) : why;
        },
    .half = [](const Params& p, const Half& h) -> std::unique_ptr<Transport> {
      return std::make_unique<ZerocopyTransport>(p, &h);
    },
    .half_check =
        [](const Params& p) {
          return p.str("socket") == "tcp"
                     ? std::string()
                     : std::string("socket=unix is a Unix socket, on one host; use -p socket=tcp");
        },
});

}  // namespace
}  // namespace ipclab::bulk
