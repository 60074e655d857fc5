// messaging/udp: UDP datagrams over loopback (127.0.0.1), two sockets connected to each other.
// UDP has no back-pressure — a full receive buffer drops — so throughput bounds the messages in
// flight with credits in shared memory (queue_depth, further capped so that the window fits in
// the receive buffer); roundtrip has one message in flight and needs none.
#include <netinet/in.h>

#include "core/transport/fd_transport.hpp"
#include "mechanisms/messaging/common.hpp"

namespace ipclab::messaging {
namespace {

int bound_socket(sockaddr_in& a) {
  int fd = transport::check_rc(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), "socket");
  a = {};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof a;
  int buf = transport::kUdpRcvBuf;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &alen) < 0) {
    int e = errno;
    ::close(fd);
    throw std::system_error(e, std::generic_category(), "bind 127.0.0.1");
  }
  return fd;
}

transport::FdChannel connect_pair() {
  sockaddr_in ac, as;
  int c = bound_socket(ac);
  int s = -1;
  try {
    s = bound_socket(as);
    transport::check_rc(::connect(c, reinterpret_cast<sockaddr*>(&as), sizeof as), "connect");
    transport::check_rc(::connect(s, reinterpret_cast<sockaddr*>(&ac), sizeof ac), "connect");
  } catch (...) {
    ::close(c);
    if (s >= 0) ::close(s);
    throw;
  }
  return transport::FdChannel{.prod_r = c, .prod_w = c, .cons_r = s, .cons_w = s};
}

// The credit window (fd_transport.hpp), and a warning when the receive buffer caps it.
uint64_t credit_window(const Params& p, int rcvbuf) {
  const uint64_t asked = uint64_t(p.i64("queue_depth"));
  const uint64_t window = transport::credit_window(asked, uint64_t(p.i64("size")), rcvbuf);
  if (window < asked)
    warn_once("udp_window", fmt::format("udp: queue_depth {} capped to {} messages so that the window "
                                        "fits in the receive buffer ({} bytes; raise net.core.rmem_max)",
                                        asked, window, rcvbuf));
  return window;
}

const Caps kUdpCaps{
    .max_size = 65507, .size_limit_why = "largest UDP payload over IPv4", .shared_queue = true};

IPCLAB_REGISTER(Mechanism{
    .suite = "messaging",
    .name = "udp",
    .help = "UDP over loopback; throughput: producers share one socket, consumers the other, "
            "with credits so that nothing is dropped",
    .params = suite_params({nonblocking(),
                            queue_depth("256",
                                        "throughput: messages in flight (credit window; UDP has "
                                        "no back-pressure and would drop)")}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      transport::FdChannel probe = connect_pair();
      int rcvbuf = 0;
      socklen_t len = sizeof rcvbuf;
      ::getsockopt(probe.cons_r, SOL_SOCKET, SO_RCVBUF, &rcvbuf, &len);
      ::close(probe.prod_r);
      ::close(probe.cons_r);
      return std::make_unique<transport::FdTransport>(
          p,
          transport::FdTransport::Options{.framing = transport::Framing::Message,
                                          .nonblocking = p.flag("nonblocking"),
                                          .credit_window = credit_window(p, rcvbuf)},
          connect_pair);
    },
    .check = [](const Params& p) { return check(kUdpCaps, p); },
});

}  // namespace
}  // namespace ipclab::messaging
