// cachecalc/asio_coroutine_strand: coroutines that live on the strand, timer included
// (BM_cachecalc_boost_coroutine_strand).
#if __has_include(<asio.hpp>)
#include <asio.hpp>

#include <latch>

#include "core/mechanism.hpp"
#include "core/session.hpp"
#include "mechanisms/cachecalc/workload.hpp"

namespace ipclab::cachecalc {
namespace {

asio::awaitable<void> task(Cache& c, std::chrono::microseconds delay, std::latch& done) {
  calc(c);
  asio::steady_timer timer(co_await asio::this_coro::executor, delay);
  co_await timer.async_wait(asio::use_awaitable);
  calc(c);
  done.count_down();
}

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "asio_coroutine_strand",
    .help = "BM_cachecalc_boost_coroutine_strand: 1000 asio::awaitable tasks spawned on one strand of "
            "an asio::thread_pool of 8 (started once per run); calcs and the asynchronous "
            "steady_timer wait all run on the strand, so no hop between pool and strand",
    .params = {delay_param()},
    .workload = [](Session& s) {
      const auto delay = std::chrono::microseconds(s.params().i64("delay_us"));
      asio::thread_pool pool(kConcurrency);
      run_iterations(s, [&] {
        Cache c = fresh_cache();
        auto strand = asio::make_strand(pool.get_executor());
        std::latch done(kTasks);
        for (int t = 0; t < kTasks; ++t) asio::co_spawn(strand, task(c, delay, done), asio::detached);
        done.wait();
        return verify(c);
      });
    },
});

}  // namespace
}  // namespace ipclab::cachecalc
#endif
