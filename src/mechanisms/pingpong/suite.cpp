// The pingpong suite's declaration: the plots its report shows and the dimension it scales over.
#include "core/model/mechanism.hpp"

namespace ipclab {
namespace {

IPCLAB_REGISTER(Suite{
    .name = "pingpong",
    .plots = {"system_ops_vs_pairs", "fairness_vs_pairs", "latency_cdf_by_wait"},
    .scaling = {"pairs"},
});

}  // namespace
}  // namespace ipclab
