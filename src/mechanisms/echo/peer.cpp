// echo/peer: any echo server executable (the Rust and Go peers, or a reader's own), started with
// `<server> --size=<bytes> --connections=<n>` and held to the contract of docs/echo.md:
// listen on 127.0.0.1 (port 0 = the kernel's choice), print the port as one decimal line on
// stdout once listening, echo every byte back, and run until killed.
#include "core/machine/home.hpp"
#include "core/measure/session.hpp"
#include "mechanisms/echo/common.hpp"

namespace ipclab::echo {
namespace {

IPCLAB_REGISTER(Mechanism{
    .suite = "echo",
    .name = "peer",
    .help = "an external echo server executable (-p server=/abs/path), see docs/echo.md; the "
            "default is the minimal Python example of the contract",
    .params = suite_params({{.name = "server",
                             .type = ParamType::String,
                             .def = source_file("tests/echo/echo_server.py"),
                             .help = "absolute path of the server executable (skipped when missing)",
                             .path = true}}),
    .workload = run_echo,
    .server =
        [](const Session& s) {
          const Params& p = s.params();
          return ServerLaunch{
              .argv = {p.str("server"), "--size=" + p.str("size"), "--connections=" + p.str("connections")}};
        },
    .check = suite_check("peer", false),
});

}  // namespace
}  // namespace ipclab::echo
