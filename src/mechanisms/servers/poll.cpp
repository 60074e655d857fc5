// servers/poll: one thread, poll() over an array of every connection (no FD_SETSIZE limit, but
// the kernel walks the whole array on every call).
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mechanisms/servers/protocol.hpp"
#include "mechanisms/servers/suite.hpp"

namespace ipclab::servers {
namespace {

IPCLAB_REGISTER(make_mechanism({
    .name = "poll",
    .help = "one thread, poll() over every connection",
    .serve =
        [](int lfd, const Params&) {
          std::vector<pollfd> fds{{lfd, POLLIN, 0}};
          std::vector<ProtocolConn> pcs(1);
          for (;;) {
            if (::poll(fds.data(), fds.size(), -1) <= 0) continue;
            const size_t n = fds.size();
            for (size_t i = n; i-- > 1;) {
              if (!fds[i].revents) continue;
              if (!serve_ready(fds[i].fd, pcs[i], false)) {
                ::close(fds[i].fd);
                fds[i] = fds.back();  // swap-remove: order does not matter to poll
                pcs[i] = pcs.back();
                fds.pop_back();
                pcs.pop_back();
              }
            }
            if (fds[0].revents) {
              for (;;) {
                int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd < 0) break;
                fds.push_back({fd, POLLIN, 0});
                pcs.emplace_back();
              }
            }
          }
        },
}));

}  // namespace
}  // namespace ipclab::servers
