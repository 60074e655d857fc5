// The anchors suite's declaration: the machine's floors, against which the other figures are read.
#include "core/model/mechanism.hpp"

namespace ipclab {
namespace {

IPCLAB_REGISTER(Suite{
    .name = "anchors",
    .tables = {{.id = "anchors",
                .title = "Floors: a null system call, a futex wake round trip, a cache line between CPUs",
                .figures = {{"time/op", "time"},
                            {"p50", "latency:p50"},
                            {"p99", "latency:p99"},
                            {"CPU/op", "cpu"},
                            {"ctx/op", "ctx"}}}},
    .floors = true,
});

}  // namespace
}  // namespace ipclab
