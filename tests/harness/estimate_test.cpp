// Estimates and budgets (core/plan/estimate.hpp): the plan's own model, the learned overheads, the
// fitting of windows and repetitions to a budget, and the cost model file.
#include "core/plan/estimate.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "core/base/error.hpp"
#include "core/ownership/journal.hpp"

using namespace ipclab;

namespace {

// The warm-up and window the observations below were planned for.
constexpr double kPlanned = 1.2;

RunOptions options(double duration, double warmup, int reps) {
  RunOptions o;
  o.duration_s = duration;
  o.warmup_s = warmup;
  o.repetitions = reps;
  return o;
}

// n points of messaging/pipe (sizes 64, 128, ... bytes).
std::vector<PlannedBenchmark> pipes(int n) {
  std::string sizes;
  for (int i = 1; i <= n; ++i) sizes += (i > 1 ? "," : "") + std::to_string(64 * i);
  Overrides o;
  parse_override("size=" + sizes, o);
  parse_override("pattern=roundtrip", o);
  return plan(select_mechanisms({"messaging/pipe"}), Preset::Default, o);
}

}  // namespace

TEST(Estimate, FromThePlanAndTheLearnedOverhead) {
  const auto p = pipes(4);
  CostModel model = CostModel::load("");
  const RunOptions o = options(1.0, 0.2, 3);
  EXPECT_DOUBLE_EQ(estimate_point(p[0], o, model), 3 * (1.2 + kDefaultOverheadS));
  EXPECT_DOUBLE_EQ(estimate_plan(p, o, model), 4 * 3 * (1.2 + kDefaultOverheadS));
  // The first observation replaces the default; then the median of the recent ones.
  model.learn("messaging/pipe", kPlanned + 0.5, kPlanned);
  EXPECT_TRUE(model.learned("messaging/pipe"));
  EXPECT_NEAR(model.overhead_s("messaging/pipe"), 0.5, 1e-12);
  model.learn("messaging/pipe", kPlanned + 0.3, kPlanned);
  EXPECT_NEAR(model.overhead_s("messaging/pipe"), 0.4, 1e-12);
  model.learn("messaging/pipe", kPlanned - 1, kPlanned);  // a window that ended early: no negative start-up
  EXPECT_NEAR(model.overhead_s("messaging/pipe"), 0.3, 1e-12);
  // One not run before starts like its suite's others (the median of theirs); a suite nothing
  // was learned of, at the default.
  EXPECT_NEAR(model.overhead_s("messaging/fifo"), 0.3, 1e-12);
  model.learn("messaging/unix_stream", kPlanned + 0.1, kPlanned);
  model.learn("messaging/tcp", kPlanned + 0.2, kPlanned);
  EXPECT_NEAR(model.overhead_s("messaging/fifo"), 0.2, 1e-12);
  EXPECT_DOUBLE_EQ(model.overhead_s("bulk/pipe"), kDefaultOverheadS);
  EXPECT_DOUBLE_EQ(model.overhead_s("messagingx/pipe"), kDefaultOverheadS);
  RunOptions autorep = o;
  autorep.ci_target_pct = 2;
  EXPECT_NEAR(estimate_point(p[0], autorep, model), kAutoMinRepetitions * (1.2 + 0.3), 1e-9);
}

TEST(Estimate, OneSlowStartDoesNotMoveTheOverheadAndADriftIsFollowed) {
  CostModel model = CostModel::load("");
  for (int i = 0; i < 4; ++i) model.learn("messaging/unix_stream", kPlanned + 0.05, kPlanned);
  model.learn("messaging/unix_stream", kPlanned + 2.3,
              kPlanned);  // a start on a loaded machine, a stalled run
  EXPECT_NEAR(model.overhead_s("messaging/unix_stream"), 0.05, 1e-12);
  // The machine changed: once most of the recent observations say so, the overhead follows.
  for (size_t i = 0; i < CostModel::kRecent / 2 + 1; ++i)
    model.learn("messaging/unix_stream", kPlanned + 0.2, kPlanned);
  EXPECT_NEAR(model.overhead_s("messaging/unix_stream"), 0.2, 1e-12);
}

TEST(Estimate, AMechanismOfFixedWorkIsEstimatedAtItsOwnLengthWhateverTheWindow) {
  // Learned as a mechanism of fixed work: about 0.1 s whether the window is 1 s or 0.4 s (as the
  // runtime suite's n once ran, before its passes filled the window; a model file may hold that).
  CostModel model = CostModel::load("");
  const auto rt = plan(select_mechanisms({"runtime/switch_ipcrt"}), Preset::Default, {}, {0, 1});
  ASSERT_EQ(rt.size(), 1u);
  EXPECT_FALSE(model.fixed_s("runtime/switch_ipcrt"));
  model.learn("runtime/switch_ipcrt", 0.1, 1.2);
  model.learn("runtime/switch_ipcrt", 0.12, 1.2);
  model.learn("runtime/switch_ipcrt", 0.11, 0.48);
  ASSERT_TRUE(model.fixed_s("runtime/switch_ipcrt"));
  EXPECT_DOUBLE_EQ(*model.fixed_s("runtime/switch_ipcrt"), 0.11);
  EXPECT_NEAR(model.overhead_s("runtime/switch_ipcrt"), 0, 1e-12);  // never a negative start-up
  EXPECT_DOUBLE_EQ(estimate_repetition(rt[0], options(1.0, 0.2, 3), model), 0.11);
  EXPECT_DOUBLE_EQ(estimate_repetition(rt[0], options(0.4, 0.08, 3), model), 0.11);
  // A budget shortens the windows of the points that have them; the fixed one stays as it is.
  auto both = pipes(4);
  both.push_back(rt[0]);
  const BudgetFit fit = fit_budget(both, options(1.0, 0.2, 3), 4 * 3 * 0.7 + 3 * 0.11, "--budget", model);
  EXPECT_LT(fit.fitted.duration_s, 1.0);
  EXPECT_LE(fit.estimate_s, 4 * 3 * 0.7 + 3 * 0.11 + 1e-9);
  EXPECT_NEAR(estimate_point(rt[0], fit.fitted, model), 3 * 0.11, 1e-9);
  // One that ends a little before its window (servers' wave of 1000 clients: 0.19 s of 0.3 s) is
  // fixed work too, estimated at its own length, not at the window it does not wait for.
  for (int i = 0; i < 3; ++i) model.learn("servers/epoll_et", 0.19, 0.3);
  ASSERT_TRUE(model.fixed_s("servers/epoll_et"));
  EXPECT_DOUBLE_EQ(*model.fixed_s("servers/epoll_et"), 0.19);
  // A mechanism that lasts its window is not taken for fixed work by one short repetition.
  for (int i = 0; i < 3; ++i) model.learn("messaging/pipe", 1.25, 1.2);
  model.learn("messaging/pipe", 0.3, 1.2);
  EXPECT_FALSE(model.fixed_s("messaging/pipe"));
  EXPECT_NEAR(model.overhead_s("messaging/pipe"), 0.05, 1e-12);
}

TEST(Estimate, APointRunBeforeIsEstimatedFromItsOwnStartUpAnyOtherFromItsMechanisms) {
  // pipe at 64 B starts in 0.1 s, at 128 B in 0.5 s (a larger buffer to fill, say): the mechanism
  // learns their median, each point its own.
  const auto p = pipes(3);
  CostModel model = CostModel::load("");
  const RunOptions o = options(1.0, 0.2, 1);
  for (int i = 0; i < 3; ++i) {
    model.learn("messaging/pipe", kPlanned + 0.1, kPlanned, p[0].name);
    model.learn("messaging/pipe", kPlanned + 0.5, kPlanned, p[1].name);
  }
  EXPECT_TRUE(model.learned_point(p[0].name));
  EXPECT_FALSE(model.learned_point(p[2].name));
  EXPECT_NEAR(estimate_repetition(p[0], o, model), 1.2 + 0.1, 1e-12);
  EXPECT_NEAR(estimate_repetition(p[1], o, model), 1.2 + 0.5, 1e-12);
  EXPECT_NEAR(estimate_repetition(p[2], o, model), 1.2 + 0.3, 1e-12) << "the mechanism's median";
  EXPECT_NEAR(estimate_plan(p, o, model), 3 * 1.2 + 0.9, 1e-12);
  // The budget fits with the points' own overheads: 1.2 s of windows at most is left of 1.8 s.
  const BudgetFit f = fit_budget(p, options(1.0, 0.2, 1), 3 * 0.4 + 0.9, "--budget", model);
  EXPECT_NEAR(f.estimate_s, 3 * 0.4 + 0.9, 0.01);
  // Learned without a point (a file from before), only the mechanism learns.
  CostModel old = CostModel::load("");
  old.learn("messaging/pipe", kPlanned + 0.2, kPlanned);
  EXPECT_FALSE(old.learned_point(p[0].name));
  EXPECT_NEAR(estimate_repetition(p[0], o, old), 1.2 + 0.2, 1e-12);
}

TEST(Estimate, TheModelKeepsThePointsLearnedLast) {
  CostModel model = CostModel::load("");
  for (size_t i = 0; i < CostModel::kMaxPoints + 10; ++i)
    model.learn("messaging/pipe", kPlanned + 0.1, kPlanned, "messaging/pipe/size=" + std::to_string(i));
  // Point 0 again: now among the newest, so the next ones evict 10 and up rather than it.
  model.learn("messaging/pipe", kPlanned + 0.1, kPlanned, "messaging/pipe/size=10");
  model.learn("messaging/pipe", kPlanned + 0.1, kPlanned, "messaging/pipe/size=new");
  EXPECT_FALSE(model.learned_point("messaging/pipe/size=0"));
  EXPECT_FALSE(model.learned_point("messaging/pipe/size=11"));
  EXPECT_TRUE(model.learned_point("messaging/pipe/size=10"));
  EXPECT_TRUE(model.learned_point("messaging/pipe/size=12"));
  EXPECT_TRUE(model.learned_point("messaging/pipe/size=new"));
}

TEST(Estimate, BudgetShortensWindowsThenRepetitionsNeverPoints) {
  const auto p = pipes(10);
  const CostModel model = CostModel::load("");
  const RunOptions o = options(1.0, 0.2, 3);  // 10 × 3 × 1.25 s = 37.5 s
  // No budget, or one that holds the plan: nothing changes.
  for (auto budget : {std::optional<double>{}, std::optional<double>{60}}) {
    const BudgetFit f = fit_budget(p, o, budget, "--budget", model);
    EXPECT_FALSE(f.changed);
    EXPECT_EQ(f.fitted.duration_s, 1.0);
    EXPECT_EQ(f.fitted.repetitions, 3);
    EXPECT_DOUBLE_EQ(f.estimate_s, 37.5);
  }
  // 20 s: windows shortened, three repetitions kept.
  BudgetFit f = fit_budget(p, o, 20.0, "--budget", model);
  EXPECT_TRUE(f.changed);
  EXPECT_EQ(f.fitted.repetitions, 3);
  EXPECT_LT(f.fitted.duration_s, 1.0);
  EXPECT_GE(f.fitted.duration_s, kFloors.duration_s);
  EXPECT_LE(f.estimate_s, 20.0 + 1e-6);
  EXPECT_GT(f.estimate_s, 19.0) << "the longest windows that fit";
  EXPECT_NE(f.text().find("budget 20s: windows 1→"), std::string::npos) << f.text();
  EXPECT_NE(f.text().find("; estimate " + duration_text(f.estimate_s)), std::string::npos) << f.text();
  // 6.5 s: the floors do not hold three repetitions (10 × 3 × 0.3 s = 9 s): two, windows at what fits.
  f = fit_budget(p, o, 6.5, "--budget", model);
  EXPECT_EQ(f.fitted.repetitions, 2);
  EXPECT_LE(f.estimate_s, 6.5 + 1e-6);
  EXPECT_GE(f.fitted.duration_s, kFloors.duration_s);
  EXPECT_GE(f.fitted.warmup_s, kFloors.warmup_s);
  EXPECT_NE(f.text().find("repetitions 3→2"), std::string::npos) << f.text();
  EXPECT_EQ(f.to_json()["ran"]["repetitions"], 2);
  EXPECT_EQ(f.to_json()["asked"]["duration_s"], 1.0);
  EXPECT_EQ(f.to_json()["limit_s"], 6.5);
  // Under one repetition at the floors (10 × 0.3 s): refused, naming a budget that fits.
  try {
    fit_budget(p, o, 2.0, "--budget", model);
    FAIL() << "a budget under the floors was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--budget 4s"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("narrower selection"), std::string::npos) << e.what();
  }
  // A floor never lengthens what was asked: a 0.1 s window and no warm-up stay as they are (10 ×
  // 3 × 0.15 s = 4.5 s; two repetitions fit 3.5 s).
  f = fit_budget(p, options(0.1, 0, 3), 3.5, "--budget", model);
  EXPECT_EQ(f.fitted.duration_s, 0.1);
  EXPECT_EQ(f.fitted.warmup_s, 0);
  EXPECT_EQ(f.fitted.repetitions, 2);
}

TEST(Estimate, BudgetCapsAutoRepetitions) {
  const auto p = pipes(2);
  RunOptions o = options(1.0, 0.2, 3);
  o.ci_target_pct = 2;
  o.max_repetitions = 30;
  // Five repetitions of 1.25 s for two points are 12.5 s; 20 s caps auto at 8 repetitions.
  const BudgetFit f = fit_budget(p, o, 20.0, "--budget", CostModel::load(""));
  EXPECT_TRUE(f.changed);
  EXPECT_EQ(f.fitted.duration_s, 1.0);
  EXPECT_EQ(f.fitted.max_repetitions, 8);
  EXPECT_THROW(fit_budget(p, o, 2.0, "--budget", CostModel::load("")), UsageError)
      << "auto's fewest repetitions are its floor";
}

TEST(Estimate, APacedRunFitsEachPointToTheTimeLeftNeverBeyondWhatWasAskedNorBelowTheFloors) {
  const auto p = pipes(10);
  auto model = std::make_shared<CostModel>(CostModel::load(""));
  const RunOptions o = options(1.0, 0.2, 3);  // 10 × 3 × 1.25 s = 37.5 s
  const BudgetFit f = fit_budget(p, o, 20.0, "--budget", *model);
  ASSERT_TRUE(f.changed);
  BudgetPacer pacer(p, f, model);
  // On time, at the model's estimate: the fitted windows.
  RunOptions first = pacer.start(0, 0);
  EXPECT_NEAR(first.duration_s, f.fitted.duration_s, 0.002);
  EXPECT_EQ(first.repetitions, 3);
  EXPECT_NEAR(pacer.options_of(5).duration_s, first.duration_s, 1e-12) << "the later points, as known now";
  // Behind: the first point took 5 s, its start-ups 0.2 s each where the model held 0.05 (learned
  // as it ran), so the nine left get shorter windows, and the rest of the run fits what is left.
  const double planned = first.duration_s + first.warmup_s;
  for (int i = 0; i < 3; ++i) model->learn("messaging/pipe", planned + 0.2, planned);
  const RunOptions behind = pacer.start(1, 5.0);
  EXPECT_LT(behind.duration_s, first.duration_s);
  EXPECT_GE(behind.duration_s, kFloors.duration_s);
  EXPECT_LE(estimate_plan({p.begin() + 1, p.end()}, behind, *model), 15.0 + 1e-6);
  EXPECT_GT(estimate_plan({p.begin() + 1, p.end()}, behind, *model), 14.0) << "the longest windows that fit";
  // Ahead: half the budget left for the last two points gives them back what was asked, no more.
  const RunOptions ahead = pacer.start(8, 10.0);
  EXPECT_EQ(ahead.duration_s, 1.0);
  EXPECT_EQ(ahead.warmup_s, 0.2);
  // Out of time: the floors, never below; the run overruns and its time left says so.
  const RunOptions late = pacer.start(9, 25.0);
  EXPECT_EQ(late.duration_s, kFloors.duration_s);
  EXPECT_EQ(late.warmup_s, kFloors.warmup_s);
  EXPECT_EQ(pacer.paced(), 4u);
  EXPECT_EQ(pacer.moved(), 3u);
  EXPECT_NE(pacer.text().find("3 of 4 points ran with windows of 0.2 to 1 s"), std::string::npos)
      << pacer.text();
  // No budget: the fitted options for every point, and nothing to say.
  const BudgetFit none = fit_budget(p, o, std::nullopt, "none", *model);
  BudgetPacer unpaced(p, none, model);
  EXPECT_EQ(unpaced.start(3, 1000).duration_s, 1.0);
  EXPECT_EQ(unpaced.text(), "");
}

TEST(Estimate, TheRunnerAsksEachPointsOptionsOnceAndLearningUsesThem) {
  auto planned = plan(select_mechanisms({"harness/null"}), Preset::Default, {});
  ASSERT_EQ(planned.size(), 1u);
  planned.push_back(planned[0]);
  planned[1].name += " again";
  auto model = std::make_shared<CostModel>(CostModel::load(""));
  const RunOptions run = options(0.004, 0, 2);
  std::vector<size_t> asked;
  std::vector<double> windows;
  PlanHooks hooks;
  hooks.options = [&](size_t i, const RunOptions& o) {
    asked.push_back(i);
    RunOptions mine = o;
    mine.duration_s = i == 0 ? 0.002 : o.duration_s;
    return mine;
  };
  hooks.starting = [&](const PlannedBenchmark&, const RunOptions& o, size_t, size_t) {
    windows.push_back(o.duration_s);
  };
  const auto records = run_plan(planned, run, learning_hooks(hooks, model));
  EXPECT_EQ(asked, (std::vector<size_t>{0, 1})) << "once per point, before its first repetition";
  EXPECT_EQ(windows, (std::vector<double>{0.002, 0.002, 0.004, 0.004}));
  ASSERT_EQ(records.size(), 6u);
  EXPECT_EQ(records[0].extra["window"]["duration_s"], 0.002) << "a point with a window of its own says so";
  EXPECT_FALSE(records[3].extra.contains("window")) << "one with the run's does not";
  EXPECT_TRUE(model->learned_point(planned[0].name));
  // Interleaved: the run's options for every point, none asked.
  asked.clear();
  run_plan(planned, run, hooks, 7);
  EXPECT_TRUE(asked.empty());
}

TEST(Estimate, BudgetText) {
  EXPECT_EQ(parse_budget("5m"), 300.0);
  EXPECT_EQ(parse_budget("90s"), 90.0);
  EXPECT_EQ(parse_budget("1.5h"), 5400.0);
  EXPECT_EQ(parse_budget("none"), std::nullopt);
  EXPECT_EQ(parse_budget("5"), 5.0);  // seconds, bare, as every option of time takes them
  EXPECT_EQ(parse_duration("250ms"), 0.25);
  EXPECT_EQ(parse_duration("0.5"), 0.5);
  for (const char* bad :
       {"", "m", "5x", "-1m", "0s", "0.5s", "500ms", "nanm", "infh", " 5m", "5 m", "1001h", "5M"})
    EXPECT_THROW(parse_budget(bad), UsageError) << bad;
  EXPECT_EQ(duration_text(45), "45s");
  EXPECT_EQ(duration_text(280), "4m40s");
  EXPECT_EQ(duration_text(3900), "1h05m");
}

TEST(Estimate, CostModelFileIsWrittenPrivatelyAndReadBack) {
  const std::filesystem::path root =
      std::filesystem::temp_directory_path() / ("ipclab-estimate-test." + std::to_string(getpid()));
  std::filesystem::remove_all(root);
  const char* old = getenv("XDG_STATE_HOME");
  const std::string saved = old ? old : "";
  setenv("XDG_STATE_HOME", (root / "state").c_str(), 1);  // not there yet: created 0700
  const std::string path = CostModel::default_path();
  EXPECT_EQ(path, (root / "state" / "ipclab" / "costs.json").string());
  CostModel m = CostModel::load(path);
  EXPECT_FALSE(m.learned("messaging/pipe"));
  m.learn("messaging/pipe", kPlanned + 0.25, kPlanned);
  EXPECT_EQ(m.save(), "");
  struct stat st {};
  ASSERT_EQ(stat((root / "state" / "ipclab").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // Only the file: the temporary was renamed over it.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(root / "state" / "ipclab"), {}), 1);
  m.learn("messaging/pipe", kPlanned + 0.35, kPlanned);
  m.learn("messaging/pipe", kPlanned + 9.0, kPlanned);
  EXPECT_EQ(m.save(), "");
  m.learn("messaging/pipe", kPlanned + 0.05, kPlanned, "messaging/pipe/size=64");
  m.learn("messaging/pipe", kPlanned + 0.07, kPlanned, "messaging/pipe/size=64");
  EXPECT_EQ(m.save(), "");
  CostModel back = CostModel::load(path);
  EXPECT_NEAR(back.overhead_s("messaging/pipe"), 0.25, 1e-12);  // the recent five come back: their median
  EXPECT_NEAR(back.overhead_s("messaging/pipe", "messaging/pipe/size=64"), 0.06, 1e-12);  // and the points'
  // ... with when each was learned: a point learned after loading is the newest.
  back.learn("messaging/pipe", kPlanned + 0.1, kPlanned, "messaging/pipe/size=128");
  EXPECT_EQ(back.save(), "");
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["points"]["messaging/pipe/size=64"]["last"], 2u);
  EXPECT_EQ(j["points"]["messaging/pipe/size=128"]["last"], 3u);
  // A file from before the median (one figure, no "recent") is read as that figure.
  std::ofstream(path) << "{\"version\": 1, \"mechanisms\": {\"messaging/pipe\": {\"overhead_s\": 0.125, "
                         "\"samples\": 7}}}";
  EXPECT_NEAR(CostModel::load(path).overhead_s("messaging/pipe"), 0.125, 1e-12);
  // A file that is not one ipclab wrote teaches nothing.
  std::ofstream(path)
      << "{\"version\": 1, \"mechanisms\": {\"messaging/pipe\": {\"overhead_s\": -3, \"samples\": 1}}}";
  EXPECT_FALSE(CostModel::load(path).learned("messaging/pipe"));
  std::ofstream(path) << "not json";
  EXPECT_FALSE(CostModel::load(path).learned("messaging/pipe"));
  if (old)
    setenv("XDG_STATE_HOME", saved.c_str(), 1);
  else
    unsetenv("XDG_STATE_HOME");
  std::filesystem::remove_all(root);
}

TEST(Estimate, APairedRepetitionUnderAntagonistsCostsTwoRunsAndIsLearnedAsOne) {
  const auto p = pipes(1);
  const CostModel model = CostModel::load("");
  RunOptions o = options(1.0, 0.2, 3);
  const double alone = estimate_repetition(p[0], o, model);
  o.antagonists.push_back(parse_antagonist("none"));
  EXPECT_DOUBLE_EQ(estimate_repetition(p[0], o, model), 2 * alone) << "a noisy run and its quiet pair";
  o.quiet_pairs = false;
  EXPECT_DOUBLE_EQ(estimate_repetition(p[0], o, model), alone) << "--unpaired";
}
