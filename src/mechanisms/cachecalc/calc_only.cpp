// cachecalc/calc_only: the 2000 calcs of an iteration with no delay and no concurrency — the
// serial compute every variant must at least pay (the reference's BM_cachecalc_only).
#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"
#include "mechanisms/cachecalc/workload.hpp"

namespace ipclab::cachecalc {
namespace {

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "calc_only",
    .help = "BM_cachecalc_only: 1000 tasks of calc, calc with no delay, one thread — the compute "
            "floor of an iteration",
    .params = {calc_param()},
    .workload =
        [](Session& s) {
          const CalcFn calc = calc_of(s.params());
          run_iterations(s, [calc] {
            Cache c = fresh_cache();
            for (int t = 0; t < kTasks; ++t) {
              calc(c);
              calc(c);
            }
            return verify(c);
          });
        },
});

}  // namespace
}  // namespace ipclab::cachecalc
