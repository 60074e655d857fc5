// Open-loop pacing floor and SLO (core/run/openloop): the floor is measured, cached and ordered; the
// rule that flags a scheduling error beyond it; slo_p99_us given or derived.
#include "core/run/openloop.hpp"

#include <gtest/gtest.h>

#include "core/base/error.hpp"
#include "core/model/std_params.hpp"

namespace ipclab {
namespace {

const ParamSpec& spec_named(const std::string& name) {
  static const std::vector<ParamSpec> specs = std_params::rate_params();
  for (const auto& s : specs)
    if (s.name == name) return s;
  throw std::runtime_error("no parameter " + name);
}

Params rate_point(const std::string& rate, const std::string& slo, const std::string& pace = "spin") {
  return Params({{"pattern", "rate"},
                 {"rate", rate},
                 {"arrivals", "fixed"},
                 {"pace", pace},
                 {"seed", "1"},
                 {"slo_p99_us", slo}});
}

TEST(PacingFloor, IsMeasuredOrderedAndCachedPerKey) {
  for (const char* pace : {"spin", "sleep", "busy"}) {
    RateSpec spec = RateSpec::of(rate_point("20k", "unloaded", pace));
    spec.measure_floor(spec.rate, 2, -1);  // two senders: 10k/s each
    const PacingFloor& f = spec.floor;
    EXPECT_EQ(f.rate_per_s, 10'000) << pace;
    EXPECT_GE(f.duration_s, 0.1) << pace;
    // The floor's 100 ms of 100 us gaps: each send time is waited for (a late one returns at once,
    // none is skipped), so every one is there.
    EXPECT_GE(f.lateness.count, 1000u) << pace;
    EXPECT_LE(f.lateness.p50, f.lateness.p99) << pace;
    EXPECT_LE(f.lateness.p99, f.lateness.p999) << pace;
    EXPECT_LE(f.lateness.p999, f.lateness.max) << pace;
    if (spec.pace == Pace::Spin) {
      EXPECT_GT(f.wakeup.count, 0u);
      EXPECT_EQ(f.margin_ns, f.wakeup.p999);  // the margin is the measured wake-up p99.9
    } else {
      EXPECT_EQ(f.wakeup.count, 0u);
      EXPECT_EQ(f.margin_ns, 0u);
    }
    // Once per process for the same (rate per sender, pace, arrivals, seed, CPU): the same figures.
    const PacingFloor again = pacing_floor(spec, 10'000, -1);
    EXPECT_EQ(again.lateness.count, f.lateness.count) << pace;
    EXPECT_EQ(again.lateness.max, f.lateness.max) << pace;
    EXPECT_EQ(again.margin_ns, f.margin_ns) << pace;
    const auto json = to_json(f, spec.pace);
    EXPECT_EQ(json["lateness_ns"]["count"], f.lateness.count);
    EXPECT_EQ(json.contains("margin_ns"), spec.pace == Pace::Spin);
  }
}

TEST(PacingFloor, TheRuleFlagsAnErrorWellBeyondTheFloorOnly) {
  const LateStats floor{.count = 1000, .p50 = 100, .p99 = 300, .p999 = 800, .max = 5000};
  auto achieved = [](uint64_t p99) { return LateStats{.count = 1000, .p50 = 100, .p99 = p99, .max = p99}; };
  EXPECT_FALSE(sched_error_over_floor(achieved(300), floor));
  EXPECT_FALSE(sched_error_over_floor(achieved(1'600), floor));  // not beyond twice the p99.9
  EXPECT_FALSE(sched_error_over_floor(achieved(1'299), floor));
  EXPECT_TRUE(sched_error_over_floor(achieved(1'601), floor));
  // A tiny floor (busy pacing): beyond twice its p99.9, but not by a microsecond over its p99.
  const LateStats tiny{.count = 1000, .p50 = 20, .p99 = 40, .p999 = 60, .max = 90};
  EXPECT_FALSE(sched_error_over_floor(achieved(900), tiny));
  EXPECT_TRUE(sched_error_over_floor(achieved(1'100), tiny));
  EXPECT_FALSE(sched_error_over_floor(achieved(1'000'000), LateStats{}));  // no floor: no flag
}

TEST(RateSpec, TheSloIsGivenOrDerivedFromTheUnloadedP99) {
  EXPECT_EQ(canonical_value(spec_named("slo_p99_us"), "unloaded"), "unloaded");
  EXPECT_EQ(canonical_value(spec_named("slo_p99_us"), "25.5"), "25.5");
  EXPECT_THROW(canonical_value(spec_named("slo_p99_us"), "fast"), UsageError);
  EXPECT_THROW(canonical_value(spec_named("slo_p99_us"), "0"), UsageError);
  EXPECT_EQ(spec_named("slo_p99_us").def, "unloaded");
  const RateSpec derived = RateSpec::of(rate_point("auto", "unloaded"));
  EXPECT_TRUE(derived.search);
  EXPECT_EQ(derived.slo_p99_us, 0);  // derived in the search, from its first trial
  const RateSpec given = RateSpec::of(rate_point("auto", "40"));
  EXPECT_EQ(given.slo_p99_us, 40);
}

}  // namespace
}  // namespace ipclab
