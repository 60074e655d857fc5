// echo/go: the Go echo server (peers/go/cmd/echo-server): a goroutine per connection, blocking
// Read then Write on net.Conn over Go's netpoller, GOMAXPROCS 1 by default. Started through the
// peer server contract of docs/echo.md, pinned to the server CPU like every other server.
#include "core/measure/session.hpp"
#include "mechanisms/echo/common.hpp"
#include "mechanisms/go_peers.hpp"

#ifndef IPCLAB_GO_ECHO_SERVER
#define IPCLAB_GO_ECHO_SERVER ""
#endif

namespace ipclab::echo {
namespace {

IPCLAB_REGISTER(Mechanism{
    .suite = "echo",
    .name = "go",
    .help = "Go standard library: goroutine per connection, net.Conn Read → Write (netpoller)",
    .params = suite_params({go::gomaxprocs_param()}),
    .workload = run_echo,
    .server =
        [](const Session& s) {
          const Params& p = s.params();
          return ServerLaunch{.argv = {go::peer_path(IPCLAB_GO_ECHO_SERVER, "go_peers"),
                                       "--size=" + p.str("size"), "--connections=" + p.str("connections"),
                                       "--gomaxprocs=" + p.str("gomaxprocs")}};
        },
    .check = suite_check("go", false),
});

}  // namespace
}  // namespace ipclab::echo
