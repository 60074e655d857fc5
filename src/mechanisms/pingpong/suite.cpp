// The pingpong suite's declaration: the plots its report shows and the dimension it scales over.
#include "core/model/mechanism.hpp"

namespace ipclab {
namespace {

IPCLAB_REGISTER(Suite{
    .name = "pingpong",
    .plots = {"system_ops_vs_pairs", "fairness_vs_pairs", "latency_cdf_by_wait"},
    .scaling = {"pairs"},
    .tables = {{.id = "ops",
                .title = "System effective OPS: round trips of all pairs per second of wall time",
                .figures = {{"", "rate:system_effective_ops"}},
                .label = "guest",
                .across = "pairs"},
               {.id = "fairness",
                .title = "Fairness: the slowest pair's rate over the fastest's",
                .where = "pairs>1",
                .figures = {{"", "extra_ratio:fairness"}},
                .label = "guest",
                .across = "pairs"},
               {.id = "one_pair",
                .title = "One pair: round trip, CPU and context switches",
                .where = "pairs=1",
                .figures = {{"RTT p50", "latency:p50"},
                            {"RTT p99", "latency:p99"},
                            {"time/round trip", "time"},
                            {"CPU/round trip", "cpu"},
                            {"ctx/round trip", "ctx"}},
                .label = "guest"}},
});

}  // namespace
}  // namespace ipclab
