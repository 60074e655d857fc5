// cachecalc/std_mutex: 8 std::threads share the map under one std::mutex (BM_cachecalc_mutex).
#include <mutex>
#include <thread>
#include <vector>

#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"
#include "mechanisms/cachecalc/workload.hpp"

namespace ipclab::cachecalc {
namespace {

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "std_mutex",
    .help = "BM_cachecalc_mutex: 8 std::threads started per iteration, each runs 125 of the 1000 "
            "tasks; calcs under one std::mutex, the delay a blocking one outside the lock (devzero by "
            "default, as the reference)",
    .params = {delay_param(), calc_param(), delay_kind_param({"devzero", "sleep"})},
    .workload =
        [](Session& s) {
          const BlockingTask task(s.params());
          run_iterations(s, [task] {
            Cache c = fresh_cache();
            std::mutex m;
            std::vector<std::thread> threads;
            for (int w = 0; w < kConcurrency; ++w)
              threads.emplace_back([&, w] {
                for (int t = w; t < kTasks; t += kConcurrency) task(c, m);
              });
            for (auto& t : threads) t.join();
            return verify(c);
          });
        },
});

}  // namespace
}  // namespace ipclab::cachecalc
