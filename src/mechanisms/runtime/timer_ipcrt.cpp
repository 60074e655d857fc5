// runtime/timer_ipcrt: arm and fire n timers one after the other on ipcrt: co_await
// sleep_for(delay) in a loop. Every sleep must return no earlier than its deadline.
#if __has_include(<ipcrt/ipcrt.hpp>)
#include <chrono>

#include <ipcrt/ipcrt.hpp>

#include "core/base/clock.hpp"
#include "core/measure/session.hpp"
#include "mechanisms/runtime/common.hpp"

namespace ipclab::rt {
namespace {

ipcrt::task<Tally> ipcrt_sleeper(uint64_t n, std::chrono::microseconds delay) {
  Tally t;
  const uint64_t d = uint64_t(std::chrono::nanoseconds(delay).count());
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t t0 = d ? now_ns() : 0;
    co_await ipcrt::sleep_for(delay);
    // A timer that fired early counts as out of order.
    t.take(i, d && now_ns() - t0 < d ? ~i : i);
  }
  co_return t;
}

void timer_ipcrt(Session& s) {
  const uint64_t n = uint64_t(s.params().i64("n"));
  const std::chrono::microseconds delay(s.params().i64("delay_us"));
  ipcrt::runtime rt;
  measure_counted(s, n, 1, indexed, [&](uint64_t c) { return rt.block_on(ipcrt_sleeper(c, delay)); });
}

IPCLAB_REGISTER(Mechanism{
    .suite = "runtime",
    .name = "timer_ipcrt",
    .help = "ipcrt: co_await sleep_for(delay) n times in one task (arm + fire, sequential)",
    .params = {delay_param(), timer_n()},
    .workload = timer_ipcrt,
});

}  // namespace
}  // namespace ipclab::rt
#endif
