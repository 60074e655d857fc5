// cachecalc/ipcrt: the ipcrt io_uring runtime on one thread, every task a coroutine, the delay
// a sleep_for timer — all 1000 waits overlap. Compiled only when the build links ipcrt.
#if __has_include(<ipcrt/ipcrt.hpp>)
#include <ipcrt/ipcrt.hpp>

#include <vector>

#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"
#include "mechanisms/cachecalc/workload.hpp"

namespace ipclab::cachecalc {
namespace {

ipcrt::task<void> ipcrt_task(Cache& c, CalcFn calc, std::chrono::microseconds delay) {
  calc(c);
  co_await ipcrt::sleep_for(delay);
  calc(c);
}

ipcrt::task<void> iteration(Cache& c, CalcFn calc, std::chrono::microseconds delay) {
  std::vector<ipcrt::join_handle<void>> tasks;
  tasks.reserve(kTasks);
  for (int t = 0; t < kTasks; ++t) tasks.push_back(ipcrt::spawn(ipcrt_task(c, calc, delay)));
  for (auto& h : tasks) co_await h;
}

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "ipcrt",
    .help = "ours: 1000 ipcrt coroutines spawned on one runtime (one thread, created once per run) "
            "and joined; the delay an ipcrt sleep_for timer, so all waits overlap and the calcs "
            "need no lock — the io_context pattern on io_uring. delay_kind is timer only: a blocking "
            "delay on the one thread would serialise all 1000 waits",
    .params = {delay_param(), calc_param(), delay_kind_param({"timer"})},
    .workload =
        [](Session& s) {
          const auto delay = std::chrono::microseconds(s.params().i64("delay_us"));
          const CalcFn calc = calc_of(s.params());
          run_worker(s, [delay, calc](Worker& w) {
            ipcrt::runtime rt;  // on the worker's thread: a runtime is its creating thread's
            Iterations it(w);
            w.ready();
            while (it.next()) {
              Cache c = fresh_cache();
              rt.block_on(iteration(c, calc, delay));
              it.done(verify(c));
            }
          });
        },
});

}  // namespace
}  // namespace ipclab::cachecalc
#endif
