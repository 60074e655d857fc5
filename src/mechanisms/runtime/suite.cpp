// The runtime suite's declaration (reference 003's spawn, switch and channel figures, plus timers).
#include "core/model/mechanism.hpp"

namespace ipclab {
namespace {

IPCLAB_REGISTER(Suite{
    .name = "runtime",
    .help = "coroutine runtime primitives, ipcrt against Asio side by side: spawn+join, switch "
            "(yield/post), channel messages (1 pair and P pairs), timer arm+fire; ns per operation",
    .plots = {"time_per_operation_panels"},
    .scaling = {"pairs"},
    .tables = {{.id = "switch",
                .title = "Switch: a task yields and is resumed",
                .where = "prefix=switch",
                .figures = {{"time/op", "time"}, {"CPU/op", "cpu"}, {"ctx/op", "ctx"}},
                .label = "runtime"},
               {.id = "switch_many",
                .title = "Switch with many tasks: tasks yield round-robin",
                .where = "prefix=switch_many",
                .figures = {{"time/op", "time"}, {"CPU/op", "cpu"}, {"ctx/op", "ctx"}},
                .label = "runtime"},
               {.id = "spawn",
                .title = "Spawn and join a task",
                .where = "prefix=spawn",
                .figures = {{"time/op", "time"}, {"CPU/op", "cpu"}, {"ctx/op", "ctx"}},
                .label = "runtime"},
               {.id = "channel",
                .title = "Channel: a message from one task to another",
                .where = "prefix=channel",
                .figures = {{"time/op", "time"}, {"CPU/op", "cpu"}, {"ctx/op", "ctx"}},
                .label = "runtime"},
               {.id = "channel_pairs",
                .title = "Channel pairs: many producer/consumer pairs on one thread",
                .where = "prefix=channel_pairs",
                .figures = {{"time/op", "time"}, {"CPU/op", "cpu"}, {"ctx/op", "ctx"}},
                .label = "runtime"},
               {.id = "timer",
                .title = "Timer: arm and fire",
                .where = "prefix=timer",
                .figures = {{"time/op", "time"}, {"CPU/op", "cpu"}, {"ctx/op", "ctx"}},
                .label = "runtime"}},
    .answers = {"task_switch"},
});

}  // namespace
}  // namespace ipclab
