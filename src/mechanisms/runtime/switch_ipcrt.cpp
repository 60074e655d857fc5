// runtime/switch_ipcrt: one task yields n times on ipcrt (reference 003's "coroutine switch"):
// each co_await yield() goes through the runtime's yield (runtime::yield_inline): with no other task
// ready, the task goes on at once, as a round trip through the ready queue would have it do.
#if __has_include(<ipcrt/ipcrt.hpp>)
#include <ipcrt/ipcrt.hpp>

#include "core/measure/session.hpp"
#include "mechanisms/runtime/ipcrt.hpp"

namespace ipclab::rt {
namespace {

ipcrt::task<Tally> yielder_n(uint64_t n) {
  Tally t;
  for (uint64_t i = 0; i < n; ++i) {
    co_await ipcrt::yield();
    t.take(i, i);
  }
  co_return t;
}

void switch_ipcrt(Session& s) {
  const uint64_t n = uint64_t(s.params().i64("n"));
  const bool spawned = drive_spawned(s.params());
  ipcrt::runtime rt;
  measure_counted(s, n, 1, indexed, [&](uint64_t c) { return run_driven(rt, spawned, yielder_n(c)); });
}

IPCLAB_REGISTER(Mechanism{
    .suite = "runtime",
    .name = "switch_ipcrt",
    .help = "ipcrt: co_await yield() n times in one task",
    .params = {switch_n(), drive_param()},
    .workload = switch_ipcrt,
});

}  // namespace
}  // namespace ipclab::rt
#endif
