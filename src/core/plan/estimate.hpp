#pragma once
// How long a plan takes, before it runs, and how to fit it to a time budget.
//
// A repetition of a point costs its warm-up, its measured window and a start-up overhead: the
// set-up and tear-down of its session (threads, processes, peers, servers, daemons), whatever the
// window does not count. The overhead starts as kDefaultOverheadS for every mechanism and is
// learned from past runs: after each repetition that completed, the run records its wall time
// less warm-up and window, per point and per mechanism (CostModel::learn), in the cost model file
// of the user's state folder (user_state_dir(), core/machine/home.hpp). A point run before is
// estimated from its own observations (a 16 MiB message's start-up is not a 64 KiB one's, nor a
// library's over TCP its one in-process); any other point from its mechanism's, and a mechanism not
// run before from its suite's others (the median of theirs: a new runtime peer starts like the
// other runtime peers, and the run's estimate of time left learns so as it goes). A point's estimate
// is its repetitions times (warm-up + window + overhead), or times its fixed length for a
// mechanism whose repetitions do a fixed amount of work and end before their window
// (CostModel::fixed_s); --repetitions auto counts the fewest it runs.
//
// A budget (--budget, or the preset's own) fits the grid by shortening windows and then
// repetitions, down to kFloors, never by dropping points (fit_budget).
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/plan/runner.hpp"

namespace ipclab {

/// The start-up overhead of a repetition of a mechanism nothing has been learned of, in seconds.
constexpr double kDefaultOverheadS = 0.05;

/// The per-point and per-mechanism overheads learned from past runs.
class CostModel {
 public:
  /// The model in `path` (the cost model file), or an empty one when there is none, it is not a
  /// regular file of this user's, or it is not one ipclab wrote (a malformed file is rewritten
  /// by the next save). `path` "" is an empty model that never saves.
  static CostModel load(const std::string& path);
  /// The cost model file: <user_state_dir()>/costs.json; "" when no state folder can be named.
  static std::string default_path();

  /// The overhead of one repetition of point `point` (PlannedBenchmark::name) of `mechanism`
  /// ("suite/name"): the point's own when it was learned, else its mechanism's, else the median of
  /// its suite's other mechanisms' (those whose repetitions follow their window), else
  /// kDefaultOverheadS.
  double overhead_s(const std::string& mechanism, const std::string& point = {}) const;
  /// For a mechanism whose repetitions do a fixed amount of work and end before their warm-up and
  /// window are over (most recent ones: servers' wave of clients), the seconds a repetition takes,
  /// which no window changes (the point's own when it was learned, as overhead_s); nullopt
  /// otherwise. A repetition that follows its window lasts at least that window, so ending sooner
  /// is the sign.
  std::optional<double> fixed_s(const std::string& mechanism, const std::string& point = {}) const;
  /// Whether anything was learned of `mechanism`.
  bool learned(const std::string& mechanism) const { return entries_.count(mechanism) > 0; }
  /// Whether anything was learned of point `point`.
  bool learned_point(const std::string& point) const { return points_.count(point) > 0; }
  /// Takes in one observed repetition of `mechanism` (and of its point `point`, unless empty): its
  /// wall time and the warm-up and window it was planned for (seconds). The overhead is the median
  /// of the last kRecent observations of wall less planned (the first replaces the default; never
  /// below 0): a machine's overheads drift (another load, another kernel) and are followed within a
  /// few runs, while one start that a loaded machine or a stalled run made slow moves it not at
  /// all. The kMaxPoints points learned last are kept.
  void learn(const std::string& mechanism, double wall_s, double planned_s, const std::string& point = {});
  static constexpr size_t kRecent = 8;
  /// The most points the model keeps (about 1 MB of file): the full preset's grid and then some.
  static constexpr size_t kMaxPoints = 4096;
  /// What is learned of a mechanism or a point.
  struct Observations {
    std::vector<double> recent;   // the last kRecent observations of wall less planned, oldest first
    std::vector<double> planned;  // the warm-up and window of each (empty: a file from before them)
    long samples = 0;             // all observations taken in
    uint64_t last = 0;            // when a point was last learned (the model's count of learn calls)
    double overhead_s() const;    // the median of `recent`, at least 0
    std::optional<double> fixed_s() const;
    void take(double wall_s, double planned_s);
  };
  /// Writes the model to its file atomically (a temporary of the run renamed over it, mode 0600),
  /// creating the state folder (0700) when missing. Returns "" or why it could not (a warning for
  /// the caller: the run goes on without it).
  std::string save() const;
  const std::string& path() const { return path_; }

 private:
  const Observations* find(const std::string& mechanism, const std::string& point) const;
  std::string path_;
  std::map<std::string, Observations> entries_;  // per mechanism
  std::map<std::string, Observations> points_;   // per point
  uint64_t learned_ = 0;                         // learn calls, the points' clock
};

/// Wraps `hooks` so that each repetition that completes teaches `model` its point's and its
/// mechanism's overhead (its wall time beyond warm-up and window), saved at most every
/// kModelSaveEveryS seconds and when the hooks are let go (the run's end, on every exit path); a
/// model that cannot be kept is said once on stderr and the run goes on. Every command that runs a plan
/// (`ipclab run`, `advise`) learns through it.
constexpr double kModelSaveEveryS = 2;
PlanHooks learning_hooks(PlanHooks hooks, std::shared_ptr<CostModel> model);

/// The shortest a budget may make windows and repetitions (a given value below a floor is kept:
/// a budget never lengthens anything).
struct Floors {
  double duration_s = 0.2, warmup_s = 0.05;
  int repetitions = 1;
};
constexpr Floors kFloors{};

/// The estimated seconds of one repetition of `b` under `opts`.
double estimate_repetition(const PlannedBenchmark& b, const RunOptions& opts, const CostModel& model);
/// The estimated seconds of point `b`: its repetitions (auto: kAutoMinRepetitions) of
/// estimate_repetition.
double estimate_point(const PlannedBenchmark& b, const RunOptions& opts, const CostModel& model);
/// The sum of estimate_point over `benchmarks`.
double estimate_plan(const std::vector<PlannedBenchmark>& benchmarks, const RunOptions& opts,
                     const CostModel& model);

/// What fit_budget did.
struct BudgetFit {
  std::optional<double> budget_s;  // none: no budget
  std::string source;              // "--budget", "preset" or "none"
  RunOptions asked, fitted;        // the options before and after fitting
  double estimate_s = 0;           // the plan's estimate, fitted
  bool changed = false;            // windows or repetitions were shortened
  /// The line that says what was done: "budget 5m: windows 1.0→0.4 s, repetitions 3→2; estimate
  /// 4m40s" ("budget 5m: fits as planned; estimate 1m10s" when nothing had to change).
  std::string text() const;
  /// context.budget of the results (docs/json-schema.md).
  nlohmann::json to_json() const;
};

/// The windows longest_windows found: the warm-up and window, and the seconds of one repetition of
/// every point with them.
struct FittedWindows {
  double duration_s = 0, warmup_s = 0, round_s = 0;
};
/// The longest warm-up and window — `asked`'s shortened by one factor, down to kFloors, to the
/// millisecond — with which `repetitions` repetitions of every point of `points` take at most
/// `limit_s` at `model`'s estimates; nullopt when not even the floors do.
std::optional<FittedWindows> longest_windows(std::span<const PlannedBenchmark> points,
                                             const RunOptions& asked, int repetitions, double limit_s,
                                             const CostModel& model);

/// Fits `opts` to `budget_s` (none: left as it is): first the warm-up and window, shortened by
/// one factor down to their floors, with the repetitions as asked; when that is not enough, one
/// repetition fewer at a time (down to the floor), each time with the longest windows that fit.
/// --repetitions auto keeps its fewest repetitions and caps max_repetitions at what fits.
/// UsageError, naming a budget that would fit and a narrower selection, when even the floors do
/// not fit.
BudgetFit fit_budget(const std::vector<PlannedBenchmark>& benchmarks, const RunOptions& opts,
                     std::optional<double> budget_s, const std::string& source, const CostModel& model);

/// A duration as every option of time takes it (--budget, --duration, --warmup, advise's --budget):
/// seconds, bare or with a unit ms, s, m or h ("60", "0.5", "500ms", "90s", "5m", "1.5h"), in
/// seconds; nothing when `text` is not one (no blanks, signs other than '-', nan or inf).
std::optional<double> parse_duration(std::string_view text);
/// The units parse_duration reads, as a help text says them.
inline constexpr const char* kDurationSyntax = "seconds, or with a unit: 500ms, 90s, 5m, 1h";

/// A --budget text (parse_duration) within `min_s` and `max_s` (1 s and 1000 h for `ipclab run`);
/// "none" is nothing when `none_ok`. UsageError naming `option`, the bounds and the syntax otherwise.
std::optional<double> parse_budget(const std::string& text, const std::string& option = "--budget",
                                   double min_s = 1, double max_s = 1000 * 3600, bool none_ok = true);

/// Seconds as a person reads them: "45s", "4m40s", "1h05m".
std::string duration_text(double s);

/// Keeps a run within its budget as it goes. fit_budget fits the windows once, before anything ran,
/// at the cost model's estimates; a start-up the model has not learned (a new machine: every one)
/// or has learned wrong is found only as the run goes. So before each point's first repetition
/// its warm-up and window are fitted anew (longest_windows) to what the budget has left over the
/// points still to run, at the repetitions fit_budget chose and the model as learned so far in this
/// run: an estimate found pessimistic gives the later points their windows back, up to what was
/// asked and never beyond; one found optimistic shortens them, down to the floors and never below.
/// The run then ends near its budget whichever way the estimate erred. Without a budget every point
/// runs with the fitted options. Not for an interleaved run, whose points' repetitions are spread
/// over the whole run: its windows are fitted once (the runner asks no options then).
class BudgetPacer {
 public:
  /// The windows a point starts with are kept while the points left hold what the budget has left
  /// within this share of it, either way; beyond it they are fitted anew.
  static constexpr double kPaceBand = 0.05;
  /// `benchmarks` and `model` are read as the run goes and must outlive the pacer.
  BudgetPacer(const std::vector<PlannedBenchmark>& benchmarks, const BudgetFit& fit,
              std::shared_ptr<const CostModel> model);
  /// The options of point `index` (its place in `benchmarks`), `elapsed_s` into the run, as its
  /// first repetition starts; the later points' options_of say the same until they start.
  RunOptions start(size_t index, double elapsed_s);
  /// The options point `index` ran with, or would if it started next.
  const RunOptions& options_of(size_t index) const;
  /// PlanHooks::options, on the run's clock from its first call.
  std::function<RunOptions(size_t, const RunOptions&)> hook();
  /// Points paced, and those whose windows differ from the fitted ones.
  size_t paced() const { return paced_; }
  size_t moved() const { return moved_; }
  /// What pacing did, for the run's end: "budget: 40 of 146 points ran with windows of 0.31 to
  /// 0.52 s, not 0.402 s: fitted again …"; "" when every point ran with the fitted windows.
  std::string text() const;

 private:
  const std::vector<PlannedBenchmark>& benchmarks_;
  BudgetFit fit_;
  std::shared_ptr<const CostModel> model_;
  std::vector<RunOptions> options_;
  size_t paced_ = 0, moved_ = 0;
  double shortest_ = 0, longest_ = 0;  // the windows of the points that moved
};

}  // namespace ipclab
