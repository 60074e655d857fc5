// cachecalc/asio_coroutine_strand: coroutines that live on the strand, timer included
// (BM_cachecalc_boost_coroutine_strand).
#if __has_include(<asio.hpp>)
#include <asio.hpp>

#include "core/mechanism.hpp"
#include "core/session.hpp"
#include "mechanisms/cachecalc/asio_pool.hpp"

namespace ipclab::cachecalc {
namespace {

asio::awaitable<void> task(PoolIteration& it, std::chrono::microseconds delay) {
  calc(it.cache);
  asio::steady_timer timer(co_await asio::this_coro::executor, delay);
  co_await timer.async_wait(asio::use_awaitable);
  calc(it.cache);
  it.done.count_down();
}

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "asio_coroutine_strand",
    .help = "BM_cachecalc_boost_coroutine_strand: 1000 asio::awaitable tasks spawned on one strand of "
            "an asio::thread_pool of 8 (started once per run); calcs and the asynchronous "
            "steady_timer wait all run on the strand, so no hop between pool and strand",
    .params = {delay_param()},
    .workload =
        [](Session& s) {
          const auto delay = std::chrono::microseconds(s.params().i64("delay_us"));
          run_on_pool(s,
                      [&](PoolIteration& it) { asio::co_spawn(it.strand, task(it, delay), asio::detached); });
        },
});

}  // namespace
}  // namespace ipclab::cachecalc
#endif
