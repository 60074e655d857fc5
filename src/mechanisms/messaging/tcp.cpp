// messaging/tcp: a TCP connection over loopback (127.0.0.1) per channel, TCP_NODELAY on both ends
// so that small messages leave at once instead of waiting for Nagle's coalescing.
#include "core/transport/fd_transport.hpp"
#include "mechanisms/messaging/common.hpp"

namespace ipclab::messaging {
namespace {

const Caps kTcpCaps{.topology_why =
                        "a TCP connection is a byte stream: several writers or readers would split messages"};

IPCLAB_REGISTER(Mechanism{
    .suite = "messaging",
    .name = "tcp",
    .help = "TCP over loopback, TCP_NODELAY",
    .params = suite_params({nonblocking()}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<transport::FdTransport>(
          p,
          transport::FdTransport::Options{.framing = transport::Framing::Stream,
                                          .nonblocking = p.flag("nonblocking")},
          transport::tcp_loopback_channel);
    },
    .check = [](const Params& p) { return check(kTcpCaps, p); },
});

}  // namespace
}  // namespace ipclab::messaging
