// cachecalc/std_async: std::async per task, 8 in flight at a time (BM_cachecalc_async).
#include <future>
#include <mutex>
#include <vector>

#include "core/mechanism.hpp"
#include "core/session.hpp"
#include "mechanisms/cachecalc/workload.hpp"

namespace ipclab::cachecalc {
namespace {

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "std_async",
    .help = "BM_cachecalc_async: each task is a std::async(launch::async) — a thread created and "
            "joined per task — launched in windows of 8 that are awaited together; calcs under a "
            "std::mutex, the delay a blocking nanosleep",
    .params = {delay_param()},
    .workload =
        [](Session& s) {
          const int64_t us = s.params().i64("delay_us");
          run_iterations(s, [us] {
            Cache c = fresh_cache();
            std::mutex m;
            auto task = [&] {
              {
                std::lock_guard g(m);
                calc(c);
              }
              sleep_delay(us);
              {
                std::lock_guard g(m);
                calc(c);
              }
            };
            std::vector<std::future<void>> window;
            for (int t = 0; t < kTasks; t += kConcurrency) {
              for (int i = t; i < t + kConcurrency && i < kTasks; ++i)
                window.push_back(std::async(std::launch::async, task));
              for (auto& f : window) f.get();
              window.clear();
            }
            return verify(c);
          });
        },
});

}  // namespace
}  // namespace ipclab::cachecalc
