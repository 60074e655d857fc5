// servers/select: one thread, select() over the listener and every connection. An fd_set holds
// descriptors below FD_SETSIZE (1024) only, so concurrency above ~1000 is skipped with that reason.
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <map>

#include "mechanisms/servers/protocol.hpp"
#include "mechanisms/servers/suite.hpp"

namespace ipclab::servers {
namespace {

// Descriptors the server process holds besides connections (stdio, listener, inherited pipes).
constexpr size_t kReserve = 24;

IPCLAB_REGISTER(make_mechanism({
    .name = "select",
    .help = "one thread, select(): at most FD_SETSIZE (1024) descriptors",
    .max_concurrency = FD_SETSIZE - kReserve,
    .max_why = fmt::format("select: an fd_set holds descriptors below FD_SETSIZE = {}, so at most {} "
                           "concurrent clients; use poll or epoll beyond that",
                           FD_SETSIZE, FD_SETSIZE - kReserve),
    .serve =
        [](int lfd, const Params&) {
          std::map<int, ProtocolConn> conns;
          for (;;) {
            fd_set rd;
            FD_ZERO(&rd);
            FD_SET(lfd, &rd);
            int maxfd = lfd;
            for (auto& [fd, pc] : conns) {
              FD_SET(fd, &rd);
              maxfd = std::max(maxfd, fd);
            }
            if (::select(maxfd + 1, &rd, nullptr, nullptr, nullptr) <= 0) continue;
            if (FD_ISSET(lfd, &rd)) {
              for (;;) {
                int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd < 0) break;
                if (fd >= FD_SETSIZE)
                  ::close(fd);  // cannot be watched: refuse rather than corrupt memory
                else
                  conns.emplace(fd, ProtocolConn{});
              }
            }
            for (auto it = conns.begin(); it != conns.end();) {
              if (FD_ISSET(it->first, &rd) && !serve_ready(it->first, it->second, false)) {
                ::close(it->first);
                it = conns.erase(it);
              } else {
                ++it;
              }
            }
          }
        },
}));

}  // namespace
}  // namespace ipclab::servers
