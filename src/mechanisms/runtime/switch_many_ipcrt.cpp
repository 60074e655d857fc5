// runtime/switch_many_ipcrt: `tasks` tasks each yield n/tasks times on ipcrt, round-robin through
// the ready queue (issue 20's many-task switch: the loop's cost per pass is shared by every ready
// task). ops = the switches done, tasks * (n/tasks). Each task returns switch_many_result(index,
// its yields); the joined results are checked one by one and in sum.
#if __has_include(<ipcrt/ipcrt.hpp>)
#include <vector>

#include <ipcrt/ipcrt.hpp>

#include "core/measure/session.hpp"
#include "mechanisms/runtime/ipcrt.hpp"

namespace ipclab::rt {
namespace {

ipcrt::task<uint64_t> yielder_many(uint64_t index, uint64_t per) {
  uint64_t yields = 0;
  for (; yields < per; ++yields) co_await ipcrt::yield();
  co_return switch_many_result(index, yields, per);
}

ipcrt::task<Tally> spawn_all(uint64_t tasks, uint64_t per) {
  std::vector<ipcrt::join_handle<uint64_t>> hs;
  hs.reserve(tasks);
  for (uint64_t i = 0; i < tasks; ++i) hs.push_back(ipcrt::spawn(yielder_many(i, per)));
  Tally t;
  for (uint64_t i = 0; i < tasks; ++i) t.take(co_await hs[i], switch_many_result(i, per, per));
  co_return t;
}

void switch_many_ipcrt(Session& s) {
  const uint64_t tasks = uint64_t(s.params().i64("tasks")), per = uint64_t(s.params().i64("n")) / tasks;
  const bool spawned = drive_spawned(s.params());
  ipcrt::runtime rt;
  // A batch is c yields of every task; task i's result is then (i + 1) * c: the sum is
  // c * (1 + 2 + ... + tasks).
  measure_counted(
      s, per, 1,
      [tasks](uint64_t c) {
        return Expect{tasks * c, tasks, c * index_sum(tasks + 1)};
      },
      [&](uint64_t c) { return run_driven(rt, spawned, spawn_all(tasks, c)); });
}

IPCLAB_REGISTER(Mechanism{
    .suite = "runtime",
    .name = "switch_many_ipcrt",
    .help = "ipcrt: `tasks` spawned tasks co_await yield() n/tasks times each, round-robin, then joined",
    .params = {switch_n(), tasks_param(), drive_param()},
    .workload = switch_many_ipcrt,
    .check = switch_many_check,
});

}  // namespace
}  // namespace ipclab::rt
#endif
