// runtime/channel_pairs_asio: P producer/consumer pairs, n messages each, over Asio
// experimental::channel on one io_context (reference 003's "channel, task pairs"). ops = P * n.
#include "core/measure/session.hpp"
#include "mechanisms/runtime/channel_asio.hpp"

namespace ipclab::rt {
namespace {

void channel_pairs_asio(Session& s) {
  const uint64_t n = uint64_t(s.params().i64("n")), pairs = uint64_t(s.params().i64("pairs"));
  const size_t cap = size_t(s.params().i64("capacity"));
  const bool spawned = drive_spawned(s.params());
  asio::io_context ctx(1);
  // Batches of whole capacities of every pair's messages.
  measure_counted(
      s, n, cap, [pairs](uint64_t c) { return indexed(pairs * c); },
      [&](uint64_t c) { return asio_pairs(ctx, spawned, pairs, c, cap); });
}

IPCLAB_REGISTER(Mechanism{
    .suite = "runtime",
    .name = "channel_pairs_asio",
    .help = "Asio: P pairs of producer/consumer coroutines, n messages each through experimental::channel",
    .params = {pairs_param(), pairs_n(), capacity_param(), drive_param_default_quick()},
    .workload = channel_pairs_asio,
});

}  // namespace
}  // namespace ipclab::rt
