// harness/pacing: the open-loop sender's pacing alone — the same Arrivals, pace_until and
// calibrated spin margin as a pattern=rate sender, at -p rate= on side 0's CPU, with nothing sent.
// Its latency is the lateness of each wait (actual − intended: kind sched_error), so its p99 is what
// this machine allows a sender's scheduling error at that rate and pace; the record also states the
// pacing floor (extra.rate.pacing_floor), measured as every open-loop record's is.
#include "core/base/clock.hpp"
#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"
#include "core/model/std_params.hpp"
#include "core/run/openloop.hpp"

namespace ipclab {
namespace {

// The open-loop parameters that shape a sender's waits (rate, arrivals, pace, seed), here without
// pattern=rate (this benchmark has no other pattern) and without the capacity search.
std::vector<ParamSpec> pacing_params() {
  std::vector<ParamSpec> out;
  for (ParamSpec p : std_params::rate_params()) {
    if (p.name == "slo_p99_us") continue;
    p.only_with = {};
    if (p.name == "rate") {
      p.choices.clear();
      p.help = "send times per second of the one paced loop (e.g. 10k, 100k)";
    }
    out.push_back(std::move(p));
  }
  out.push_back(std_params::placement({"same", "unpinned"}, {"same"}));
  return out;
}

void run_pacing(Session& s) {
  RateSpec spec = RateSpec::of(s.params());
  const int cpu = s.cpu_for(0);
  spec.measure_floor(spec.rate, 1, cpu);
  const int64_t rate = spec.rate;
  s.run_workers({{"pacer", 0, cpu,
                  [spec, rate](Worker& w) {
                    auto& out = w.out();
                    w.ready();
                    Arrivals arrivals = spec.arrivals_for(rate, 0, 1, now_ns());
                    while (w.running()) {
                      const uint64_t due = arrivals.next();
                      const uint64_t at = spec.pace_until(due);
                      if (w.measuring()) {
                        out.ops++;
                        out.record_latency(at - due);
                      }
                    }
                  }}},
                false, "sched_error");
  nlohmann::json r = {{"requested_per_s", double(rate)},
                      {"arrivals", name_of(spec.arrivals)},
                      {"pace", name_of(spec.pace)},
                      {"seed", spec.seed},
                      {"pacing_floor", to_json(spec.floor, spec.pace)}};
  s.record().extra["rate"] = r;
}

IPCLAB_REGISTER(Mechanism{
    .suite = "harness",
    .name = "pacing",
    .help = "an open-loop sender's pacing alone at -p rate= (nothing sent): the lateness of each wait, "
            "what this machine allows the scheduling error",
    .params = pacing_params(),
    .workload = run_pacing,
});

}  // namespace
}  // namespace ipclab
