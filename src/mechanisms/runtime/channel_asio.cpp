// runtime/channel_asio: n messages through one Asio experimental::channel from a producer
// coroutine to a consumer coroutine (reference 003's "channel, number of messages").
#include "mechanisms/runtime/channel_asio.hpp"
#include "core/measure/session.hpp"

namespace ipclab::rt {
namespace {

void channel_asio(Session& s) {
  const uint64_t n = uint64_t(s.params().i64("n"));
  const size_t cap = size_t(s.params().i64("capacity"));
  const bool spawned = drive_spawned(s.params());
  asio::io_context ctx(1);
  // Batches of whole capacities: each fills and drains its channel as the steady state does.
  measure_counted(s, n, cap, indexed, [&](uint64_t c) { return asio_pairs(ctx, spawned, 1, c, cap); });
}

IPCLAB_REGISTER(Mechanism{
    .suite = "runtime",
    .name = "channel_asio",
    .help = "Asio: n messages through experimental::channel<void(error_code, uint64_t)>(capacity), one "
            "producer and one consumer coroutine",
    .params = {channel_n(), capacity_param(), drive_param_default_quick()},
    .workload = channel_asio,
});

}  // namespace
}  // namespace ipclab::rt
