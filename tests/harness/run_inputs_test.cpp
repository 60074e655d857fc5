// What a run's steps keep of their inputs: a Session its own parameters and options (the caller's
// may go first: run_one hands it a point's options as a temporary), and run_plan the run's remote
// link (RunOptions::remote) in every benchmark's options, also those a budget's hook gives.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "core/machine/placement.hpp"
#include "core/measure/session.hpp"
#include "core/plan/runner.hpp"

using namespace ipclab;

namespace {
const Mechanism kInputsMech{.suite = "test", .name = "inputs"};
}  // namespace

TEST(RunInputs, ASessionKeepsItsOwnParamsAndOptions) {
  Record rec;
  std::optional<Session> s;
  {
    RunOptions o;
    o.duration_s = 0.25;
    o.cpus = {3, 5};
    Params p;
    p.set("placement", "cross");
    s.emplace(kInputsMech, p, o, rec);
    o.duration_s = 9;  // the caller's copy changes, then goes
    p.set("placement", "same");
  }
  EXPECT_EQ(s->options().duration_s, 0.25);
  EXPECT_EQ(s->options().cpus, (std::vector<int>{3, 5}));
  EXPECT_EQ(s->params().str("placement"), "cross");
  EXPECT_EQ(&s->record(), &rec) << "the record is the caller's, which the session fills";
}

// harness/null is a loop: its run never uses the link, so a stand-in address serves to follow it.
TEST(RunInputs, EveryBenchmarkRunsWithTheRunsLinkWhateverItsWindows) {
  auto planned = plan(select_mechanisms({"harness/null"}), Preset::Default, {});
  ASSERT_EQ(planned.size(), 1u);
  alignas(std::max_align_t) static char stand_in[64];
  RunOptions opts;
  opts.duration_s = 0.002;
  opts.warmup_s = 0;
  opts.repetitions = 2;
  opts.cpus = {allowed_cpus().front()};
  opts.remote = reinterpret_cast<remote::Link*>(stand_in);
  std::vector<const remote::Link*> seen;
  std::vector<double> windows;
  PlanHooks hooks{.starting =
                      [&](const PlannedBenchmark&, const RunOptions& o, size_t, size_t) {
                        seen.push_back(o.remote);
                        windows.push_back(o.duration_s);
                      },
                  .options =
                      [](size_t, const RunOptions& run) {
                        RunOptions paced;  // a paced budget's windows, built afresh
                        paced.duration_s = 0.001;
                        paced.warmup_s = 0;
                        paced.repetitions = run.repetitions;
                        paced.cpus = run.cpus;
                        return paced;
                      }};
  const auto records = run_plan(planned, opts, hooks);
  ASSERT_EQ(seen.size(), 2u);
  for (auto* link : seen) EXPECT_EQ(link, opts.remote);
  EXPECT_EQ(windows, (std::vector<double>{0.001, 0.001})) << "the hook's windows, the run's link";
  for (auto& r : records) EXPECT_EQ(r.status, Status::Ok) << r.error;
}
