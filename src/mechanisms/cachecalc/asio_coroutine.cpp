// cachecalc/asio_coroutine: C++20 coroutines on an asio::thread_pool, hopping to a strand for the
// calcs and back to the pool for the timer (BM_cachecalc_boost_coroutine).
#if __has_include(<asio.hpp>)
#include <asio.hpp>

#include "core/mechanism.hpp"
#include "core/session.hpp"
#include "mechanisms/cachecalc/asio_pool.hpp"

namespace ipclab::cachecalc {
namespace {

asio::awaitable<void> task(PoolIteration& it, std::chrono::microseconds delay) {
  co_await asio::post(it.strand, asio::use_awaitable);
  calc(it.cache);
  co_await asio::post(it.pool.get_executor(), asio::use_awaitable);
  asio::steady_timer timer(it.pool.get_executor(), delay);
  co_await timer.async_wait(asio::use_awaitable);
  co_await asio::post(it.strand, asio::use_awaitable);
  calc(it.cache);
  it.done.count_down();
}

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "asio_coroutine",
    .help = "BM_cachecalc_boost_coroutine: 1000 asio::awaitable tasks on an asio::thread_pool of 8 "
            "(started once per run); each switches to one strand for a calc, back to the pool for "
            "an asynchronous steady_timer wait, and to the strand again",
    .params = {delay_param()},
    .workload =
        [](Session& s) {
          const auto delay = std::chrono::microseconds(s.params().i64("delay_us"));
          run_on_pool(s,
                      [&](PoolIteration& it) { asio::co_spawn(it.pool, task(it, delay), asio::detached); });
        },
});

}  // namespace
}  // namespace ipclab::cachecalc
#endif
