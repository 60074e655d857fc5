// The libs suite: messaging libraries under the harness's patterns, integrity checks and CPU
// accounting, each record naming the library's version and the kernel transport it rode on
// (extra.library, extra.kernel_transport), so that it can be read beside that transport's own
// figures in the messaging suite.
#include "core/model/mechanism.hpp"

namespace ipclab {
namespace {

IPCLAB_REGISTER(Suite{
    .name = "libs",
    .help = "messaging libraries (ZeroMQ, nng, gRPC over ipc, tcp and inproc; iceoryx in shared memory "
            "through its RouDi; "
            "D-Bus through a private dbus-daemon), beside the transports they ride on",
});

}  // namespace
}  // namespace ipclab
