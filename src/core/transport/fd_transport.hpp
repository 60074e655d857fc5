#pragma once
// The transport behind every file-descriptor mechanism (FIFO, Unix and IP sockets): a channel is
// a set of descriptors created in the coordinator before any worker starts, so forked workers
// inherit them. Throughput uses one channel shared by every producer and consumer (datagram and
// seqpacket sockets keep message boundaries, so several readers and writers can share one);
// roundtrip uses one channel per pair. The messaging and bulk suites build their pipe and socket
// mechanisms on it, and the remote side's channels (core/remote/local.cpp) are its sockets too.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "core/base/cancel.hpp"
#include "core/base/error.hpp"
#include "core/base/fdio.hpp"
#include "core/model/mechanism.hpp"
#include "core/model/std_params.hpp"
#include "core/ownership/journal.hpp"

namespace ipclab::transport {

/// Throws std::system_error naming `what` when `rc` < 0.
inline int check_rc(int rc, const char* what) {
  if (rc < 0) throw std::system_error(errno, std::generic_category(), what);
  return rc;
}

/// The descriptors each side of one channel reads and writes (the same fd for a socket).
struct FdChannel {
  int prod_r = -1, prod_w = -1, cons_r = -1, cons_w = -1;
  std::vector<std::string> paths;  // FIFOs' paths, unlinked with the transport
};

/// Stream: a message may arrive in pieces (pipes, FIFOs, stream sockets).
/// Message: one call moves one whole message, and a short one is an error.
enum class Framing { Stream, Message };

/// Flow control for transports that drop instead of blocking (UDP): a producer takes a credit
/// before it sends and a consumer returns it after it received, so at most `window` messages
/// are in flight and the receive buffer never overflows. Lives in MAP_SHARED memory.
///
/// Across hosts (--remote, core/remote/local.cpp) the two ends share no memory: each has Credits of
/// its own with `fd` the channel's socket. The receiver's end then sends its count of returned
/// credits back on it (a datagram of 8 bytes, the running total) every `ack_every` messages, and the
/// sender's end, its window full, reads those totals from the socket: a lost one is made good by
/// the next, and fewer than `ack_every` (at most a quarter of the window) are ever returned and not
/// yet told, so the window never closes for good.
struct alignas(64) Credits {
  std::atomic<uint64_t> taken{0};
  alignas(64) std::atomic<uint64_t> returned{0};
  uint64_t window = 1;
  int fd = -1;  // across hosts: the socket the returns travel on
  uint64_t ack_every = 1;

  void take() {
    // Relaxed suffices: the counters only bound how much is in flight; the data itself travels
    // through the kernel, which orders it.
    const uint64_t mine = taken.fetch_add(1, std::memory_order_relaxed);
    // Signed: other producers' credits may come back before ours, so `returned` can pass `mine`.
    for (uint32_t spins = 0; int64_t(mine - returned.load(std::memory_order_relaxed)) >= int64_t(window);
         ++spins) {
      if (fd >= 0) {
        read_returns();
        continue;
      }
      if ((spins & 63) == 63) poll_abort();
      sched_yield();  // the consumer may need this very CPU
    }
  }
  void give() {
    const uint64_t n = returned.fetch_add(1, std::memory_order_relaxed) + 1;
    // The running total, not a count since the last: any later one makes good a lost one.
    if (fd >= 0 && n % ack_every == 0) (void)::send(fd, &n, sizeof n, MSG_NOSIGNAL | MSG_DONTWAIT);
  }

 private:
  // The sender's end across hosts: waits for the receiver's totals and takes the highest (several
  // producers read the one socket; each total only ever raises `returned`). Asleep while it waits,
  // as a sender blocked on a full socket is, so that a stall names the receiver it waits on; 10 ms
  // at most, for the abort flag (the session's wake-up signal ends the wait sooner) and for a total
  // another producer read first.
  void read_returns() {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10) < 0 && errno != EINTR)
      throw std::system_error(errno, std::generic_category(), "poll");
    poll_abort();
    uint64_t total;
    for (;;) {
      const ssize_t n = ::recv(fd, &total, sizeof total, MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
        throw std::system_error(errno, std::generic_category(), "credits from the receiver");
      }
      if (n != sizeof total) continue;  // not a total: nothing else travels this way
      uint64_t seen = returned.load(std::memory_order_relaxed);
      while (total > seen && !returned.compare_exchange_weak(seen, total, std::memory_order_relaxed)) {
      }
    }
  }
};

/// The receive buffer a UDP receiver asks for (the kernel caps it to net.core.rmem_max).
inline constexpr int kUdpRcvBuf = 4 << 20;

/// UDP's credit window: the messages of `size` bytes that fit in a receive buffer of `rcvbuf` bytes
/// (as the kernel reports it: already doubled), each costing its payload and the kernel's buffer
/// overhead (skb truesize; ~1 KiB is generous), and at most `asked` (queue_depth).
inline uint64_t credit_window(uint64_t asked, uint64_t size, int rcvbuf) {
  const uint64_t fits = std::max<uint64_t>(1, uint64_t(std::max(rcvbuf, 0)) / 2 / (size + 1024));
  return std::min(asked, fits);
}

/// Anonymous pipes (pipe2): `up` from the producer/client to the consumer/server, and in
/// roundtrip `down` back.
inline FdChannel pipe_channel(bool roundtrip, bool nonblocking) {
  const int flags = O_CLOEXEC | (nonblocking ? O_NONBLOCK : 0);
  int up[2], down[2] = {-1, -1};
  check_rc(::pipe2(up, flags), "pipe2");
  if (roundtrip && ::pipe2(down, flags) != 0) {
    ::close(up[0]);
    ::close(up[1]);
    check_rc(-1, "pipe2");
  }
  return FdChannel{.prod_r = down[0], .prod_w = up[1], .cons_r = up[0], .cons_w = down[1]};
}

/// A connected AF_UNIX SOCK_STREAM socketpair, both directions on each side's one descriptor.
inline FdChannel stream_socketpair_channel() {
  int sv[2];
  check_rc(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), "socketpair");
  return FdChannel{.prod_r = sv[0], .prod_w = sv[0], .cons_r = sv[1], .cons_w = sv[1]};
}

/// A TCP connection over loopback (127.0.0.1, port chosen by the kernel), TCP_NODELAY on both
/// ends so that small messages leave at once instead of waiting for Nagle's coalescing.
inline FdChannel tcp_loopback_channel() {
  int l = check_rc(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), "socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof a;
  int c = -1, s = -1;
  try {
    check_rc(::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a), "bind 127.0.0.1");
    check_rc(::listen(l, 1), "listen");
    check_rc(::getsockname(l, reinterpret_cast<sockaddr*>(&a), &alen), "getsockname");
    c = check_rc(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), "socket");
    // A loopback connect completes against the listen backlog, before accept.
    check_rc(::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), "connect");
    s = check_rc(::accept4(l, nullptr, nullptr, SOCK_CLOEXEC), "accept");
    int one = 1;
    for (int fd : {c, s})
      check_rc(::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one), "TCP_NODELAY");
  } catch (...) {
    for (int fd : {l, c, s})
      if (fd >= 0) ::close(fd);
    throw;
  }
  ::close(l);
  return FdChannel{.prod_r = c, .prod_w = c, .cons_r = s, .cons_w = s};
}

/// A socket of `type` (SOCK_STREAM, SOCK_DGRAM) bound to IPv4 `address` on a port the kernel picks:
/// the listening end of a data path across hosts (--remote). Throws naming the address.
inline int bound_ipv4(int type, const std::string& address) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (inet_pton(AF_INET, address.c_str(), &a.sin_addr) != 1)
    throw std::runtime_error(fmt::format("address '{}' is not IPv4; give --remote-address", brief(address)));
  const int fd = check_rc(::socket(AF_INET, type | SOCK_CLOEXEC, 0), "socket");
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    const int e = errno;
    ::close(fd);
    throw std::runtime_error(fmt::format("cannot bind {}: {}", address, std::strerror(e)));
  }
  return fd;
}

/// A socket of `type` connected to IPv4 `address`:`port` (TCP_NODELAY on a stream, as on loopback):
/// the sending end of a data path across hosts (--remote). Throws "cannot connect to `what` at ...".
inline int connected_ipv4(int type, const std::string& address, int port, const std::string& what) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  if (inet_pton(AF_INET, address.c_str(), &a.sin_addr) != 1)
    throw std::runtime_error(fmt::format("{} reported address '{}', not IPv4", what, brief(address)));
  const int fd = check_rc(::socket(AF_INET, type | SOCK_CLOEXEC, 0), "socket");
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    const int e = errno;
    ::close(fd);
    throw std::runtime_error(
        fmt::format("cannot connect to {} at {}:{}: {}", what, address, port, std::strerror(e)));
  }
  if (type == SOCK_STREAM) {
    int one = 1;
    check_rc(::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one), "TCP_NODELAY");
  }
  return fd;
}

class FdEndpoint final : public Endpoint {
 public:
  FdEndpoint(int rfd, int wfd, Framing framing, bool socket, bool nonblocking, Credits* credits)
      : rfd_(rfd), wfd_(wfd), framing_(framing), socket_(socket), nb_(nonblocking), credits_(credits) {}

  void send(const std::byte* data, size_t len) override {
    if (credits_) credits_->take();
    size_t done = 0;
    while (done < len) {
      ssize_t n = socket_ ? ::send(wfd_, data + done, len - done, MSG_NOSIGNAL | (nb_ ? MSG_DONTWAIT : 0))
                          : ::write(wfd_, data + done, len - done);
      if (n < 0) {
        retry_errno("send", nb_);
        continue;
      }
      if (framing_ == Framing::Message && size_t(n) != len)
        throw std::runtime_error(fmt::format("short datagram send: {} of {} bytes", n, len));
      done += size_t(n);
    }
  }

  size_t recv(std::byte* buf, size_t len) override {
    size_t done = 0;
    while (done < len) {
      // MSG_TRUNC makes a datagram socket report the real length of a longer datagram.
      ssize_t n = socket_ ? ::recv(rfd_, buf + done, len - done,
                                   (framing_ == Framing::Message ? MSG_TRUNC : 0) | (nb_ ? MSG_DONTWAIT : 0))
                          : ::read(rfd_, buf + done, len - done);
      if (n < 0) {
        retry_errno("recv", nb_);
        continue;
      }
      if (n == 0 && framing_ == Framing::Stream) throw std::runtime_error("peer closed the channel");
      if (framing_ == Framing::Message && size_t(n) != len)
        throw std::runtime_error(fmt::format("datagram of {} bytes, expected {}", n, len));
      done += size_t(n);
    }
    if (credits_) credits_->give();
    return len;
  }

 private:
  int rfd_, wfd_;
  Framing framing_;
  bool socket_, nb_;
  Credits* credits_;
};

class FdTransport final : public Transport {
 public:
  struct Options {
    Framing framing = Framing::Stream;
    bool socket = true;
    bool nonblocking = false;
    uint64_t credit_window = 0;      // 0 = the kernel blocks the sender itself
    bool credits_on_socket = false;  // across hosts: the returns come back on the channel (Credits)
  };

  /// Makes one channel per round-trip pair, or one shared channel for throughput.
  FdTransport(const Params& p, Options o, const std::function<FdChannel()>& make) : o_(o) {
    const bool roundtrip = std_params::is_roundtrip(p);
    const int n = roundtrip ? int(p.i64_or("producers", 1)) : 1;
    try {
      for (int i = 0; i < n; ++i) channels_.push_back(make());
    } catch (...) {
      close_all();
      throw;
    }
    roundtrip_ = roundtrip;
    if (!roundtrip && o.credit_window) {
      void* mem = mmap(nullptr, sizeof(Credits), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
      if (mem == MAP_FAILED) {
        close_all();
        throw std::system_error(errno, std::generic_category(), "mmap credits");
      }
      credits_ = new (mem) Credits();
      credits_->window = o.credit_window;
      if (o.credits_on_socket) credits_->fd = channels_[0].prod_w;
    }
  }
  ~FdTransport() override {
    close_all();
    if (credits_) munmap(credits_, sizeof(Credits));
  }

  std::unique_ptr<Endpoint> open(Role role, int index) override {
    const FdChannel& c = channels_[roundtrip_ ? size_t(index) : 0];
    if (role == Role::Producer)
      return std::make_unique<FdEndpoint>(c.prod_r, c.prod_w, o_.framing, o_.socket, o_.nonblocking,
                                          credits_);
    return std::make_unique<FdEndpoint>(c.cons_r, c.cons_w, o_.framing, o_.socket, o_.nonblocking, credits_);
  }
  std::string object_name() const override {
    return channels_.empty() || channels_[0].paths.empty() ? "-" : channels_[0].paths[0];
  }
  void describe(nlohmann::json& extra) const override {
    if (credits_) extra["credit_window"] = credits_->window;
  }

 private:
  void close_all() {
    for (auto& c : channels_) {
      // A socket appears twice (read and write side): close each descriptor once.
      std::vector<int> fds;
      for (int fd : {c.prod_r, c.prod_w, c.cons_r, c.cons_w})
        if (fd >= 0 && std::find(fds.begin(), fds.end(), fd) == fds.end()) fds.push_back(fd);
      for (int fd : fds) ::close(fd);
      for (auto& path : c.paths) ipc::remove(ipc::Kind::Path, path);
    }
    channels_.clear();
  }
  Options o_;
  bool roundtrip_ = false;
  std::vector<FdChannel> channels_;
  Credits* credits_ = nullptr;
};

}  // namespace ipclab::transport
