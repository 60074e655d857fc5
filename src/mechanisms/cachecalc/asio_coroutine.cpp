// cachecalc/asio_coroutine: C++20 coroutines on an asio::thread_pool, switching (dispatch) to a
// strand on that same pool for the calcs and back to the pool for the delay
// (BM_cachecalc_boost_coroutine).
#if __has_include(<asio.hpp>)
#include <asio.hpp>

#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"
#include "mechanisms/cachecalc/asio_pool.hpp"

namespace ipclab::cachecalc {
namespace {

asio::awaitable<void> pool_task(PoolIteration& it, int64_t us, DelayKind kind) {
  co_await asio::dispatch(it.strand, asio::use_awaitable);
  it.calc(it.cache);
  co_await asio::dispatch(it.pool.get_executor(), asio::use_awaitable);
  if (kind == DelayKind::Timer) {
    asio::steady_timer timer(it.pool.get_executor(), std::chrono::microseconds(us));
    co_await timer.async_wait(asio::use_awaitable);
  } else {
    blocking_delay(kind, us);  // holds the pool thread, as a std-thread variant's delay
  }
  co_await asio::dispatch(it.strand, asio::use_awaitable);
  it.calc(it.cache);
  it.done.count_down();
}

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "asio_coroutine",
    .help = "BM_cachecalc_boost_coroutine: 1000 asio::awaitable tasks on an asio::thread_pool of 8 "
            "(started once per run); each dispatches to one strand on that pool for a calc, back to "
            "the pool for the delay (an asynchronous steady_timer by default, as the reference; "
            "devzero or sleep block a pool thread), and to the strand again",
    .params = {delay_param(), calc_param(), delay_kind_param({"timer", "devzero", "sleep"})},
    .workload =
        [](Session& s) {
          const int64_t us = s.params().i64("delay_us");
          const DelayKind kind = delay_kind_of(s.params());
          run_on_pool(s, {.threads = kConcurrency}, [us, kind](PoolIteration& it) {
            asio::co_spawn(it.pool, pool_task(it, us, kind), asio::detached);
          });
        },
});

}  // namespace
}  // namespace ipclab::cachecalc
#endif
