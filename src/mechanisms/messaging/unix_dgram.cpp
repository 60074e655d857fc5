// messaging/unix_dgram: a connected AF_UNIX SOCK_DGRAM socketpair per channel. Every call moves
// one whole message, so in throughput all producers share one end and all consumers the other:
// the socket's queue is the shared queue.
#include "core/transport/fd_transport.hpp"
#include "mechanisms/messaging/common.hpp"

namespace ipclab::messaging {
namespace {

const Caps kUnixDgramCaps{.max_size = 65536, .shared_queue = true};

IPCLAB_REGISTER(Mechanism{
    .suite = "messaging",
    .name = "unix_dgram",
    .help = "Unix-domain datagram socketpair; throughput: every producer sends on one end, every consumer "
            "receives on the other",
    .params = suite_params({nonblocking()}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<transport::FdTransport>(
          p,
          transport::FdTransport::Options{.framing = transport::Framing::Message,
                                          .nonblocking = p.flag("nonblocking")},
          [] {
            int sv[2];
            transport::check_rc(::socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv), "socketpair");
            return transport::FdChannel{.prod_r = sv[0], .prod_w = sv[0], .cons_r = sv[1], .cons_w = sv[1]};
          });
    },
    .check = [](const Params& p) { return check(kUnixDgramCaps, p); },
});

}  // namespace
}  // namespace ipclab::messaging
