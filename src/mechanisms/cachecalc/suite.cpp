// The cachecalc suite's declaration (reference 000's "cache calc" pattern).
#include "core/model/mechanism.hpp"

namespace ipclab {
namespace {

IPCLAB_REGISTER(Suite{
    .name = "cachecalc",
    .help = "reference 000's cache calc: 1000 tasks of calc -> delay -> calc on a shared 10-key "
            "string map, per concurrency model (std threads, std::async, a thread pool, Asio pools, "
            "strands and coroutines, the ipcrt runtime, sharded ipcrt); time and CPU per iteration. "
            "The reference's Folly and Seastar variants are left out: neither library is packaged "
            "on Debian bookworm (sharded is our Seastar-style shared-nothing variant)",
    .plots = {"wall_and_cpu_per_iteration"},
    .tables = {{.id = "iteration",
                .title = "An iteration: 1000 tasks of calc, delay, calc",
                .figures = {{"wall/iteration", "time"}, {"CPU/iteration", "cpu"}}}},
});

}  // namespace
}  // namespace ipclab
