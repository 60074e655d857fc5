// servers/epoll_et: one thread, epoll edge-triggered: each report must be drained to EAGAIN.
#include "mechanisms/servers/reactor.hpp"
#include "mechanisms/servers/suite.hpp"

namespace ipclab::servers {
namespace {

IPCLAB_REGISTER(make_mechanism({
    .name = "epoll_et",
    .help = "one thread, epoll edge-triggered (reads drained to EAGAIN)",
    .serve = [](int lfd, const Params&) { epoll_reactor(lfd, true); },
}));

}  // namespace
}  // namespace ipclab::servers
