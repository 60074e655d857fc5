// messaging/pipe: anonymous pipes (pipe2). Roundtrip uses one pipe per direction per pair;
// throughput one pipe from the producer to the consumer.
#include <fcntl.h>
#include <unistd.h>

#include "core/std_params.hpp"
#include "mechanisms/messaging/fd_transport.hpp"

namespace ipclab::messaging {
namespace {

FdChannel make_pipes(bool roundtrip, bool nonblocking) {
  const int flags = O_CLOEXEC | (nonblocking ? O_NONBLOCK : 0);
  int up[2], down[2] = {-1, -1};
  check_rc(::pipe2(up, flags), "pipe2");
  if (roundtrip && ::pipe2(down, flags) != 0) {
    ::close(up[0]);
    ::close(up[1]);
    check_rc(-1, "pipe2");
  }
  // Producer/client writes `up` and reads `down`; the consumer/server the reverse.
  return FdChannel{.prod_r = down[0], .prod_w = up[1], .cons_r = up[0], .cons_w = down[1]};
}

const Caps kCaps{.topology_why = "a pipe is a byte stream: several writers or readers would split messages"};

IPCLAB_REGISTER(Mechanism{
    .suite = "messaging",
    .name = "pipe",
    .help = "anonymous pipe (pipe2), one per direction",
    .params = suite_params({nonblocking()}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      const bool nb = p.flag("nonblocking"), roundtrip = std_params::is_roundtrip(p);
      return std::make_unique<FdTransport>(
          p, FdTransport::Options{.framing = Framing::Stream, .socket = false, .nonblocking = nb},
          [nb, roundtrip] { return make_pipes(roundtrip, nb); });
    },
    .check = [](const Params& p) { return check(kCaps, p); },
});

}  // namespace
}  // namespace ipclab::messaging
