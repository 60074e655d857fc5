// No figure from a window too short to hold it: the floor this machine's timer and scheduler
// allow (core/machine/window.hpp), the flag of a record under it, and how a count-based peer's n
// grows to fill --duration (core/peers/peer.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/machine/window.hpp"
#include "core/peers/peer.hpp"
#include "core/stats/record.hpp"

namespace ipclab {
namespace {

Record ok_iteration(double wall_s) {
  Record r;
  r.name = "runtime/switch_ipcrt/n:65536";
  r.ops = 65536;
  r.wall_s = wall_s;
  return r;
}

bool flagged(const Record& r) {
  return r.flags.is_array() && std::find(r.flags.begin(), r.flags.end(), "short_window") != r.flags.end();
}

TEST(WindowFloor, IsTheLongerOfTheTimersAndTheSchedulersBound) {
  const WindowFloor& f = window_floor();
  EXPECT_GT(f.clock_read_ns, 0);
  EXPECT_GT(f.tick_s, 0);  // CLOCK_MONOTONIC_COARSE ticks with the kernel's tick
  EXPECT_DOUBLE_EQ(f.timer_floor_s(), 1000 * (2 * f.clock_read_ns + f.clock_resolution_ns) * 1e-9);
  EXPECT_DOUBLE_EQ(f.scheduler_floor_s(), WindowFloor::kQuanta * std::max(f.tick_s, f.slice_s));
  EXPECT_DOUBLE_EQ(f.floor_s, std::max(f.timer_floor_s(), f.scheduler_floor_s()));
  const auto j = to_json(f);
  EXPECT_DOUBLE_EQ(j["floor_s"].get<double>(), f.floor_s);
  EXPECT_NE(j["rule"].get<std::string>().find("short_window"), std::string::npos);
}

TEST(ShortWindow, AWindowUnderTheFloorIsFlaggedWithItsRemedy) {
  Record r = ok_iteration(0.0011);
  flag_short_window(r, 0.02);
  ASSERT_TRUE(flagged(r));
  ASSERT_EQ(r.warnings.size(), 1u);
  const std::string msg = r.warnings[0]["message"], remedy = r.warnings[0]["remedy"];
  EXPECT_NE(msg.find("1.1 ms"), std::string::npos) << msg;
  EXPECT_NE(msg.find("20 ms"), std::string::npos) << msg;
  EXPECT_NE(remedy.find("--duration 0.04"), std::string::npos) << remedy;
  flag_short_window(r, 0.02);  // once
  EXPECT_EQ(r.flags.size(), 1u);
  EXPECT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(status_text(r).find("short window"), std::string::npos) << status_text(r);
}

TEST(ShortWindow, AWindowAtTheFloorAFailedRecordAndAnAggregateAreNot) {
  Record at = ok_iteration(0.02);
  flag_short_window(at, 0.02);
  EXPECT_FALSE(flagged(at));
  Record failed = ok_iteration(0.001);
  failed.fail("integrity: 1 lost");
  flag_short_window(failed, 0.02);
  EXPECT_FALSE(flagged(failed));
  Record agg = ok_iteration(0.001);
  agg.run_type = "aggregate";  // an aggregate takes its repetitions' flags (aggregate_median)
  flag_short_window(agg, 0.02);
  EXPECT_FALSE(flagged(agg));
}

TEST(CountToFill, GrowsNToAimPastTheDurationWithinItsBounds) {
  // 65,536 operations in 0.1 ms, for 1 s: 1.4 s / 0.1 ms = 14,000 times, held to 10,000 a run.
  EXPECT_EQ(count_to_fill(65536, 100e-6, 1.0, uint64_t(1) << 40), 65536u * 10000u);
  // 1,000 in 0.5 s, for 1 s: 2.8 times.
  EXPECT_EQ(count_to_fill(1000, 0.5, 1.0, uint64_t(1) << 30), 2800u);
  // Just short of the window: at least doubled.
  EXPECT_EQ(count_to_fill(1000, 0.99, 1.0, uint64_t(1) << 30), 2000u);
  // Never past n's bound.
  EXPECT_EQ(count_to_fill(uint64_t(1) << 29, 0.01, 1.0, uint64_t(1) << 30), uint64_t(1) << 30);
  // A window too short to time counts as a microsecond.
  EXPECT_EQ(count_to_fill(10, 0, 1.0, uint64_t(1) << 30), 100000u);
}

}  // namespace
}  // namespace ipclab
