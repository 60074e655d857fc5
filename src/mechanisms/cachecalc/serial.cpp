// cachecalc/serial: the 1000 tasks one after another on one thread (the reference's BM_cachecalc).
#include "core/mechanism.hpp"
#include "core/session.hpp"
#include "mechanisms/cachecalc/workload.hpp"

namespace ipclab::cachecalc {
namespace {

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "serial",
    .help = "BM_cachecalc: 1000 tasks calc -> delay -> calc one after another on one thread; the "
            "delay is the busy /dev/zero kind, as the reference's CPU = wall shows — nothing overlaps",
    .params = {delay_param()},
    .workload =
        [](Session& s) {
          const int64_t us = s.params().i64("delay_us");
          DevZero dz;
          run_iterations(s, [&] {
            Cache c = fresh_cache();
            for (int t = 0; t < kTasks; ++t) {
              calc(c);
              dz.delay(us);
              calc(c);
            }
            return verify(c);
          });
        },
});

}  // namespace
}  // namespace ipclab::cachecalc
