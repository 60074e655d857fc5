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
    .tables =
        {{.id = "roundtrip",
          .title = "Round trips beside the transport under each library (RTT; CPU of every side and daemon "
                   "per round trip)",
          .where = "pattern=roundtrip",
          .figures = {{"library", "extra_text:library"},
                      {"kernel", "extra_text:kernel_transport"},
                      {"RTT p50", "latency:p50"},
                      {"RTT p99", "latency:p99"},
                      {"CPU/rt", "cpu"},
                      {"daemon CPU/rt", "daemon_cpu"},
                      {"beside", "beside"},
                      {"its p50", "beside_latency:p50"},
                      {"p50 over it", "latency_over_beside:p50"}}},
         {.id = "throughput",
          .title =
              "Throughput beside the transport under each library (messages per second; CPU per message)",
          .where = "pattern=throughput",
          .figures = {{"library", "extra_text:library"},
                      {"kernel", "extra_text:kernel_transport"},
                      {"msg/s", "rate"},
                      {"CPU/msg", "cpu"},
                      {"daemon CPU/msg", "daemon_cpu"},
                      {"beside", "beside"},
                      {"its msg/s", "beside_rate"},
                      {"rate of it", "rate_over_beside"}}}},
    // The transport under each library is measured by the messaging suite's mechanisms.
    .beside = "messaging",
});

}  // namespace
}  // namespace ipclab
