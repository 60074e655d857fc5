// cachecalc/std_async: std::async per task, a sliding window of 8 in flight (BM_cachecalc_async):
// as soon as the oldest of 8 running tasks is done, the next one starts.
#include <deque>
#include <future>
#include <mutex>

#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"
#include "mechanisms/cachecalc/workload.hpp"

namespace ipclab::cachecalc {
namespace {

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "std_async",
    .help = "BM_cachecalc_async: each task is a std::async(launch::async) — a thread created and "
            "joined per task — with a sliding window of 8 in flight (the next starts once the "
            "oldest is awaited); calcs under a std::mutex, the delay a blocking one (devzero by "
            "default, as the reference)",
    .params = {delay_param(), calc_param(), delay_kind_param({"devzero", "sleep"})},
    .workload =
        [](Session& s) {
          const BlockingTask blocking(s.params());
          run_iterations(s, [blocking] {
            Cache c = fresh_cache();
            std::mutex m;
            auto task = [&] { blocking(c, m); };
            // FIFO as the reference's: after each launch, the oldest tasks are awaited until
            // fewer than 8 are left in the window.
            std::deque<std::future<void>> window;
            for (int t = 0; t < kTasks; ++t) {
              window.push_back(std::async(std::launch::async, task));
              while (window.size() >= size_t(kConcurrency)) {
                window.front().get();
                window.pop_front();
              }
            }
            for (auto& f : window) f.get();
            return verify(c);
          });
        },
});

}  // namespace
}  // namespace ipclab::cachecalc
