// cachecalc/asio_io_context: coroutines on one single-threaded io_context, no pool, no strand
// (BM_cachecalc_boost_coroutine_io_context).
#if __has_include(<asio.hpp>)
#include <asio.hpp>

#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"
#include "mechanisms/cachecalc/workload.hpp"

namespace ipclab::cachecalc {
namespace {

asio::awaitable<void> io_context_task(Cache& c, CalcFn calc, std::chrono::microseconds delay) {
  calc(c);
  asio::steady_timer timer(co_await asio::this_coro::executor, delay);
  co_await timer.async_wait(asio::use_awaitable);
  calc(c);
}

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "asio_io_context",
    .help = "BM_cachecalc_boost_coroutine_io_context: 1000 asio::awaitable tasks on one io_context "
            "run by the calling thread (default concurrency hint, as the reference); the delay an "
            "asynchronous steady_timer, all waits overlapped. delay_kind is timer only: a blocking "
            "delay on the one thread would serialise all 1000 waits",
    .params = {delay_param(), calc_param(), delay_kind_param({"timer"})},
    .workload =
        [](Session& s) {
          const auto delay = std::chrono::microseconds(s.params().i64("delay_us"));
          const CalcFn calc = calc_of(s.params());
          asio::io_context io;
          run_iterations(s, [&] {
            Cache c = fresh_cache();
            for (int t = 0; t < kTasks; ++t)
              asio::co_spawn(io, io_context_task(c, calc, delay), asio::detached);
            io.run();
            io.restart();
            return verify(c);
          });
        },
});

}  // namespace
}  // namespace ipclab::cachecalc
#endif
