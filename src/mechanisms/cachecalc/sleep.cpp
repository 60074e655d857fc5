// cachecalc/sleep: the cost of one blocking delay (the reference's BM_sleep), no map.
#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"
#include "mechanisms/cachecalc/workload.hpp"

namespace ipclab::cachecalc {
namespace {

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "sleep",
    .help = "BM_sleep: one blocking delay of delay_us (nanosleep); an op is one delay, its wall time "
            "shows the timer slack the blocking variants pay",
    .params = {delay_param()},
    .workload =
        [](Session& s) {
          const int64_t us = s.params().i64("delay_us");
          run_iterations(s, [us] {
            sleep_delay(us);
            return std::string();
          });
        },
});

}  // namespace
}  // namespace ipclab::cachecalc
