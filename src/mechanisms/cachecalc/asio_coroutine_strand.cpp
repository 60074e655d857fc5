// cachecalc/asio_coroutine_strand: coroutines spawned on a strand of a one-thread asio::thread_pool,
// timer included (BM_cachecalc_boost_coroutine_strand: its pool has one thread).
#if __has_include(<asio.hpp>)
#include <asio.hpp>

#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"
#include "mechanisms/cachecalc/asio_pool.hpp"

namespace ipclab::cachecalc {
namespace {

asio::awaitable<void> strand_task(PoolIteration& it, std::chrono::microseconds delay) {
  it.calc(it.cache);
  asio::steady_timer timer(it.pool.get_executor(), delay);
  co_await timer.async_wait(asio::use_awaitable);
  it.calc(it.cache);
  it.done.count_down();
}

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "asio_coroutine_strand",
    .help = "BM_cachecalc_boost_coroutine_strand: 1000 asio::awaitable tasks spawned on a strand of an "
            "asio::thread_pool of one thread (started once per run), as the reference; calcs and the "
            "asynchronous steady_timer wait all run on that thread. delay_kind is timer only: a "
            "blocking delay on the one thread would serialise all 1000 waits",
    .params = {delay_param(), calc_param(), delay_kind_param({"timer"})},
    .workload =
        [](Session& s) {
          const auto delay = std::chrono::microseconds(s.params().i64("delay_us"));
          run_on_pool(s, {.threads = 1}, [&](PoolIteration& it) {
            asio::co_spawn(it.strand, strand_task(it, delay), asio::detached);
          });
        },
});

}  // namespace
}  // namespace ipclab::cachecalc
#endif
