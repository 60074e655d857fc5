// runtime/switch_many_asio: `tasks` coroutines each co_await asio::post n/tasks times on one
// io_context, round-robin through its queue (issue 20's many-task switch). ops = the switches
// done, tasks * (n/tasks). Each coroutine's completion handler takes its switch_many_result(index,
// its posts) against its own index; the results are also checked in sum.
#include <exception>

#include <asio/post.hpp>

#include "core/measure/session.hpp"
#include "mechanisms/runtime/asio.hpp"

namespace ipclab::rt {
namespace {

asio::awaitable<uint64_t> poster_many(uint64_t index, uint64_t per) {
  auto ex = co_await asio::this_coro::executor;
  uint64_t posts = 0;
  for (; posts < per; ++posts) co_await asio::post(ex, asio::use_awaitable);
  co_return switch_many_result(index, posts, per);
}

void switch_many_asio(Session& s) {
  const uint64_t tasks = uint64_t(s.params().i64("tasks")), per = uint64_t(s.params().i64("n")) / tasks;
  const bool spawned = drive_spawned(s.params());
  asio::io_context ctx(1);
  // A batch is m yields of every task; task i's result is then (i + 1) * m: the sum is
  // m * (1 + 2 + ... + tasks).
  const auto expect = [tasks](uint64_t m) { return Expect{tasks * m, tasks, m * index_sum(tasks + 1)}; };
  measure_counted(s, per, 1, expect, [&](uint64_t m) {
    Tally t;
    run_driven(ctx, spawned, tasks, [&](asio::io_context& c, const asio_done& done) {
      for (uint64_t i = 0; i < tasks; ++i)
        asio::co_spawn(c, poster_many(i, m), [&t, &done, i, m](std::exception_ptr e, uint64_t v) {
          if (e) std::rethrow_exception(e);
          t.take(v, switch_many_result(i, m, m));
          done();
        });
    });
    return t;
  });
}

IPCLAB_REGISTER(Mechanism{
    .suite = "runtime",
    .name = "switch_many_asio",
    .help = "Asio: `tasks` coroutines co_await asio::post(ex, use_awaitable) n/tasks times each, round-robin",
    .params = {switch_n(), tasks_param(), drive_param()},
    .workload = switch_many_asio,
    .check = switch_many_check,
});

}  // namespace
}  // namespace ipclab::rt
