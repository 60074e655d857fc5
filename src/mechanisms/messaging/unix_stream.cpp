// messaging/unix_stream: a connected AF_UNIX SOCK_STREAM socketpair per channel.
#include "core/transport/fd_transport.hpp"
#include "mechanisms/messaging/common.hpp"

namespace ipclab::messaging {
namespace {

const Caps kUnixStreamCaps{
    .topology_why = "a stream socket is a byte stream: several writers or readers would split messages"};

IPCLAB_REGISTER(Mechanism{
    .suite = "messaging",
    .name = "unix_stream",
    .help = "Unix-domain stream socketpair",
    .params = suite_params({nonblocking()}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<transport::FdTransport>(
          p,
          transport::FdTransport::Options{.framing = transport::Framing::Stream,
                                          .nonblocking = p.flag("nonblocking")},
          transport::stream_socketpair_channel);
    },
    .check = [](const Params& p) { return check(kUnixStreamCaps, p); },
});

}  // namespace
}  // namespace ipclab::messaging
