// runtime/timer_asio: arm and fire n timers one after the other with Asio: expires_after(delay)
// then co_await steady_timer::async_wait in a loop. A wait that ends with an error or before its
// deadline is not counted as fired.
#include <chrono>

#include <asio/experimental/as_tuple.hpp>
#include <asio/steady_timer.hpp>

#include "core/base/clock.hpp"
#include "core/measure/session.hpp"
#include "mechanisms/runtime/asio.hpp"

namespace ipclab::rt {
namespace {

asio::awaitable<void> asio_sleeper(uint64_t n, std::chrono::microseconds delay, Tally& t) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const uint64_t d = uint64_t(std::chrono::nanoseconds(delay).count());
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t t0 = d ? now_ns() : 0;
    timer.expires_after(delay);
    auto [ec] = co_await timer.async_wait(asio::experimental::as_tuple(asio::use_awaitable));
    if (!ec) t.take(i, d && now_ns() - t0 < d ? ~i : i);
  }
}

void timer_asio(Session& s) {
  const uint64_t n = uint64_t(s.params().i64("n"));
  const std::chrono::microseconds delay(s.params().i64("delay_us"));
  asio::io_context ctx(1);
  measure_counted(s, n, 1, indexed, [&](uint64_t c) {
    Tally t;
    asio::co_spawn(ctx, asio_sleeper(c, delay, t), asio::detached);
    run_to_completion(ctx);
    return t;
  });
}

IPCLAB_REGISTER(Mechanism{
    .suite = "runtime",
    .name = "timer_asio",
    .help = "Asio: steady_timer expires_after(delay) + co_await async_wait n times in one coroutine",
    .params = {delay_param(), timer_n()},
    .workload = timer_asio,
});

}  // namespace
}  // namespace ipclab::rt
