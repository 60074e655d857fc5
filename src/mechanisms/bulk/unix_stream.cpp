// bulk/unix_stream: the copying baseline over a Unix stream socketpair — send() copies into
// socket buffers, recv() out of them, with the kernel's default buffer sizes.
#include "core/transport/fd_transport.hpp"
#include "mechanisms/bulk/common.hpp"

namespace ipclab::bulk {
namespace {

IPCLAB_REGISTER(Mechanism{
    .suite = "bulk",
    .name = "unix_stream",
    .help = "send() and recv() over a Unix stream socketpair (two copies)",
    .params = suite_params(),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<transport::FdTransport>(
          p, transport::FdTransport::Options{.framing = transport::Framing::Stream},
          transport::stream_socketpair_channel);
    },
    .check = [](const Params& p) { return check(Caps{}, p); },
});

}  // namespace
}  // namespace ipclab::bulk
