// runtime/switch_asio: one coroutine switches n times with Asio (reference 003's "coroutine
// switch"): co_await asio::post(executor, asio::use_awaitable) queues the coroutine's continuation
// on the io_context and suspends until the scheduler runs it. (Asio 1.22's awaitable cannot co_await
// experimental::deferred operations directly -- that came in 1.24 -- so use_awaitable is the token.)
#include <asio/post.hpp>

#include "core/measure/session.hpp"
#include "mechanisms/runtime/asio.hpp"

namespace ipclab::rt {
namespace {

asio::awaitable<void> poster_n(uint64_t n, Tally& t) {
  auto ex = co_await asio::this_coro::executor;
  for (uint64_t i = 0; i < n; ++i) {
    co_await asio::post(ex, asio::use_awaitable);
    t.take(i, i);
  }
}

void switch_asio(Session& s) {
  const uint64_t n = uint64_t(s.params().i64("n"));
  const bool spawned = drive_spawned(s.params());
  asio::io_context ctx(1);
  measure_counted(s, n, 1, indexed, [&](uint64_t m) {
    Tally t;
    run_driven(ctx, spawned, 1, [&](asio::io_context& c, const asio_done& done) {
      asio::co_spawn(c, poster_n(m, t), then(done));
    });
    return t;
  });
}

IPCLAB_REGISTER(Mechanism{
    .suite = "runtime",
    .name = "switch_asio",
    .help = "Asio: co_await asio::post(ex, asio::use_awaitable) n times in one coroutine",
    .params = {switch_n(), drive_param()},
    .workload = switch_asio,
});

}  // namespace
}  // namespace ipclab::rt
