// runtime suite: every benchmark of both runtimes runs a tiny n and verifies it, and the
// verification catches a lost, duplicated, reordered or wrong result.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/measure/session.hpp"
#include "core/plan/runner.hpp"
#include "mechanisms/runtime/common.hpp"

namespace ipclab {
namespace {

// `duration_s` 0: one pass of n (a peer's n as asked), so that its counts are n's exactly.
Record run_runtime(const std::string& mech, Overrides o, double duration_s = 0.05) {
  auto planned = plan(select_mechanisms({"runtime/" + mech}), Preset::Default, o);
  EXPECT_EQ(planned.size(), 1u);
  RunOptions opts;
  opts.duration_s = duration_s;
  opts.warmup_s = 0.01;  // > 0: the body runs twice, so reuse of a runtime is covered too
  return run_one(planned.at(0), opts, 0);
}

bool registered(const std::string& mech) {
  for (auto& m : Registry::get().mechanisms())
    if (m.full_name() == "runtime/" + mech) return true;
  return false;
}

struct RuntimeCase {
  std::string bench;
  Overrides params;
  uint64_t ops;
  uint64_t results = 0;  // results checked, when not one per operation (switch_many: one per task)
};

const RuntimeCase kCases[] = {
    {"spawn", {{"n", {"1000"}}, {"batch", {"64"}}}, 1000},  // last batch partial
    {"switch", {{"n", {"777"}}}, 777},
    {"channel", {{"n", {"1000"}}, {"capacity", {"16"}}}, 1000},
    {"channel", {{"n", {"300"}}, {"capacity", {"0"}}}, 300},  // rendezvous
    {"channel_pairs", {{"n", {"200"}}, {"pairs", {"3"}}}, 600},
    {"timer", {{"n", {"100"}}, {"delay_us", {"0"}}}, 100},
    {"timer", {{"n", {"20"}}, {"delay_us", {"1"}}}, 20},
};

// The latency of a runtime record: its timed batches' means per op (kind batch_mean: each of
// extra.batch_units of n, the C++ runtimes' in each pass of the window, a peer's in its run),
// whose mean is the record's time per op within the rounding of each to whole ns and the time
// between batches (not a timing test: the figures of one run against each other).
void expect_batch_means(const Record& r) {
  ASSERT_TRUE(r.latency.has_value()) << r.name;
  const Latency& l = *r.latency;
  EXPECT_EQ(l.kind, "batch_mean");
  EXPECT_GT(l.count, 0u);
  EXPECT_FALSE(l.values.empty());
  EXPECT_EQ(l.values.size(), l.counts.size());
  // At least one batch per pass (a C++ runtime's) or per run (a peer's), each of batch_units of n.
  EXPECT_GE(l.count, r.extra.value("passes", uint64_t(1)));
  EXPECT_TRUE(r.extra.contains("batch_units"));
  EXPECT_GE(r.ops, l.count);
  const double per_op = r.time_per_op_ns();
  EXPECT_LE(l.mean, 2 * per_op + 1) << r.name;
  EXPECT_GE(l.mean, per_op / 2 - 1) << r.name;
  EXPECT_LE(l.min, l.p50);
  EXPECT_LE(l.p50, l.max);
}

// `ops` and `results` per pass of n: a record of the C++ runtimes holds as many passes as filled
// its window (extra.passes), each counted and verified; a peer's record (no passes) one run.
void expect_verified(const Record& r, uint64_t ops, uint64_t results = 0) {
  EXPECT_EQ(r.status, Status::Ok) << r.error;
  const uint64_t passes = r.extra.value("passes", uint64_t(1));
  EXPECT_GE(passes, 1u);
  EXPECT_EQ(r.ops, ops * passes);
  // switch_many's results are one per task of each batch (a batch restarts its tasks).
  const uint64_t want = results ? results * (r.latency ? r.latency->count : 0) : ops * passes;
  EXPECT_EQ(r.integrity.sent, want);
  EXPECT_EQ(r.integrity.received, want);
  EXPECT_TRUE(r.integrity.clean());
  EXPECT_GT(r.wall_s, 0.0);
  // The window holds --duration (run_runtime's 0.05 s), whatever n: n is repeated to fill it.
  if (r.extra.contains("passes")) {
    EXPECT_GE(r.wall_s, 0.05);
  }
  expect_batch_means(r);
}

TEST(RuntimeSuite, EveryBenchOfEveryRuntimeRunsAndVerifies) {
  for (const std::string rt : {"ipcrt", "asio"}) {
    for (const auto& c : kCases) {
      const std::string mech = c.bench + "_" + rt;
      if (rt == "ipcrt" && !registered(mech)) GTEST_SKIP() << "built without ipcrt";
      SCOPED_TRACE(mech);
      expect_verified(run_runtime(mech, c.params), c.ops);
    }
  }
}

// Issue 20's drive modes and many-task switch, on the C++ runtimes: every bench under either
// drive, and switch_many with n not a multiple of tasks (ops = the switches done, 77 * 10) and with
// one task per switch.
const RuntimeCase kDriveCases[] = {
    {"spawn", {{"n", {"1000"}}, {"batch", {"64"}}}, 1000},
    {"switch", {{"n", {"777"}}}, 777},
    {"channel", {{"n", {"300"}}, {"capacity", {"0"}}}, 300},
    {"channel_pairs", {{"n", {"200"}}, {"pairs", {"3"}}}, 600},
    {"switch_many", {{"n", {"777"}}, {"tasks", {"10"}}}, 770, 10},
    {"switch_many", {{"n", {"64"}}, {"tasks", {"64"}}}, 64, 64},
};

TEST(RuntimeSuite, EveryDriveModeRunsAndVerifies) {
  for (const std::string rt : {"ipcrt", "asio"}) {
    for (const std::string drive : {"block_on", "spawned"}) {
      for (const auto& c : kDriveCases) {
        const std::string mech = c.bench + "_" + rt;
        if (rt == "ipcrt" && !registered(mech)) GTEST_SKIP() << "built without ipcrt";
        SCOPED_TRACE(mech + " drive=" + drive);
        Overrides o = c.params;
        o["drive"] = {drive};
        const Record r = run_runtime(mech, o);
        expect_verified(r, c.ops, c.results);
        EXPECT_EQ(r.params.str("drive"), drive);  // the record says how it was driven
      }
    }
  }
}

// The quick preset runs both drives of the switch benches and only block_on of the others, so
// that it does not double.
TEST(RuntimeSuite, QuickRunsBothDrivesOnlyForSwitch) {
  for (const std::string mech :
       {"switch_asio", "switch_many_asio", "spawn_asio", "channel_asio", "channel_pairs_asio"}) {
    SCOPED_TRACE(mech);
    std::set<std::string> drives;
    for (auto& p : plan(select_mechanisms({"runtime/" + mech}), Preset::Quick, {}))
      drives.insert(p.params.str("drive"));
    const std::set<std::string> want = mech.starts_with("switch")
                                           ? std::set<std::string>{"block_on", "spawned"}
                                           : std::set<std::string>{"block_on"};
    EXPECT_EQ(drives, want);
  }
}

// More tasks than switches is refused while planning (each task yields n/tasks times).
TEST(RuntimeSuite, SwitchManyRefusesMoreTasksThanSwitches) {
  EXPECT_THROW(plan(select_mechanisms({"runtime/switch_many_asio"}), Preset::Default,
                    {{"n", {"10"}}, {"tasks", {"64"}}}),
               UsageError);
}

// A task whose result is joined to the wrong index, or which lost a yield, is caught.
TEST(RuntimeVerify, SwitchManyResultsNameTheirTask) {
  const uint64_t tasks = 4, per = 5, want_sum = per * rt::index_sum(tasks + 1);
  rt::Tally good, swapped, short_one;
  for (uint64_t i = 0; i < tasks; ++i) {
    good.take(rt::switch_many_result(i, per, per), rt::switch_many_result(i, per, per));
    swapped.take(rt::switch_many_result(i ^ 1, per, per), rt::switch_many_result(i, per, per));
    short_one.take(rt::switch_many_result(i, i == 2 ? per - 1 : per, per),
                   rt::switch_many_result(i, per, per));
  }
  EXPECT_TRUE(rt::verify(tasks, want_sum, good).clean());
  EXPECT_EQ(rt::verify(tasks, want_sum, swapped).corrupt, tasks);
  EXPECT_GE(rt::verify(tasks, want_sum, short_one).corrupt, 1u);
}

// The Go peers (peers/go/cmd/runtime-peer) through the harness's peer contract: the record is
// the peer's, its counts the timed run's, its CPU the peer's own window. Run with --duration 0,
// so that the harness runs n as asked (tests/runtime/test_window.py covers n grown to a window).
TEST(RuntimeSuite, GoPeersRunAndVerify) {
  for (const auto& c : kCases) {
    const std::string mech = c.bench + "_go";
    SCOPED_TRACE(mech);
    const Record r = run_runtime(mech, c.params, 0);
    if (r.status == Status::Skipped) GTEST_SKIP() << r.error;
    expect_verified(r, c.ops);
    EXPECT_EQ(r.extra.value("gomaxprocs", 0), 1);
    EXPECT_EQ(r.extra.value("cpu_source", ""), "peer");
  }
}

// Both drive modes reach the Go peer (it echoes the mode it ran), and switch_many_go does n
// rounded down to a multiple of tasks: 1000 over 7 goroutines is 142 each, 994 in all.
TEST(RuntimeSuite, GoPeersDriveModesAndSwitchMany) {
  for (const std::string drive : {"block_on", "spawned"}) {
    SCOPED_TRACE(drive);
    const Record sw = run_runtime("switch_go", {{"n", {"300"}}, {"drive", {drive}}}, 0);
    if (sw.status == Status::Skipped) GTEST_SKIP() << sw.error;
    expect_verified(sw, 300);
    EXPECT_EQ(sw.extra.value("drive", ""), drive);
    const Record many =
        run_runtime("switch_many_go", {{"n", {"1000"}}, {"tasks", {"7"}}, {"drive", {drive}}}, 0);
    expect_verified(many, 994);
    EXPECT_EQ(many.extra.value("drive", ""), drive);
    EXPECT_EQ(many.extra.value("tasks", 0), 7);
  }
}

TEST(RuntimeSuite, DefaultGridIsOnePointPerMechanism) {
  int mechs = 0;
  for (auto& m : Registry::get().mechanisms()) {
    if (m.suite != "runtime") continue;
    ++mechs;
    EXPECT_EQ(expand_grid(m.params, Preset::Default, {}).size(), 1u) << m.name;
  }
  EXPECT_GE(mechs, 5);  // the Asio side is always built
}

TEST(RuntimeVerify, ExactCountAndSumAreClean) {
  rt::Tally t;
  for (uint64_t i = 0; i < 10; ++i) t.take(i, i);
  const Integrity v = rt::verify(10, rt::index_sum(10), t);
  EXPECT_TRUE(v.clean());
  EXPECT_EQ(v.sent, 10u);
  EXPECT_EQ(v.received, 10u);
}

TEST(RuntimeVerify, WrongExpectationsAreCaught) {
  rt::Tally t;
  for (uint64_t i = 0; i < 10; ++i) t.take(i, i);
  EXPECT_EQ(rt::verify(11, rt::index_sum(11), t).lost, 1u);         // one result missing
  EXPECT_EQ(rt::verify(9, rt::index_sum(9), t).duplicated, 1u);     // one too many
  EXPECT_EQ(rt::verify(10, rt::index_sum(10) + 1, t).corrupt, 1u);  // wrong sum
  rt::Tally swapped;
  swapped.take(1, 0);
  swapped.take(0, 1);
  const Integrity v = rt::verify(2, 1, swapped);  // right count and sum, wrong order
  EXPECT_EQ(v.corrupt, 2u);
  EXPECT_FALSE(v.clean());
}

// A batch's size doubles until its run lasts 100 times the timing's cost (a clock read and the
// body's restart, read off the runs of 1 and 2 steps), and never passes the steps there are.
TEST(RuntimeVerify, BatchesLastAHundredTimesWhatTimingThemCosts) {
  // A body of 1 µs to start and 1 µs per step: the target is 100 × (a clock read + 1 µs).
  const auto body = [](uint64_t m) { return 1000.0 + 1000.0 * double(m); };
  const uint64_t k = rt::batch_steps(uint64_t(1) << 20, body);
  EXPECT_EQ(k & (k - 1), 0u) << k;
  EXPECT_GE(k, 64u);
  EXPECT_LE(k, 256u);
  EXPECT_EQ(rt::batch_steps(3, body), 3u);
  EXPECT_EQ(rt::batch_steps(1, body), 1u);
  // A body that costs nothing to restart: batches of 100 clock reads' time at the least.
  const uint64_t free = rt::batch_steps(uint64_t(1) << 20, [](uint64_t m) { return double(m); });
  EXPECT_GE(double(free), 100 * clock_read_ns());
}

TEST(RuntimeVerify, AWrongCountFailsTheRecord) {
  // A workload whose body delivers one result short, run through the runner (not registered).
  Mechanism m{.suite = "runtime", .name = "short_by_one"};
  m.workload = [](Session& s) {
    rt::measure_counted(s, 10, 1, rt::indexed, [](uint64_t c) {
      rt::Tally t;
      for (uint64_t i = 0; i + 1 < c; ++i) t.take(i, i);
      return t;
    });
  };
  RunOptions opts;
  opts.warmup_s = 0;
  opts.duration_s = 0;  // one pass: one result lost per batch of it (and per run that sized them)
  const Record r = run_one({&m, Params{}, "runtime/short_by_one"}, opts, 0);
  EXPECT_EQ(r.status, Status::Failed);
  ASSERT_TRUE(r.latency.has_value());
  EXPECT_EQ(r.integrity.sent - r.integrity.received, r.latency->count);
  EXPECT_GT(r.integrity.lost, r.latency->count);
  EXPECT_NE(r.error.find("lost"), std::string::npos) << r.error;
}

}  // namespace
}  // namespace ipclab
