// messaging/pipe: anonymous pipes (pipe2). Roundtrip uses one pipe per direction per pair;
// throughput one pipe from the producer to the consumer.
#include "core/model/std_params.hpp"
#include "core/transport/fd_transport.hpp"
#include "mechanisms/messaging/common.hpp"

namespace ipclab::messaging {
namespace {

const Caps kPipeCaps{.topology_why =
                         "a pipe is a byte stream: several writers or readers would split messages"};

IPCLAB_REGISTER(Mechanism{
    .suite = "messaging",
    .name = "pipe",
    .help = "anonymous pipe (pipe2), one per direction",
    .params = suite_params({nonblocking()}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      const bool nb = p.flag("nonblocking"), roundtrip = std_params::is_roundtrip(p);
      return std::make_unique<transport::FdTransport>(
          p,
          transport::FdTransport::Options{
              .framing = transport::Framing::Stream, .socket = false, .nonblocking = nb},
          [nb, roundtrip] { return transport::pipe_channel(roundtrip, nb); });
    },
    .check = [](const Params& p) { return check(kPipeCaps, p); },
});

}  // namespace
}  // namespace ipclab::messaging
