// The runtime suite's declaration (reference 003's spawn, switch and channel figures, plus timers).
#include "core/model/mechanism.hpp"

namespace ipclab {
namespace {

// A bench's table of the page: the mechanisms named `bench`_<runtime>, under their runtime.
Suite::Table bench_table(const std::string& bench, const std::string& title) {
  return {.id = bench,
          .title = title,
          .where = "prefix=" + bench,
          .figures = {{"time/op", "time"}, {"CPU/op", "cpu"}, {"ctx/op", "ctx"}},
          .label = "runtime"};
}

IPCLAB_REGISTER(Suite{
    .name = "runtime",
    .help = "coroutine runtime primitives, ipcrt against Asio side by side: spawn+join, switch "
            "(yield/post), channel messages (1 pair and P pairs), timer arm+fire; ns per operation",
    .plots = {"time_per_operation_panels"},
    .scaling = {"pairs"},
    .tables = {bench_table("switch", "Switch: a task yields and is resumed"),
               bench_table("switch_many", "Switch with many tasks: tasks yield round-robin"),
               bench_table("spawn", "Spawn and join a task"),
               bench_table("channel", "Channel: a message from one task to another"),
               bench_table("channel_pairs", "Channel pairs: many producer/consumer pairs on one thread"),
               bench_table("timer", "Timer: arm and fire")},
    .answers = {"task_switch"},
});

}  // namespace
}  // namespace ipclab
