// cachecalc/sleep_devzero: the cost of one busy delay (the reference's BM_sleep_devzero), no map.
#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"
#include "mechanisms/cachecalc/workload.hpp"

namespace ipclab::cachecalc {
namespace {

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "sleep_devzero",
    .help = "BM_sleep_devzero: one busy delay of delay_us (opens /dev/zero and reads it until the "
            "time passed); an op is one delay, CPU = wall by construction",
    .params = {delay_param()},
    .workload =
        [](Session& s) {
          const int64_t us = s.params().i64("delay_us");
          run_iterations(s, [us] {
            devzero_delay(us);
            return std::string();
          });
        },
});

}  // namespace
}  // namespace ipclab::cachecalc
