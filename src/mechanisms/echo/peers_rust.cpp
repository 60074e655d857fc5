// echo/<rt>: echo servers on the Rust runtimes (peers/rust): Tokio current_thread and
// multi_thread, Monoio (IoUringDriver) and Compio (io_uring); a task per connection reading up to
// 64 KiB and writing it all back, each in its runtime's idiomatic API. They follow the server
// contract of docs/echo.md, so the harness's client drives, verifies and times them as it does
// echo/uring, and measures the server process's CPU.
#include <fmt/format.h>

#include "core/measure/session.hpp"
#include "mechanisms/echo/common.hpp"
#include "mechanisms/rust_peers.hpp"

namespace ipclab::echo {
namespace {

const bool registered = [] {
  for (const RustRuntime& rt : kRustRuntimes)
    Registry::get().add(Mechanism{
        .suite = "echo",
        .name = rt.suffix,
        .help = fmt::format("{} echo server, a task per connection (Rust peer, peers/rust)", rt.what),
        .params = suite_params(),
        .workload =
            [&rt](Session& s) {
              run_echo(s);
              s.record().extra["runtime"] = rt.suffix;
            },
        .server =
            [&rt](const Session& s) {
              const Params& p = s.params();
              ServerLaunch launch{.argv = {rust_peer(rt.binary), "--bench=echo", "--size=" + p.str("size"),
                                           "--connections=" + p.str("connections")}};
              if (*rt.flavor) launch.argv.push_back(fmt::format("--flavor={}", rt.flavor));
              return launch;
            },
        .check = suite_check(rt.suffix, false),
    });
  return true;
}();

}  // namespace
}  // namespace ipclab::echo
