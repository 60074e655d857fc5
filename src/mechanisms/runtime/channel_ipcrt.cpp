// runtime/channel_ipcrt: n messages through one ipcrt channel<uint64_t> from a producer task to a
// consumer task (reference 003's "channel, number of messages"). Message i carries i; the consumer
// checks each arrives in order.
#if __has_include(<ipcrt/ipcrt.hpp>)
#include <ipcrt/ipcrt.hpp>

#include "core/measure/session.hpp"
#include "mechanisms/runtime/channel_ipcrt.hpp"
#include "mechanisms/runtime/ipcrt.hpp"

namespace ipclab::rt {
namespace {

void channel_ipcrt(Session& s) {
  const uint64_t n = uint64_t(s.params().i64("n"));
  const size_t cap = size_t(s.params().i64("capacity"));
  const bool spawned = drive_spawned(s.params());
  ipcrt::runtime rt;
  // Batches of whole capacities: each fills and drains its channel as the steady state does.
  measure_counted(s, n, cap, indexed,
                  [&](uint64_t c) { return run_driven(rt, spawned, ipcrt_pairs(1, c, cap)); });
}

IPCLAB_REGISTER(Mechanism{
    .suite = "runtime",
    .name = "channel_ipcrt",
    .help = "ipcrt: n messages through channel<uint64_t>(capacity), one producer and one consumer task",
    .params = {channel_n(), capacity_param(), drive_param_default_quick()},
    .workload = channel_ipcrt,
});

}  // namespace
}  // namespace ipclab::rt
#endif
