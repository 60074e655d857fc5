// servers/blocking_1th: the reference's first model — one thread accepts a connection and serves it
// to the end before accepting the next, so every other client waits in the listen backlog.
#include <sys/socket.h>

#include "mechanisms/servers/protocol.hpp"
#include "mechanisms/servers/suite.hpp"

namespace ipclab::servers {
namespace {

IPCLAB_REGISTER(make_mechanism({
    .name = "blocking_1th",
    .help = "one thread, blocking accept then blocking reads: one client at a time",
    .event_driven = false,
    .serve =
        [](int lfd, const Params&) {
          for (;;) {
            int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd >= 0) serve_blocking(fd);
          }
        },
}));

}  // namespace
}  // namespace ipclab::servers
