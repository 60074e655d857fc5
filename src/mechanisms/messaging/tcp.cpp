// messaging/tcp: a TCP connection over loopback (127.0.0.1) per channel, TCP_NODELAY on both ends
// so that small messages leave at once instead of waiting for Nagle's coalescing.
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "mechanisms/messaging/fd_transport.hpp"

namespace ipclab::messaging {
namespace {

FdChannel connect_pair() {
  int l = check_rc(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), "socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // loopback only, port chosen by the kernel
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

const Caps kCaps{.topology_why =
                     "a TCP connection is a byte stream: several writers or readers would split messages"};

IPCLAB_REGISTER(Mechanism{
    .suite = "messaging",
    .name = "tcp",
    .help = "TCP over loopback, TCP_NODELAY",
    .params = suite_params({nonblocking()}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<FdTransport>(
          p, FdTransport::Options{.framing = Framing::Stream, .nonblocking = p.flag("nonblocking")},
          connect_pair);
    },
    .check = [](const Params& p) { return check(kCaps, p); },
});

}  // namespace
}  // namespace ipclab::messaging
