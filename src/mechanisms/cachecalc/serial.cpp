// cachecalc/serial: the 1000 tasks one after another on one thread (the reference's BM_cachecalc).
#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"
#include "mechanisms/cachecalc/workload.hpp"

namespace ipclab::cachecalc {
namespace {

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "serial",
    .help = "BM_cachecalc: 1000 tasks calc -> delay -> calc one after another on one thread, "
            "nothing overlaps; the delay a blocking one (devzero by default, as the reference)",
    .params = {delay_param(), calc_param(), delay_kind_param({"devzero", "sleep"})},
    .workload =
        [](Session& s) {
          const BlockingTask task(s.params());
          run_iterations(s, [&] {
            Cache c = fresh_cache();
            for (int t = 0; t < kTasks; ++t) task(c);
            return verify(c);
          });
        },
});

}  // namespace
}  // namespace ipclab::cachecalc
