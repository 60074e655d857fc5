// servers/epoll_reuseport: one epoll reactor per CPU of --cpus, each with its own SO_REUSEPORT
// listener on the same port, so the kernel spreads connections without a shared accept queue.
#include <thread>

#include "core/listener.hpp"
#include "core/placement.hpp"
#include "mechanisms/servers/reactor.hpp"
#include "mechanisms/servers/suite.hpp"

namespace ipclab::servers {
namespace {

IPCLAB_REGISTER(make_mechanism({
    .name = "epoll_reuseport",
    .help = "one epoll reactor thread per --cpus CPU, SO_REUSEPORT listeners",
    .reuseport = true,
    .serve =
        [](int lfd, const Params&, const std::vector<int>& cpus, int backlog) {
          const int port = local_port(lfd);
          std::vector<std::thread> ts;
          for (size_t i = 1; i < cpus.size(); ++i) {
            int l = listen_tcp(port, backlog, true, true);
            ts.emplace_back([l, cpu = cpus[i]] {
              pin_current_thread(cpu);
              epoll_reactor(l, false);
            });
          }
          if (!cpus.empty()) pin_current_thread(cpus[0]);
          epoll_reactor(lfd, false);
        },
}));

}  // namespace
}  // namespace ipclab::servers
