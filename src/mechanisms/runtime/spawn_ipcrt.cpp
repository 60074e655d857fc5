// runtime/spawn_ipcrt: spawn+join of n empty tasks on ipcrt (reference 003's "coroutine spawn").
// Each task returns its index; the joined results must add up to 0+1+...+n-1.
#if __has_include(<ipcrt/ipcrt.hpp>)
#include <ipcrt/ipcrt.hpp>

#include "core/measure/session.hpp"
#include "mechanisms/runtime/ipcrt.hpp"

namespace ipclab::rt {
namespace {

ipcrt::task<uint64_t> ipcrt_leaf(uint64_t i) { co_return i; }

ipcrt::task<Tally> spawn_join(uint64_t n, uint64_t batch) {
  std::vector<ipcrt::join_handle<uint64_t>> hs;
  hs.reserve(std::min(n, batch));
  Tally t;
  for (uint64_t base = 0; base < n; base += batch) {
    const uint64_t end = std::min(n, base + batch);
    for (uint64_t i = base; i < end; ++i) hs.push_back(ipcrt::spawn(ipcrt_leaf(i)));
    uint64_t i = base;
    for (auto& h : hs) t.take(co_await h, i++);
    hs.clear();
  }
  co_return t;
}

void spawn_ipcrt(Session& s) {
  const uint64_t n = uint64_t(s.params().i64("n")), batch = uint64_t(s.params().i64("batch"));
  const bool spawned = drive_spawned(s.params());
  ipcrt::runtime rt;
  // Batches of whole `batch`es: the tasks in flight stay `batch`.
  measure_counted(s, n, batch, indexed,
                  [&](uint64_t c) { return run_driven(rt, spawned, spawn_join(c, batch)); });
}

IPCLAB_REGISTER(Mechanism{
    .suite = "runtime",
    .name = "spawn_ipcrt",
    .help = "ipcrt: spawn(task) n empty tasks, co_await every join_handle (in batches)",
    .params = {spawn_n(), batch_param(), drive_param_default_quick()},
    .workload = spawn_ipcrt,
});

}  // namespace
}  // namespace ipclab::rt
#endif
