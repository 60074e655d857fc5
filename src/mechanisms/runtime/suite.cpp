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
});

}  // namespace
}  // namespace ipclab
