#include "core/plan/runner.hpp"

#include <fnmatch.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <tuple>

#include "core/base/error.hpp"
#include "core/machine/numa.hpp"
#include "core/machine/placement.hpp"
#include "core/machine/window.hpp"
#include "core/measure/kcounters.hpp"
#include "core/model/std_params.hpp"
#include "core/remote/remote.hpp"
#include "core/run/patterns.hpp"
#include "core/stats/statistics.hpp"

namespace ipclab {

namespace {

bool filter_matches(const std::string& filter, const Mechanism& m) {
  const std::string full = m.full_name();
  if (filter.find_first_of("*?[") != std::string::npos)
    return fnmatch(filter.c_str(), full.c_str(), 0) == 0 || fnmatch(filter.c_str(), m.name.c_str(), 0) == 0;
  if (filter == m.suite || filter == full) return true;
  // A bare mechanism name selects mechanisms in every suite, unless it names a suite itself: a
  // suite's name selects that suite only, whatever a mechanism elsewhere is called.
  if (filter == m.name) {
    for (auto& other : Registry::get().mechanisms())
      if (other.suite == filter) return false;
    return true;
  }
  return full.rfind(filter, 0) == 0 && (full.size() == filter.size() || full[filter.size()] == '/');
}

}  // namespace

std::vector<const Mechanism*> select_mechanisms(const std::vector<std::string>& filters) {
  std::vector<const Mechanism*> out;
  auto& all = Registry::get().mechanisms();
  for (auto& f : filters) {
    if (f.empty())
      throw UsageError(
          "empty filter; give a suite, suite/mechanism or glob (see `ipclab list`), or none for all");
    if (printable(f) != f)
      throw UsageError(
          fmt::format("filter '{}' has control characters or bytes that are not UTF-8; "
                      "filters are suite and mechanism names (see `ipclab list`)",
                      brief(f)));
    bool any = false;
    for (auto& m : all)
      if (filter_matches(f, m)) any = true;
    if (!any)
      throw UsageError(
          fmt::format("no benchmark matches '{}'; see `ipclab list` for suites and mechanisms", brief(f)));
  }
  for (auto& m : all) {
    bool take = filters.empty();
    for (auto& f : filters) take = take || filter_matches(f, m);
    if (take) out.push_back(&m);
  }
  return out;
}

namespace {

// Why `point` of `m` cannot run on `cpus`, or "": a layout needs as many distinct CPUs as it places
// sides on; shared memory asked for a node needs that node here (core/machine/numa.hpp); then the
// mechanism's own rules.
std::string point_problem(const Mechanism& m, const Params& point, const std::vector<int>& cpus) {
  const std::string layout = point.str_or("placement", "unpinned");
  std::string why = placement_problem(layout, cpus);
  if (why.empty() && point.has("memory"))
    why = numa::memory_problem(point.str("memory"), layout, numa::nodes_here());
  if (why.empty() && m.check) why = m.check(point);
  return why;
}

// The point as a benchmark of the plan, under its name: suite/mechanism/param:value/...
PlannedBenchmark planned_point(const Mechanism* m, Params point) {
  std::string name = m->full_name();
  if (!point.items().empty()) name += "/" + point.path();
  return {m, std::move(point), std::move(name)};
}

}  // namespace

std::vector<PlannedBenchmark> plan(const std::vector<const Mechanism*>& mechs, Preset preset,
                                   const Overrides& overrides, const std::vector<int>& cpus) {
  std::set<std::string> known;
  for (auto* m : mechs)
    for (auto& p : m->params) known.insert(p.name);
  for (auto& [name, _] : overrides)
    if (!known.count(name))
      throw UsageError(fmt::format(
          "unknown parameter '{}' for the selected benchmarks; see `ipclab list SUITE`", brief(name)));

  std::vector<PlannedBenchmark> out;
  std::string dropped;  // why the first impossible point was left out
  for (auto* m : mechs) {
    // An impossible point is refused when the user asked for it: some of its values were asked
    // for (-p) and the rest are defaults. One that a preset's own spread of values made (with
    // --preset, a parameter not asked for that takes several values) is left out, as in a preset
    // grid with nothing asked.
    bool asked = false, spread = false;
    for (auto& p : m->params) {
      asked = asked || overrides.count(p.name);
      // The preset's own values, scaled ones included (a per_cpu grid spreads on a larger machine).
      spread = spread || (!overrides.count(p.name) && preset_values(p, preset, cpus.size()).size() > 1);
    }
    asked = asked && !spread;
    for (auto& point : expand_grid(m->params, preset, overrides, cpus.size())) {
      if (const std::string why = point_problem(*m, point, cpus); !why.empty()) {
        if (asked) throw UsageError(fmt::format("{}/{}: {}", m->full_name(), point.path(), why));
        if (dropped.empty()) dropped = fmt::format("{}/{}: {}", m->full_name(), point.path(), why);
        continue;
      }
      out.push_back(planned_point(m, std::move(point)));
    }
  }
  if (out.empty())
    throw UsageError(fmt::format("nothing to run: every combination is impossible here, e.g. {}", dropped));
  // A parameter asked for that no point takes applies only with values not asked for.
  for (auto& [name, _] : overrides) {
    bool used = false;
    for (auto& b : out) used = used || b.params.has(name);
    if (used) continue;
    for (auto* m : mechs)
      for (auto& p : m->params)
        if (p.name == name && !p.only_with.first.empty()) {
          std::string vals;
          for (auto& v : p.only_with.second) vals += (vals.empty() ? "" : ",") + v;
          throw UsageError(fmt::format("parameter '{}' applies only with {}={}; add -p {}={}", name,
                                       p.only_with.first, vals, p.only_with.first, p.only_with.second[0]));
        }
  }
  return out;
}

std::vector<PlannedBenchmark> first_answers_first(std::vector<PlannedBenchmark> planned,
                                                  const std::vector<const Mechanism*>& selected,
                                                  const std::vector<int>& cpus) {
  std::vector<PlannedBenchmark> first;
  std::set<std::string> names;
  const auto& registry = Registry::get();
  for (const auto& suite : registry.suites()) {
    if (!suite.first) continue;
    const bool whole = std::all_of(registry.mechanisms().begin(), registry.mechanisms().end(), [&](auto& m) {
      return m.suite != suite.name || std::find(selected.begin(), selected.end(), &m) != selected.end();
    });
    if (!whole) continue;
    for (const auto& name : suite.first->mechanisms) {
      const auto m = std::find_if(selected.begin(), selected.end(),
                                  [&](auto* x) { return x->suite == suite.name && x->name == name; });
      if (m == selected.end()) continue;
      // The grid's points, the other parameters at their defaults; one that cannot run is left out.
      for (auto& point : expand_grid((*m)->params, Preset::Default, suite.first->grid, cpus.size())) {
        if (!point_problem(**m, point, cpus).empty()) continue;
        PlannedBenchmark b = planned_point(*m, std::move(point));
        b.first = suite.first->title;
        if (names.insert(b.name).second) first.push_back(std::move(b));
      }
    }
  }
  std::erase_if(planned, [&](const PlannedBenchmark& b) { return names.count(b.name) > 0; });
  first.insert(first.end(), std::make_move_iterator(planned.begin()), std::make_move_iterator(planned.end()));
  return first;
}

std::vector<PlannedBenchmark> cpu_matrix(const std::vector<PlannedBenchmark>& benchmarks,
                                         const std::string& mode, const std::vector<int>& cpus,
                                         bool placement_asked) {
  if (mode != "every" && mode != "class")
    throw UsageError(
        fmt::format("--cpu-matrix '{}': use every (every pair of --cpus) or class (one pair per "
                    "placement class)",
                    brief(mode)));
  if (placement_asked)
    throw UsageError("--cpu-matrix places the two sides itself, pair by pair; drop -p placement");
  if (cpus.size() < 2)
    throw UsageError("--cpu-matrix needs two CPUs or more; give --cpus with at least two, e.g. --cpus 0,1");
  if (mode == "every" && cpus.size() > 64)
    throw UsageError(
        fmt::format("--cpu-matrix every over {} CPUs makes {} pairs; give --cpus with at most 64 "
                    "CPUs, or use --cpu-matrix class",
                    cpus.size(), cpus.size() * (cpus.size() - 1) / 2));
  auto two_sided = [](const PlannedBenchmark& b) {
    for (auto& spec : b.mech->params)
      if (spec.name == "placement")
        return std::find(spec.choices.begin(), spec.choices.end(), "cross") != spec.choices.end() &&
               b.params.has("placement") && std_params::is_roundtrip(b.params);
    return false;
  };
  // The pairs, with the class each stands for.
  std::vector<std::tuple<int, int, std::string>> pairs;
  if (mode == "every") {
    for (size_t i = 0; i < cpus.size(); ++i)
      for (size_t j = i + 1; j < cpus.size(); ++j) pairs.emplace_back(cpus[i], cpus[j], "");
  } else {
    for (const char* cls : {"smt", "llc", "cross_llc", "cross_numa"}) try {
        const ResolvedPair p = resolve_pair(cls, cpus);
        pairs.emplace_back(p.a, p.b, cls);
      } catch (const Skip&) {
      }
  }
  std::vector<PlannedBenchmark> out;
  std::set<std::string> names;  // points that differed only in their placement are one point here
  for (auto& b : benchmarks) {
    if (!two_sided(b)) continue;
    for (auto& [a, c, cls] : pairs) {
      PlannedBenchmark m = b;
      m.params.set("placement", "cross");
      m.params.set("cpus", fmt::format("{},{}", a, c));
      m.name = m.mech->full_name() + "/" + m.params.path();
      m.cpus = {a, c};
      m.cpu_matrix = mode == "every" ? "every_pair" : "per_class";
      m.cpu_class = cls;
      if (names.insert(m.name).second) out.push_back(std::move(m));
    }
  }
  if (out.empty())
    throw UsageError(
        "--cpu-matrix runs two-sided round trips, and none was selected; choose a benchmark with a placement "
        "of two sides and round trips, e.g. messaging/shm_spsc -p pattern=roundtrip, or pingpong/thread");
  return out;
}

namespace {

// The options point `b` runs with: the run's, on the point's own pair of CPUs when it has one (a
// point of a CPU matrix).
RunOptions options_for(const PlannedBenchmark& b, RunOptions run) {
  if (!b.cpus.empty()) run.cpus = b.cpus;
  return run;
}

// The workload of one repetition, by what the mechanism is: a transport's pattern (its receivers on
// the other host across the run's link, --remote), a loop, a server benchmark's clients on the
// other host (--remote-role client), or the mechanism's own.
void run_workload_of(Session& s, const Mechanism& m) {
  remote::Link* const link = s.options().remote;
  if (m.transport) {
    std::optional<remote::LinkReceivers> far;
    if (link) far.emplace(*link);
    run_transport(s, far ? &*far : nullptr);
  } else if (m.loop) {
    run_loop(s);
  } else if (link && link->options().far_clients) {
    remote::run_far_clients(s, *link);
  } else {
    m.workload(s);
  }
}

}  // namespace

Record run_one(const PlannedBenchmark& b, const RunOptions& opts, int repetition) {
  Record rec;
  rec.name = b.name;
  rec.suite = b.mech->suite;
  rec.mechanism = b.mech->name;
  rec.params = b.params;
  rec.repetition = repetition;
  // Opened before the session, on this thread: every thread and process the benchmark creates
  // from here on inherits them (core/measure/kcounters.hpp).
  std::optional<KernelCounters> kernel;
  if (opts.kernel_counters) kernel.emplace();
  Session s(*b.mech, b.params, options_for(b, opts), rec);
  if (kernel) s.count_kernel(&*kernel);
  if (!b.cpu_matrix.empty()) {
    rec.extra["cpu_matrix"] = b.cpu_matrix;
    if (!b.cpu_class.empty()) rec.extra["cpu_class"] = b.cpu_class;
  }
  // Every phase under a watchdog: the set-up and clean-up too.
  s.run_workload([&] { run_workload_of(s, *b.mech); });
  if (rec.status == Status::Ok && !rec.integrity.clean()) rec.fail("integrity: " + rec.integrity.text());
  if (rec.status == Status::Ok && rec.ops == 0) rec.fail("no operation completed in the measured window");
  if (const Suite* suite = Registry::get().suite(rec.suite);
      suite && suite->finish && rec.status == Status::Ok) {
    try {
      suite->finish(s);
    } catch (const std::exception& e) {
      rec.fail(e.what());
    }
  }
  finish_kernel(rec.kernel, rec.ops);  // per op once the workload has counted its operations
  flag_steal(rec);
  flag_short_window(rec, window_floor().floor_s);
  return rec;
}

bool paired(const RunOptions& o) { return !o.antagonists.empty() && o.quiet_pairs; }

namespace {

// The figures of a quiet repetition its noisy pair keeps (extra.noise_pair.quiet), and what
// add_inflation reads of both: time per op, the rate, the latency percentiles.
nlohmann::json pair_figures(const Record& r) {
  nlohmann::json j{{"status", status_name(r.status)},
                   {"time_per_op_ns", r.time_per_op_ns()},
                   {"ops_per_s", r.wall_s > 0 ? double(r.ops) / r.wall_s : 0.0}};
  if (r.latency)
    j["latency_ns"] = {{"p50", r.latency->p50}, {"p99", r.latency->p99}, {"p999", r.latency->p999}};
  return j;
}

}  // namespace

Record run_noise_pair(const PlannedBenchmark& b, const RunOptions& noisy, int repetition) {
  RunOptions quiet = noisy;
  quiet.antagonists.clear();
  // ABBA over the repetitions: quiet first in the even ones, noisy first in the odd ones, so that a
  // drift of the machine falls on both alike.
  const bool quiet_first = repetition % 2 == 0;
  std::optional<Record> q;
  if (quiet_first) q = run_one(b, quiet, repetition);
  Record n = run_one(b, noisy, repetition);
  if (!quiet_first) q = run_one(b, quiet, repetition);
  n.extra["noise_pair"] = {{"order", quiet_first ? "quiet, noisy" : "noisy, quiet"},
                           {"quiet", pair_figures(*q)}};
  if (q->status == Status::Failed && n.status == Status::Ok)
    n.fail("its quiet pair failed: " + q->error);  // no inflation without what it inflates
  return n;
}

void add_inflation(Record& agg, const std::vector<Record>& reps) {
  // Per pair: noisy over quiet of each figure; the median of those ratios with its bootstrap 95%
  // interval, seeded from the point's name (as the aggregate's own intervals).
  std::vector<std::vector<double>> cols(5);
  static const char* kKeys[] = {"time_per_op", "p50", "p99", "p999", "throughput"};
  size_t pairs = 0;
  for (const Record& n : reps) {
    if (n.status != Status::Ok || !n.extra.contains("noise_pair")) continue;
    const auto& q = n.extra["noise_pair"]["quiet"];
    if (q.value("status", "") != "ok") continue;
    auto ratio = [](double a, double b) { return b > 0 ? a / b : std::nan(""); };
    const auto& ql = q.contains("latency_ns") ? q["latency_ns"] : nlohmann::json::object();
    const double qt = q.value("time_per_op_ns", 0.0), qr = q.value("ops_per_s", 0.0);
    const double nr = n.wall_s > 0 ? double(n.ops) / n.wall_s : 0.0;
    const double v[5] = {ratio(n.time_per_op_ns(), qt),
                         n.latency ? ratio(double(n.latency->p50), ql.value("p50", 0.0)) : std::nan(""),
                         n.latency ? ratio(double(n.latency->p99), ql.value("p99", 0.0)) : std::nan(""),
                         n.latency ? ratio(double(n.latency->p999), ql.value("p999", 0.0)) : std::nan(""),
                         ratio(nr, qr)};
    for (int k = 0; k < 5; ++k) cols[size_t(k)].push_back(v[k]);
    ++pairs;
  }
  if (!pairs) return;
  nlohmann::json inf{{"pairs", pairs},
                     {"means",
                      "noisy over quiet, per ABBA pair of repetitions: the median of the pairs' ratios "
                      "and its bootstrap 95% interval; throughput is the noisy rate over the quiet one"}};
  for (int k = 0; k < 5; ++k) {
    std::vector<double> col;
    for (double x : cols[size_t(k)])
      if (std::isfinite(x)) col.push_back(x);
    if (col.size() != pairs) {
      inf[kKeys[k]] = nullptr;  // a figure one of the pairs lacks (no latency timed)
      continue;
    }
    nlohmann::json f{{"ratio", median_of(col)}};
    if (pairs >= 3) {
      const auto ci = bootstrap_median_ci({col}, seed_of(agg.name + "/inflation/" + kKeys[k]));
      f["ci"] = {ci[0][0], ci[0][1]};
    } else {
      f["ci"] = nullptr;  // fewer than 3 pairs give no interval
    }
    inf[kKeys[k]] = f;
  }
  agg.extra["inflation"] = inf;
}

namespace {

// The 95% CI half-width of an aggregate's median time per op, in % of that median (none without
// an interval: fewer than 3 ok repetitions).
std::optional<double> halfwidth_pct(const Record& agg) {
  const double med = agg.time_per_op_ns();
  if (!agg.ci.is_object() || !(med > 0)) return std::nullopt;
  const auto& ci = agg.ci["time_per_op_ns"];
  return 50.0 * (ci[1].get<double>() - ci[0].get<double>()) / med;
}

}  // namespace

namespace {

// One run_plan in its named steps: a repetition of a benchmark, its aggregate, --repetitions auto's
// stopping rule, and the three orders the repetitions run in.
class PlanRun {
 public:
  PlanRun(const std::vector<PlannedBenchmark>& benchmarks, const RunOptions& opts, const PlanHooks& hooks,
          std::optional<uint64_t> seed)
      : benchmarks_(benchmarks),
        opts_(opts),
        hooks_(hooks),
        seed_(seed),
        n_(benchmarks.size()),
        runs_(n_),
        aggregates_(n_),
        closed_(n_, false),
        point_opts_(n_, opts) {}

  // --repetitions auto, back to back: each benchmark until it has what it needs, its aggregate
  // right after.
  void auto_back_to_back() {
    for (size_t b = 0; b < n_; ++b) {
      while (!enough(b)) run(b);
      aggregate(b);
    }
  }
  // --repetitions auto, interleaved: rounds of one repetition of every benchmark not done yet, each
  // round in its own random order from the seed, so that a drift of the machine falls on every
  // benchmark alike.
  void auto_interleaved() {
    std::mt19937_64 rng(*seed_);
    for (;;) {
      std::vector<size_t> round;
      for (size_t b = 0; b < n_; ++b)
        if (!closed_[b]) round.push_back(b);
      if (round.empty()) break;
      for (size_t i = round.size(); i > 1; --i) std::swap(round[i - 1], round[rng() % i]);
      for (size_t b : round) run(b);
      for (size_t b : round) enough(b);
    }
    for (size_t b = 0; b < n_; ++b) aggregate(b);
  }
  // A fixed count of repetitions: back to back, each aggregate after its benchmark's; or in one
  // random order from the seed, the aggregates at the end.
  void fixed_count() {
    const size_t reps = size_t(opts_.repetitions);
    std::vector<size_t> order;  // the benchmark of each repetition, in the order they run
    for (size_t b = 0; b < n_; ++b) order.insert(order.end(), reps, b);
    if (seed_) {
      // Fisher-Yates over mt19937_64 with a plain modulo: std::shuffle's use of the generator
      // differs between standard libraries, and one seed must give one order everywhere.
      std::mt19937_64 rng(*seed_);
      for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
    }
    for (size_t b : order) {
      run(b);
      if (!seed_ && runs_[b].size() == reps) aggregate(b);
    }
    if (seed_)
      for (size_t b = 0; b < n_; ++b) aggregate(b);
  }
  // The records grouped per benchmark in plan order: its repetitions, then its aggregate.
  std::vector<Record> records() const {
    std::vector<Record> records;
    for (size_t b = 0; b < n_; ++b) {
      records.insert(records.end(), runs_[b].begin(), runs_[b].end());
      if (aggregates_[b]) records.push_back(*aggregates_[b]);
    }
    return records;
  }

 private:
  // The repetitions still to run as far as known (auto: up to the minimum, or one more), for the
  // progress line.
  size_t total() const {
    if (opts_.ci_target_pct <= 0) return n_ * size_t(opts_.repetitions);
    const size_t min_auto = size_t(kAutoMinRepetitions);
    size_t t = done_;
    for (size_t b = 0; b < n_; ++b)
      if (!closed_[b]) t += std::max<size_t>(1, min_auto - std::min(min_auto, runs_[b].size()));
    return t;
  }
  // One repetition of benchmark b, with its options: the run's, or what hooks.options gives it as
  // it starts (a paced budget's windows; the run's link stays the run's); a benchmark run with its
  // own windows says so in each record (extra.window).
  void run(size_t b) {
    if (runs_[b].empty() && hooks_.options && !seed_) {
      point_opts_[b] = hooks_.options(b, opts_);
      point_opts_[b].remote = opts_.remote;
    }
    const RunOptions& o = point_opts_[b];
    if (hooks_.starting) hooks_.starting(benchmarks_[b], o, done_, total());
    if (paired(o))
      runs_[b].push_back(run_noise_pair(benchmarks_[b], o, int(runs_[b].size())));
    else
      runs_[b].push_back(run_one(benchmarks_[b], o, int(runs_[b].size())));
    if (o.duration_s != opts_.duration_s || o.warmup_s != opts_.warmup_s)
      runs_[b].back().extra["window"] = {{"duration_s", o.duration_s}, {"warmup_s", o.warmup_s}};
    ++done_;
    if (hooks_.finished) hooks_.finished(runs_[b].back());
  }
  void aggregate(size_t b) {
    if (runs_[b].size() < 2) return;
    if (!aggregates_[b]) aggregates_[b] = aggregate_median(runs_[b]);
    add_inflation(*aggregates_[b], runs_[b]);
    if (hooks_.finished) hooks_.finished(*aggregates_[b]);
  }
  // --repetitions auto: whether benchmark b is done — its interval narrow enough, the cap
  // reached, or a repetition failed (a failing benchmark's interval is not worth chasing) — and
  // then its aggregate, with the outcome.
  bool enough(size_t b) {
    const size_t cap = size_t(opts_.max_repetitions);
    if (runs_[b].size() < size_t(kAutoMinRepetitions)) return false;
    Record agg = aggregate_median(runs_[b]);
    const auto hw = halfwidth_pct(agg);
    const bool met = hw && *hw <= opts_.ci_target_pct;
    const bool failed =
        std::any_of(runs_[b].begin(), runs_[b].end(), [](const Record& r) { return r.status != Status::Ok; });
    if (!met && !failed && runs_[b].size() < cap) return false;
    agg.repetitions_auto = {{"target_pct", opts_.ci_target_pct},
                            {"cap", cap},
                            {"met", met},
                            {"halfwidth_pct", hw ? nlohmann::json(*hw) : nlohmann::json(nullptr)},
                            {"repetitions", runs_[b].size()}};
    aggregates_[b] = std::move(agg);
    closed_[b] = true;
    return true;
  }

  const std::vector<PlannedBenchmark>& benchmarks_;
  const RunOptions& opts_;
  const PlanHooks& hooks_;
  const std::optional<uint64_t> seed_;
  const size_t n_;
  std::vector<std::vector<Record>> runs_;
  std::vector<std::optional<Record>> aggregates_;
  std::vector<bool> closed_;  // auto: the benchmark has what it needs
  std::vector<RunOptions> point_opts_;
  size_t done_ = 0;
};

}  // namespace

std::vector<Record> run_plan(const std::vector<PlannedBenchmark>& benchmarks, const RunOptions& opts,
                             const PlanHooks& hooks, std::optional<uint64_t> interleave_seed) {
  PlanRun plan_run(benchmarks, opts, hooks, interleave_seed);
  if (opts.ci_target_pct > 0 && !interleave_seed)
    plan_run.auto_back_to_back();
  else if (opts.ci_target_pct > 0)
    plan_run.auto_interleaved();
  else
    plan_run.fixed_count();
  return plan_run.records();
}

const PresetSpec* find_preset(const std::string& name) {
  // The default: every mechanism at its defaults after the suites' first answers, one second
  // measured per repetition, three repetitions, within four minutes (`make bench`: built and
  // measured within about twelve on a fresh 2-vCPU machine); quick: the whole lab's grids within
  // five minutes (a budget is a time, whatever the machine); full: the complete grids, five
  // repetitions of two seconds, however long they take.
  static const PresetSpec kPresets[] = {
      {"", Preset::Default, RunOptions{.duration_s = 1.0, .warmup_s = 0.2, .repetitions = 3}, 4 * 60},
      {"quick", Preset::Quick, RunOptions{.duration_s = 0.25, .warmup_s = 0.05, .repetitions = 3}, 5 * 60},
      {"full", Preset::Full, RunOptions{.duration_s = 2.0, .warmup_s = 0.5, .repetitions = 5}, 0},
  };
  for (const auto& p : kPresets)
    if (name == p.name) return &p;
  return nullptr;
}

}  // namespace ipclab
