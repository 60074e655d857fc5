// runtime/spawn_asio: spawn+join of n empty coroutines with Asio's co_spawn (reference 003's
// "coroutine spawn"): co_spawn(io_context, task(i), handler) per task, in batches; the completion
// handler is the join and adds the task's result, which must total 0+1+...+n-1.
#include <exception>

#include "core/measure/session.hpp"
#include "mechanisms/runtime/asio.hpp"

namespace ipclab::rt {
namespace {

asio::awaitable<uint64_t> asio_leaf(uint64_t i) { co_return i; }

void spawn_asio(Session& s) {
  const uint64_t n = uint64_t(s.params().i64("n")), batch = uint64_t(s.params().i64("batch"));
  const bool spawned = drive_spawned(s.params());
  asio::io_context ctx(1);
  // Batches of whole `batch`es: the tasks in flight stay `batch`.
  measure_counted(s, n, batch, indexed, [&](uint64_t c) {
    Tally t;
    for (uint64_t base = 0; base < c; base += batch) {
      const uint64_t end = std::min(c, base + batch);
      run_driven(ctx, spawned, end - base, [&](asio::io_context& c, const asio_done& done) {
        for (uint64_t i = base; i < end; ++i)
          asio::co_spawn(c, asio_leaf(i), [&t, &done, i](std::exception_ptr e, uint64_t v) {
            if (e) std::rethrow_exception(e);
            t.take(v, i);
            done();
          });
      });
    }
    return t;
  });
}

IPCLAB_REGISTER(Mechanism{
    .suite = "runtime",
    .name = "spawn_asio",
    .help = "Asio: co_spawn n empty awaitables on an io_context, joined by their completion handlers (in "
            "batches)",
    .params = {spawn_n(), batch_param(), drive_param_default_quick()},
    .workload = spawn_asio,
});

}  // namespace
}  // namespace ipclab::rt
