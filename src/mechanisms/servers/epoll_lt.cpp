// servers/epoll_lt: one thread, epoll level-triggered: one read per readiness report.
#include "mechanisms/servers/reactor.hpp"
#include "mechanisms/servers/suite.hpp"

namespace ipclab::servers {
namespace {

IPCLAB_REGISTER(make_mechanism({
    .name = "epoll_lt",
    .help = "one thread, epoll level-triggered",
    .serve = [](int lfd, const Params&) { epoll_reactor(lfd, false); },
}));

}  // namespace
}  // namespace ipclab::servers
