// servers/epoll_reuseport: `reactors` epoll reactors (level-triggered), each a thread pinned to a
// CPU of its own with its own SO_REUSEPORT listener on the same port, so the kernel spreads
// connections without a shared accept queue. The suite runs the reactors (suite.cpp, core/peers/server).
#include "mechanisms/servers/reactor.hpp"
#include "mechanisms/servers/suite.hpp"

namespace ipclab::servers {
namespace {

IPCLAB_REGISTER(make_mechanism({
    .name = "epoll_reuseport",
    .help = "`reactors` epoll reactor threads, each pinned, each with its own SO_REUSEPORT listener",
    .multi_reactor = true,
    .serve = [](int lfd, const Params&) { epoll_reactor(lfd, false); },
}));

}  // namespace
}  // namespace ipclab::servers
