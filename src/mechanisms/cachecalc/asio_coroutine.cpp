// cachecalc/asio_coroutine: C++20 coroutines on an asio::thread_pool, hopping to a strand for the
// calcs and back to the pool for the timer (BM_cachecalc_boost_coroutine).
#if __has_include(<asio.hpp>)
#include <asio.hpp>

#include <latch>

#include "core/mechanism.hpp"
#include "core/session.hpp"
#include "mechanisms/cachecalc/workload.hpp"

namespace ipclab::cachecalc {
namespace {

using Strand = asio::strand<asio::thread_pool::executor_type>;

asio::awaitable<void> task(Cache& c, Strand& strand, asio::thread_pool& pool,
                           std::chrono::microseconds delay, std::latch& done) {
  co_await asio::post(strand, asio::use_awaitable);
  calc(c);
  co_await asio::post(pool.get_executor(), asio::use_awaitable);
  asio::steady_timer timer(pool.get_executor(), delay);
  co_await timer.async_wait(asio::use_awaitable);
  co_await asio::post(strand, asio::use_awaitable);
  calc(c);
  done.count_down();
}

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "asio_coroutine",
    .help = "BM_cachecalc_boost_coroutine: 1000 asio::awaitable tasks on an asio::thread_pool of 8 "
            "(started once per run); each switches to one strand for a calc, back to the pool for "
            "an asynchronous steady_timer wait, and to the strand again",
    .params = {delay_param()},
    .workload = [](Session& s) {
      const auto delay = std::chrono::microseconds(s.params().i64("delay_us"));
      asio::thread_pool pool(kConcurrency);
      run_iterations(s, [&] {
        Cache c = fresh_cache();
        Strand strand = asio::make_strand(pool.get_executor());
        std::latch done(kTasks);
        for (int t = 0; t < kTasks; ++t)
          asio::co_spawn(pool, task(c, strand, pool, delay, done), asio::detached);
        done.wait();
        return verify(c);
      });
    },
});

}  // namespace
}  // namespace ipclab::cachecalc
#endif
