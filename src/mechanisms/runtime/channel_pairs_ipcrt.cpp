// runtime/channel_pairs_ipcrt: P producer/consumer pairs, n messages each, over ipcrt channels on
// one runtime (reference 003's "channel, task pairs"). ops = P * n.
#if __has_include(<ipcrt/ipcrt.hpp>)
#include <ipcrt/ipcrt.hpp>

#include "core/measure/session.hpp"
#include "mechanisms/runtime/channel_ipcrt.hpp"
#include "mechanisms/runtime/ipcrt.hpp"

namespace ipclab::rt {
namespace {

void channel_pairs_ipcrt(Session& s) {
  const uint64_t n = uint64_t(s.params().i64("n")), pairs = uint64_t(s.params().i64("pairs"));
  const size_t cap = size_t(s.params().i64("capacity"));
  const bool spawned = drive_spawned(s.params());
  ipcrt::runtime rt;
  // Batches of whole capacities of every pair's messages.
  measure_counted(
      s, n, cap, [pairs](uint64_t c) { return indexed(pairs * c); },
      [&](uint64_t c) { return run_driven(rt, spawned, ipcrt_pairs(pairs, c, cap)); });
}

IPCLAB_REGISTER(Mechanism{
    .suite = "runtime",
    .name = "channel_pairs_ipcrt",
    .help = "ipcrt: P pairs of producer/consumer tasks, n messages each through channel<uint64_t>",
    .params = {pairs_param(), pairs_n(), capacity_param(), drive_param_default_quick()},
    .workload = channel_pairs_ipcrt,
});

}  // namespace
}  // namespace ipclab::rt
#endif
