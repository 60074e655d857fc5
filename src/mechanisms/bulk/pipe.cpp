// bulk/pipe: the copying baseline — write() into an anonymous pipe, read() out of it: two copies
// through the kernel's pipe pages. Pipes are grown to the message size, at most
// /proc/sys/fs/pipe-max-size (1 MiB by default; a larger message passes in pieces).
#include "core/model/std_params.hpp"
#include "core/transport/fd_transport.hpp"
#include "mechanisms/bulk/common.hpp"

namespace ipclab::bulk {
namespace {

IPCLAB_REGISTER(Mechanism{
    .suite = "bulk",
    .name = "pipe",
    .help = "write() into a pipe and read() out of it (two copies), pipes grown to the message size",
    .params = suite_params(),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      const bool roundtrip = std_params::is_roundtrip(p);
      const size_t size = size_t(p.i64("size"));
      return std::make_unique<transport::FdTransport>(
          p, transport::FdTransport::Options{.framing = transport::Framing::Stream, .socket = false},
          [roundtrip, size] {
            transport::FdChannel c = transport::pipe_channel(roundtrip, false);
            grow_pipe(c.prod_w, size);
            if (roundtrip) grow_pipe(c.cons_w, size);
            return c;
          });
    },
    .check = [](const Params& p) { return check(Caps{}, p); },
});

}  // namespace
}  // namespace ipclab::bulk
