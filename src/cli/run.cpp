// `ipclab run`: parse → plan → run → report. Every option and parameter is checked, and every
// result target, before the run creates anything (docs/reliability.md).
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <tuple>

#include "cli/commands.hpp"
#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/base/fs.hpp"
#include "core/machine/env.hpp"
#include "core/machine/placement.hpp"
#include "core/measure/antagonist.hpp"
#include "core/output/reporter.hpp"
#include "core/ownership/cleanup.hpp"
#include "core/ownership/crash.hpp"
#include "core/ownership/journal.hpp"
#include "core/ownership/sweep.hpp"
#include "core/plan/estimate.hpp"
#include "core/plan/runner.hpp"
#include "core/remote/remote.hpp"
#include "core/run/fault.hpp"
#include "core/store/store.hpp"

namespace ipclab::cli {

namespace {

// `ipclab run`'s arguments as given (an empty text included), parsed by cmd_run; an option left
// out is nothing.
struct RunArgs {
  std::vector<std::string> filters;
  std::vector<std::string> params;
  // As given (an empty text included), parsed in cmd_run; nothing when the option is left out.
  std::optional<std::string> preset, repetitions, duration, warmup, cpus, out_dir, json, csv, markdown, seed;
  std::optional<std::string> ci_target, max_repetitions;  // with --repetitions auto
  std::optional<std::string> cpu_matrix;                  // every | class
  bool interleave = false;
  std::optional<std::string> budget;  // --budget: 5m, 90s, 1h, none
  bool plan_only = false;             // --plan: print the plan, run nothing
  bool dry_run = false;               // --dry-run: the plan for a person, run nothing
  bool kernel_counters = false;
  std::vector<std::string> antagonists;  // --antagonist KIND[@WHERE][:LEVEL], repeatable
  bool unpaired = false;                 // --unpaired: no quiet repetition beside each noisy one
  bool verbose = false;  // --verbose: the console shows each repetition, not only each point's median
  // --remote [USER@]HOST and its companions (core/remote/remote.hpp): the other side runs there.
  std::optional<std::string> remote, remote_ipclab, remote_address, remote_role;
  std::vector<std::string> ssh_options;
  // The results store (core/store/store.hpp): --store PATH, --no-store, --store-wait TIME.
  std::optional<std::string> store, store_wait;
  bool no_store = false;
};

// The result files to write, as (option, path): --json/--csv/--markdown, and --out's three.
std::vector<std::pair<std::string, std::string>> output_targets(const RunArgs& a) {
  std::vector<std::pair<std::string, std::string>> t;
  for (auto [option, path, file] :
       {std::tuple{"--json", &a.json, "results.json"}, std::tuple{"--csv", &a.csv, "results.csv"},
        std::tuple{"--markdown", &a.markdown, "results.md"}}) {
    if (*path)
      t.emplace_back(option, **path);  // an empty one is refused by check_target
    else if (a.out_dir)
      t.emplace_back(option, *a.out_dir + "/" + file);
  }
  return t;
}

// Two outputs naming one file would leave one result, the other lost: refused, each explicit
// path (--json, --csv, --markdown) against the others and against all three files of --out,
// compared as the paths they resolve to.
void check_distinct_targets(const RunArgs& a) {
  std::vector<std::pair<std::string, std::string>> named;  // (what, identity)
  for (auto [option, path] :
       {std::pair{"--json", &a.json}, std::pair{"--csv", &a.csv}, std::pair{"--markdown", &a.markdown}})
    if (*path && !(*path)->empty()) named.emplace_back(fmt::format("{} {}", option, brief(**path)), **path);
  if (a.out_dir && !a.out_dir->empty())
    for (auto* file : {"results.json", "results.csv", "results.md"})
      named.emplace_back(fmt::format("--out {} (its {})", brief(*a.out_dir), file), *a.out_dir + "/" + file);
  for (auto& [what, path] : named) path = output::target_identity(path);
  for (size_t i = 0; i < named.size(); ++i)
    for (size_t j = i + 1; j < named.size(); ++j)
      if (named[i].second == named[j].second)
        throw UsageError(
            fmt::format("{} and {} name the same file, and one result would be lost; give "
                        "each output its own path",
                        named[i].first, named[j].first));
}

// --out: an existing folder (true), or a new one whose parent exists and is writable (false).
bool check_out_dir(const std::string& dir) {
  if (dir.empty()) throw UsageError("--out needs a folder name, e.g. --out results/now");
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    output::check_target("--out", dir);  // its text, and its parent folder
    return false;
  }
  if (!S_ISDIR(st.st_mode))
    throw UsageError(fmt::format("--out {} is not a folder; name a folder for the results", brief(dir)));
  return true;
}

// Creates --out (0700 whatever the umask) unless it exists.
void make_out_dir(const std::string& dir) {
  try {
    make_private_dir(dir);
  } catch (const std::system_error& e) {
    throw UsageError(fmt::format("--out {}: {}; choose a writable folder", brief(dir), e.code().message()));
  }
}

// The reporters of the run: the console, then one per result file (--json, --csv, --markdown,
// or --out's three). Constructing them checks their targets, before anything is created.
std::vector<std::unique_ptr<output::Reporter>> make_reporters(
    const RunArgs& a, const std::vector<PlannedBenchmark>& benchmarks) {
  std::vector<std::unique_ptr<output::Reporter>> reporters;
  reporters.push_back(
      std::make_unique<output::ConsoleReporter>(stdout, output::console_columns(stdout), a.verbose));
  const bool out_exists = a.out_dir && check_out_dir(*a.out_dir);
  check_distinct_targets(a);
  std::set<std::string> suites;
  for (auto& b : benchmarks) suites.insert(b.mech->suite);
  for (auto& [option, path] : output_targets(a)) {
    const bool folder_is_new = a.out_dir && !out_exists && path.rfind(*a.out_dir + "/", 0) == 0;
    if (option == "--json")
      reporters.push_back(std::make_unique<output::JsonReporter>(option, path, folder_is_new));
    if (option == "--csv")
      reporters.push_back(std::make_unique<output::CsvReporter>(path, suites, folder_is_new));
    if (option == "--markdown")
      reporters.push_back(std::make_unique<output::MarkdownReporter>(option, path, folder_is_new));
  }
  // Last: the journal of finished records, removed once every result file above is written.
  if (const auto targets = output_targets(a); !targets.empty())
    reporters.push_back(std::make_unique<output::JournalReporter>(targets.front().second));
  return reporters;
}

// The runner's hooks for the console. Each record goes to the reporters as it completes, and a
// failed repetition is a FAILED line on stderr; each repetition is announced to the crash handler
// as it starts, and withdrawn once it has finished; each repetition that completed teaches the
// cost model (learning_hooks, core/plan/estimate.hpp). Progress, with the time left as the model estimates
// it: on a terminal, a line naming the benchmark (as the tables do: a full name may be wider than the line it
// must clear) rewritten in place; otherwise a "progress: " line per suite as it starts and as it ends,
// and one every kProgressEveryS seconds between (as a point starts), so that a log shows the run alive.
constexpr double kProgressEveryS = 5;

// What the console's hooks know of the run as it goes.
class Progress {
 public:
  Progress(const std::vector<PlannedBenchmark>& benchmarks, const RunOptions& opts,
           std::shared_ptr<CostModel> model, std::shared_ptr<BudgetPacer> pacer)
      : benchmarks_(benchmarks),
        opts_(opts),
        model_(std::move(model)),
        pacer_(std::move(pacer)),
        names_(output::table_names(benchmarks)) {
    reps_.assign(benchmarks.size(), 0);
    done_.assign(benchmarks.size(), false);
    for (size_t i = 0; i < benchmarks.size(); ++i) {
      index_[benchmarks[i].name] = i;
      ++suites_[benchmarks[i].mech->suite].second;
    }
  }

  // A repetition of `b` starts: the crash handler is told what it would leave unfinished, and the
  // progress shown.
  void starting(const PlannedBenchmark& b, size_t done, size_t total) {
    Record r;  // what run_one will fill in
    r.name = b.name;
    r.suite = b.mech->suite;
    r.mechanism = b.mech->name;
    r.params = b.params;
    r.repetition = reps_[index_[b.name]];
    crash::arm(r);
    if (terminal_) {
      fmt::print(stderr, "\r\033[K[{}/{}] {} (~{} left)", done + 1, total, names_.of(b.name),
                 duration_text(left()));
    } else if (begun_.insert(b.mech->suite).second ||
               double(now_ns() - last_line_) * 1e-9 >= kProgressEveryS) {
      progress_line(b.mech->suite);
    }
  }

  // A record completed: to the reporters, its failure and warnings to stderr, and counted.
  void finished(const Record& r, const std::vector<std::unique_ptr<output::Reporter>>& reporters) {
    crash::disarm();
    if (terminal_) fmt::print(stderr, "\r\033[K");
    for (auto& rep : reporters) rep->record(r);
    // On a terminal the point as the tables name it (the full name is wider than most lines); in a
    // log, its full name.
    const std::string name = terminal_ ? names_.of(r.name) : r.name;
    if (r.status == Status::Failed && r.run_type != "aggregate")
      fmt::print(stderr, "{}",
                 stderr_line(fmt::format("FAILED {} (repetition {}): ", name, r.repetition), r.error));
    for (auto& w : r.warnings)  // a repetition's own (flag_steal)
      fmt::print(stderr, "{}",
                 stderr_line(fmt::format("warning: {} (repetition {}): ", name, r.repetition),
                             output::warning_text(w)));
    const auto it = index_.find(r.name);
    if (it == index_.end()) return;
    const size_t i = it->second;
    if (r.run_type == "aggregate") return point_done(i);
    ++reps_[i];
    // Without auto, the last repetition ends the point (its aggregate, if any, follows); with
    // auto, its aggregate does.
    if (!autorep() && reps_[i] >= opts_.repetitions) point_done(i);
  }

 private:
  bool autorep() const { return opts_.ci_target_pct > 0; }

  // The seconds still to run: the repetitions left of each benchmark (auto: to its fewest, or one
  // more) at the model's estimate, which learns as the run goes, with the windows the pacer gave it
  // or would give it next.
  double left() const {
    double s = 0;
    for (size_t i = 0; i < benchmarks_.size(); ++i) {
      if (done_[i]) continue;
      const int more = autorep() ? std::max(1, kAutoMinRepetitions - reps_[i]) : opts_.repetitions - reps_[i];
      s += double(std::max(0, more)) * estimate_repetition(benchmarks_[i], pacer_->options_of(i), *model_);
    }
    return s;
  }

  void progress_line(const std::string& suite) {
    const auto [done, points] = suites_[suite];
    size_t all_done = 0;
    for (bool d : done_) all_done += d;
    last_line_ = now_ns();
    fmt::print(stderr, "progress: {} {}/{} points ({}/{} in all), {} elapsed, ~{} left\n", suite, done,
               points, all_done, done_.size(), duration_text(double(now_ns() - started_) * 1e-9),
               duration_text(left()));
  }

  // The suite's point `i` has every repetition it will get.
  void point_done(size_t i) {
    if (done_[i]) return;
    done_[i] = true;
    const std::string& suite = benchmarks_[i].mech->suite;
    auto& [done, points] = suites_[suite];
    if (++done == points && !terminal_) progress_line(suite);
  }

  const std::vector<PlannedBenchmark>& benchmarks_;
  const RunOptions opts_;
  const std::shared_ptr<CostModel> model_;
  const std::shared_ptr<BudgetPacer> pacer_;
  const output::TableNames names_;
  const bool terminal_ = isatty(2);
  const uint64_t started_ = now_ns();
  std::map<std::string, size_t> index_;                      // benchmark name → its place in the plan
  std::vector<int> reps_;                                    // repetitions finished per benchmark
  std::vector<bool> done_;                                   // every repetition of the benchmark finished
  std::map<std::string, std::pair<size_t, size_t>> suites_;  // points done, points
  std::set<std::string> begun_;
  uint64_t last_line_ = 0;  // when the last progress line was printed (not on a terminal)
};

PlanHooks console_hooks(const std::vector<PlannedBenchmark>& benchmarks, const RunOptions& opts,
                        const std::vector<std::unique_ptr<output::Reporter>>& reporters,
                        std::shared_ptr<CostModel> model, std::shared_ptr<BudgetPacer> pacer) {
  auto progress = std::make_shared<Progress>(benchmarks, opts, model, pacer);
  PlanHooks hooks;
  hooks.options = pacer->hook();
  hooks.starting = [progress](const PlannedBenchmark& b, const RunOptions&, size_t done, size_t total) {
    progress->starting(b, done, total);
  };
  hooks.finished = [progress, &reporters](const Record& r) { progress->finished(r, reporters); };
  return learning_hooks(std::move(hooks), model);
}

// The run's options: the preset's, then --duration, --warmup, --repetitions, --cpus; the order's
// seed when --interleave is on (drawn when --seed is not given).
RunOptions parse_options(const RunArgs& a, const PresetSpec& preset, std::optional<uint64_t>& seed) {
  RunOptions opts = preset.options;
  // Seconds and counts: whole decimal numbers (no blanks, junk, nan or inf) within bounds; the
  // bounds are written with "!(in range)" so that a NaN could never pass.
  if (a.duration) {
    auto v = parse_duration(*a.duration);
    if (!v || !(*v >= 0.001 && *v <= 3600))
      throw UsageError(fmt::format(
          "--duration '{}': give a time from 0.001 s (1 ms) to 3600 s (1h), {}; e.g. --duration 0.5",
          brief(*a.duration), kDurationSyntax));
    opts.duration_s = *v;
  }
  if (a.warmup) {
    auto v = parse_duration(*a.warmup);
    if (!v || !(*v >= 0 && *v <= 600))
      throw UsageError(fmt::format("--warmup '{}': give a time from 0 to 600 s (10m), {}; e.g. --warmup 0.1",
                                   brief(*a.warmup), kDurationSyntax));
    opts.warmup_s = *v;
  }
  const bool autorep = a.repetitions && *a.repetitions == "auto";
  if ((a.ci_target || a.max_repetitions) && !autorep)
    throw UsageError(fmt::format("{} applies to --repetitions auto; add --repetitions auto or drop {}",
                                 a.ci_target ? "--ci-target" : "--max-repetitions",
                                 a.ci_target ? "--ci-target" : "--max-repetitions"));
  if (autorep) {
    opts.ci_target_pct = 2.0;
    if (a.ci_target) {
      auto v = parse_real(*a.ci_target);
      if (!v || !(*v > 0 && *v <= 100))
        throw UsageError(
            fmt::format("--ci-target '{}': give a percentage above 0 up to 100, e.g. --ci-target 2",
                        brief(*a.ci_target)));
      opts.ci_target_pct = *v;
    }
    if (a.max_repetitions) {
      auto v = parse_integer(*a.max_repetitions);
      if (!v || !(*v >= kAutoMinRepetitions && *v <= 1000))
        throw UsageError(
            fmt::format("--max-repetitions '{}': give a whole number from {} to 1000, e.g. "
                        "--max-repetitions 30",
                        brief(*a.max_repetitions), kAutoMinRepetitions));
      opts.max_repetitions = int(*v);
    }
  } else if (a.repetitions) {
    auto v = parse_integer(*a.repetitions);
    if (!v || !(*v >= 1 && *v <= 1000))
      throw UsageError(
          fmt::format("--repetitions '{}': give a whole number from 1 to 1000, or auto, e.g. --repetitions 5",
                      brief(*a.repetitions)));
    opts.repetitions = int(*v);
  }
  opts.cpus = a.cpus ? parse_cpu_list(*a.cpus) : allowed_cpus();
  opts.kernel_counters = a.kernel_counters;
  for (auto& text : a.antagonists) opts.antagonists.push_back(parse_antagonist(text));
  if (a.unpaired && opts.antagonists.empty())
    throw UsageError("--unpaired pairs nothing without --antagonist; drop it, or add --antagonist KIND");
  opts.quiet_pairs = !a.unpaired;
  if (a.seed && !a.interleave)
    throw UsageError("--seed sets the order of --interleave; add --interleave or drop --seed");
  if (a.seed) {
    auto v = parse_integer(*a.seed);
    if (!v || *v < 0)
      throw UsageError(
          fmt::format("--seed '{}': give a whole number from 0, e.g. --seed 42", brief(*a.seed)));
    seed = uint64_t(*v);
  } else if (a.interleave) {
    seed = std::random_device{}() & 0x7fffffff;
  }
  return opts;
}

// --remote and its companions, checked before anything runs.
remote::Options parse_remote(const RunArgs& a) {
  remote::Options o;
  if (!a.remote) {
    if (!a.ssh_options.empty() || a.remote_ipclab || a.remote_address || a.remote_role)
      throw UsageError(fmt::format("{} applies to --remote; add --remote [USER@]HOST or drop it",
                                   !a.ssh_options.empty() ? "--ssh-option"
                                   : a.remote_ipclab      ? "--remote-ipclab"
                                   : a.remote_address     ? "--remote-address"
                                                          : "--remote-role"));
    return o;
  }
  if (a.remote->empty() || a.remote->front() == '-' ||
      a.remote->find_first_of(" \t\n\r") != std::string::npos)
    throw UsageError(
        fmt::format("--remote '{}': give a host as ssh takes it, e.g. --remote user@host", brief(*a.remote)));
  o.host = *a.remote;
  o.ssh_options = a.ssh_options;
  for (auto& opt : o.ssh_options)
    if (opt.find_first_not_of(" \t") == std::string::npos)
      throw UsageError("--ssh-option '': give an option as typed after ssh, e.g. --ssh-option '-p 2222'");
  if (a.remote_ipclab) {
    if (a.remote_ipclab->empty())
      throw UsageError(
          "--remote-ipclab '': give the path of ipclab on the remote host, e.g. /opt/ipclab/bin/ipclab");
    o.ipclab = *a.remote_ipclab;
  }
  if (a.remote_address) {
    if (auto why = remote::address_problem(*a.remote_address, o.host); !why.empty()) throw UsageError(why);
    o.address = *a.remote_address;
  }
  if (a.remote_role) {
    if (*a.remote_role != "server" && *a.remote_role != "client")
      throw UsageError(
          fmt::format("--remote-role '{}': give server (the server there, the clients here) or client (the "
                      "other way round)",
                      brief(*a.remote_role)));
    o.far_clients = *a.remote_role == "client";
  }
  return o;
}

// --budget, or the preset's own budget when none of the options it fits was given: (seconds,
// where it came from); nothing for none.
std::pair<std::optional<double>, std::string> budget_of(const RunArgs& a, const PresetSpec& preset) {
  if (a.budget) return {parse_budget(*a.budget), "--budget"};
  if (preset.budget_s > 0 && !a.duration && !a.warmup && !a.repetitions) return {preset.budget_s, "preset"};
  return {std::nullopt, "none"};
}

// --plan: one JSON object per line and benchmark, in plan order — its name, the parameter values
// as `-p` takes them back (`ipclab ab` runs each benchmark alone with them), and its estimated
// seconds. Creates nothing.
int print_plan(const RunArgs& a, const std::vector<PlannedBenchmark>& benchmarks, const RunOptions& opts,
               const CostModel& model) {
  if (a.out_dir || a.json || a.csv || a.markdown)
    throw UsageError("--plan runs nothing and writes no result; drop --out, --json, --csv and --markdown");
  for (auto& b : benchmarks) {
    nlohmann::json params = nlohmann::json::object();
    for (auto& [k, v] : b.params.items()) params[k] = v;
    nlohmann::json j{{"name", b.name},
                     {"suite", b.mech->suite},
                     {"mechanism", b.mech->name},
                     {"params", params},
                     {"estimate_s", std::round(estimate_point(b, opts, model) * 1000) / 1000}};
    fmt::print("{}\n", j.dump());
  }
  return 0;
}

// --dry-run: the plan for a person — points and estimated time per suite and in all, what the
// budget did, and where the estimates come from. Runs and creates nothing.
int print_dry_run(const RunArgs& a, const std::vector<PlannedBenchmark>& benchmarks, const BudgetFit& fit,
                  const CostModel& model) {
  const RunOptions& o = fit.fitted;
  std::vector<std::string> order;
  std::map<std::string, std::pair<size_t, double>> suites;  // points, seconds
  std::set<std::string> mechs, learned;
  size_t points_learned = 0;
  for (auto& b : benchmarks) {
    if (!suites.count(b.mech->suite)) order.push_back(b.mech->suite);
    auto& [points, seconds] = suites[b.mech->suite];
    ++points;
    seconds += estimate_point(b, o, model);
    mechs.insert(b.mech->full_name());
    if (model.learned(b.mech->full_name())) learned.insert(b.mech->full_name());
    points_learned += model.learned_point(b.name);
  }
  const std::string reps = o.ci_target_pct > 0
                               ? fmt::format("{} to {} repetitions (auto; estimated at {})",
                                             kAutoMinRepetitions, o.max_repetitions, kAutoMinRepetitions)
                               : fmt::format("{} repetition{}", o.repetitions, o.repetitions == 1 ? "" : "s");
  fmt::print("ipclab run{}: {} points; {} each, of {:g} s warm-up + {:g} s measured + start-up\n",
             a.preset ? " --preset " + *a.preset : "", benchmarks.size(), reps, o.warmup_s, o.duration_s);
  fmt::print("{:<12} {:>7} {:>10}\n", "suite", "points", "estimate");
  for (auto& suite : order)
    fmt::print("{:<12} {:>7} {:>10}\n", suite, suites[suite].first, duration_text(suites[suite].second));
  fmt::print("{:<12} {:>7} {:>10}\n", "all", benchmarks.size(), duration_text(fit.estimate_s));
  fmt::print("{}\n", fit.budget_s ? fit.text()
                                  : "budget none: nothing shortened (--budget 5m fits the run to 5 minutes)");
  fmt::print(
      "start-up per repetition: learned from past runs for {} of {} points and {} of {} mechanisms{} (a "
      "point not run before takes its mechanism's, a mechanism its suite's), {:g} s for the rest\n",
      points_learned, benchmarks.size(), learned.size(), mechs.size(),
      model.path().empty() ? "" : " (" + model.path() + ")", kDefaultOverheadS);
  return 0;
}

// The run's results store (core/store/store.hpp), checked with the result targets, before anything
// is created: --store, or the file beside the result folder unless --no-store; a store that cannot
// be one is a usage error, a default one that is not this user's is skipped with a line.
std::unique_ptr<store::Store> open_store(const RunArgs& a) {
  if (a.no_store && a.store) throw UsageError("--store and --no-store: choose one");
  double wait_s = store::kDefaultWaitS;
  if (a.store_wait) {
    const auto v = parse_duration(*a.store_wait);
    if (!v || !(*v >= 0 && *v <= 3600))
      throw UsageError(
          fmt::format("--store-wait '{}': give a time from 0 to 3600 s (1h), {}; e.g. --store-wait 30",
                      brief(*a.store_wait), kDurationSyntax));
    wait_s = *v;
  }
  const auto spec = store::default_target(a.store, a.no_store, a.out_dir);
  if (!spec) return nullptr;
  std::string note;
  auto s = store::Store::open(*spec, !a.store, wait_s, &note);
  if (!note.empty()) fmt::print(stderr, "{}", stderr_line("warning: ", note));
  return s;
}

// "; the records it finished are kept in F (...)" when the run ends early or cannot write its
// result files: the results journal holds them.
std::string kept_note(const std::vector<std::unique_ptr<output::Reporter>>& reporters) {
  for (auto& r : reporters)
    if (auto* j = dynamic_cast<const output::JournalReporter*>(r.get()); j && !j->kept().empty())
      return fmt::format("; the records the run finished are kept in {} (ipclab report and compare read it)",
                         j->kept());
  return "";
}

// The benchmarks the filters select over the preset's grid with -p's values, in the order they run:
// the default preset answers first (Suite::first) when nothing narrower was asked (no -p, one
// host, the plan's own order); each checked against --remote, and spread over --cpu-matrix.
std::vector<PlannedBenchmark> plan_run(const RunArgs& a, const PresetSpec& preset, const Overrides& overrides,
                                       const RunOptions& opts, const std::optional<uint64_t>& seed,
                                       const remote::Options& remote_opts) {
  const auto selected = select_mechanisms(a.filters);
  auto benchmarks = plan(selected, preset.preset, overrides, opts.cpus);
  if (preset.preset == Preset::Default && overrides.empty() && !a.cpu_matrix && !a.remote && !seed)
    benchmarks = first_answers_first(std::move(benchmarks), selected, opts.cpus);
  if (a.remote && !opts.antagonists.empty())
    throw UsageError(
        "--antagonist runs its interference on this host, and with --remote one side runs on the "
        "other; drop --antagonist (or --remote)");
  if (a.remote && a.cpu_matrix)
    throw UsageError(
        "--cpu-matrix places both sides of each point on this host's CPUs, and with --remote one side runs "
        "on "
        "the other host; drop --cpu-matrix (or --remote)");
  if (a.remote)
    for (auto& b : benchmarks)
      if (auto why = remote::crossing_problem(*b.mech, b.params, remote_opts.far_clients); !why.empty())
        throw UsageError(why);
  if (a.cpu_matrix)
    benchmarks = cpu_matrix(benchmarks, *a.cpu_matrix, opts.cpus, overrides.count("placement"));
  return benchmarks;
}

// --antagonist: in the context, and said on stderr before anything runs.
void add_antagonists(nlohmann::json& context, const RunOptions& opts) {
  if (opts.antagonists.empty()) return;
  nlohmann::json list = nlohmann::json::array();
  for (auto& spec : opts.antagonists) list.push_back(spec.text());
  context["antagonists"] = list;
  context["quiet_pairs"] = opts.quiet_pairs;
  fmt::print(stderr, "{}",
             stderr_line("", fmt::format("antagonists {} run through every measured window: every figure of "
                                         "this run is under that noise (each record's extra.antagonists says "
                                         "what ran){}",
                                         output::antagonists_text(context),
                                         opts.quiet_pairs
                                             ? "; each repetition is paired with a quiet one (ABBA), and "
                                               "each median's extra.inflation says how much it grew"
                                             : "")));
}

// The run's context, which every result file and the store keep: the environment, the options as
// fitted, the far host's, the registry of the run's suites; its warnings said on stderr.
nlohmann::json run_context(const RunArgs& a, const RunOptions& opts, const BudgetFit& fit,
                           const std::optional<uint64_t>& seed,
                           const std::vector<PlannedBenchmark>& benchmarks, const remote::Link* link,
                           const std::string& cmdline) {
  nlohmann::json context = collect_environment(cmdline);
  context["preset"] = a.preset.value_or("default");
  if (opts.ci_target_pct > 0) {
    context["repetitions"] = "auto";
    context["ci_target_pct"] = opts.ci_target_pct;
    context["max_repetitions"] = opts.max_repetitions;
  } else {
    context["repetitions"] = opts.repetitions;
  }
  context["duration_s"] = opts.duration_s;
  context["warmup_s"] = opts.warmup_s;
  context["budget"] = fit.to_json();
  context["interleave_seed"] = seed ? nlohmann::json(*seed) : nlohmann::json(nullptr);
  context["kernel_counters"] = opts.kernel_counters;
  add_antagonists(context, opts);
  if (a.cpu_matrix) context["cpu_matrix"] = *a.cpu_matrix;
  if (link) {
    context["remote"] = link->context();
    for (auto& line : context["remote"]["swept"])
      fmt::print(stderr, "on {}: {}\n", link->host(), line.get<std::string>());
  }
  // The registry of the run's suites, so that a report of this file, by any later ipclab, builds
  // their pages and tables as this binary describes them.
  std::set<std::string> suites;
  for (auto& b : benchmarks) suites.insert(b.mech->suite);
  context["registry"] = output::registry_json(suites);
  // A run that places sides by class or over a CPU matrix records the round trips it chose by.
  const bool by_class = a.cpu_matrix || std::any_of(benchmarks.begin(), benchmarks.end(), [](auto& b) {
                          return is_class_layout(b.params.str_or("placement", ""));
                        });
  if (by_class) add_measured_topology(context, opts.cpus);
  for (auto& w : context["warnings"])
    fmt::print(stderr, "{}", stderr_line("warning: ", output::warning_text(w)));
  return context;
}

// run: the plan through the runner, each record to the reporters as it completes. A run with a
// budget is paced as it goes (BudgetPacer); an interleaved one keeps the fitted windows (the runner
// asks it no options).
std::vector<Record> run_benchmarks(const std::vector<PlannedBenchmark>& benchmarks, const RunOptions& opts,
                                   const BudgetFit& fit, const std::optional<uint64_t>& seed,
                                   const std::shared_ptr<CostModel>& model, const nlohmann::json& context,
                                   const std::vector<std::unique_ptr<output::Reporter>>& reporters) {
  for (auto& r : reporters) r->begin(context, benchmarks);
  auto pacer = std::make_shared<BudgetPacer>(benchmarks, fit, model);
  auto records = run_plan(benchmarks, opts, console_hooks(benchmarks, opts, reporters, model, pacer), seed);
  if (const std::string paced = pacer->text(); !paced.empty())
    fmt::print(stderr, "{}", stderr_line("", paced));
  return records;
}

// export: what moved since the last comparable run in the store (read before the result files are
// written, so that they say it too), the result files, then this run into the store. A run under
// antagonists is no point of a quiet run's series: compared with nothing, and stored as a run of
// kind noise.
void export_results(std::vector<Record>& records, const nlohmann::json& context, const RunOptions& opts,
                    const std::vector<std::unique_ptr<output::Reporter>>& reporters,
                    store::Store* results_store) {
  const bool noisy = !opts.antagonists.empty();
  if (results_store && !noisy)
    if (const auto note = results_store->compare(records, context); !note.empty())
      fmt::print(stderr, "{}", stderr_line("warning: ", note));
  for (auto& r : reporters) r->end(records);
  if (!results_store) return;
  std::vector<nlohmann::json> stored;
  for (auto& r : records) stored.push_back(to_json(r));
  if (const auto note = results_store->append(noisy ? "noise" : "run", context, stored); !note.empty())
    fmt::print(stderr, "{}", stderr_line("warning: ", note));
  else
    fmt::print(stderr, "stored in {} (`ipclab history` shows each benchmark's runs there)\n",
               results_store->where());
}

// The preset --preset names (the default one when left out).
const PresetSpec& preset_of(const RunArgs& a) {
  const PresetSpec* preset = find_preset(a.preset.value_or(""));
  if (!preset || (a.preset && a.preset->empty()))
    throw UsageError(
        fmt::format("--preset '{}': use quick or full, or leave --preset out", brief(a.preset.value_or(""))));
  return *preset;
}

// parse → plan → run → report. Exit code: 0 ok, 1 a benchmark failed.
int cmd_run(const RunArgs& a, const std::string& cmdline) {
  check_fault_env();  // a malformed IPCLAB_FAULT is a usage error before anything runs
  // parse: every option and parameter is checked here and in plan, before anything is created.
  const PresetSpec& preset = preset_of(a);
  std::optional<uint64_t> seed;  // --interleave: the order's seed
  RunOptions opts = parse_options(a, preset, seed);
  const auto [budget_s, budget_source] = budget_of(a, preset);
  Overrides overrides;
  for (auto& p : a.params) parse_override(p, overrides);

  // plan
  const remote::Options remote_opts = parse_remote(a);
  const auto benchmarks = plan_run(a, preset, overrides, opts, seed, remote_opts);
  if (a.plan_only && a.dry_run) throw UsageError("--plan and --dry-run both print the plan; choose one");
  // The estimates, and the budget fitted to them: read from the cost model, which nothing here
  // creates (the run saves it as it learns).
  auto model = std::make_shared<CostModel>(CostModel::load(CostModel::default_path()));
  const BudgetFit fit = fit_budget(benchmarks, opts, budget_s, budget_source, *model);
  opts = fit.fitted;
  if (a.plan_only) return print_plan(a, benchmarks, opts, *model);
  auto reporters = make_reporters(a, benchmarks);  // every result target checked here
  if (a.dry_run) return print_dry_run(a, benchmarks, fit, *model);
  const auto results_store = open_store(a);
  if (fit.changed || budget_source == "--budget") fmt::print(stderr, "{}", stderr_line("", fit.text()));
  // --remote: the other host is reached, and its ipclab checked, before this run creates anything;
  // every failure there is a usage error of one line.
  std::unique_ptr<remote::Link> link;
  if (a.remote) link = remote::Link::connect(remote_opts);
  opts.remote = link.get();  // the run's link, for its benchmarks (core/remote/remote.hpp)

  // Everything the run creates from here on is its own (docs/reliability.md): its folder and
  // journal, the sweep of runs that died, the clean-up on a signal.
  start_owned_run();
  if (a.out_dir) make_out_dir(*a.out_dir);
  for (auto& r : reporters) r->open();  // the result files' temporaries

  // run, then export
  const nlohmann::json context = run_context(a, opts, fit, seed, benchmarks, link.get(), cmdline);
  std::vector<Record> records;
  try {
    records = run_benchmarks(benchmarks, opts, fit, seed, model, context, reporters);
    export_results(records, context, opts, reporters, results_store.get());
  } catch (const RunError& e) {
    throw RunError(e.what() + kept_note(reporters));
  } catch (const UsageError& e) {
    throw UsageError(e.what() + kept_note(reporters));
  }
  const bool failed =
      std::any_of(records.begin(), records.end(), [](auto& r) { return r.status == Status::Failed; });
  return failed ? 1 : 0;
}

// What runs and for how long: the filters, the preset and -p's values; the repetitions and windows.
void declare_run_what(CLI::App& sub, RunArgs& a) {
  sub.add_option("filter", a.filters, "suite, suite/mechanism, a mechanism name or a glob; none = all");
  text_option(sub, "--preset", a.preset, "quick (a few points, short runs) or full (the complete grids)")
      ->type_name("quick|full");
  sub.add_option("-p,--param", a.params,
                 "name=v1,v2: values of a parameter (repeatable; see `ipclab list SUITE`)");
  text_option(sub, "--repetitions", a.repetitions,
              "repetitions of each benchmark, 1..1000 (default 3; full 5), or auto: until the 95% CI of "
              "the median time/op is narrow enough (--ci-target, --max-repetitions)")
      ->type_name("N|auto");
  text_option(sub, "--ci-target", a.ci_target,
              "with --repetitions auto: the CI half-width to reach, in % of the median, >0..100 (default 2)")
      ->type_name("PCT");
  text_option(sub, "--max-repetitions", a.max_repetitions,
              "with --repetitions auto: the most repetitions of a benchmark, 5..1000 (default 30)")
      ->type_name("N");
  text_option(sub, "--duration", a.duration,
              "measured time per repetition, 1ms..1h: seconds (0.5) or with a unit (500ms, 2s, 1m) "
              "(default 1; quick 0.25; full 2)")
      ->type_name("TIME");
  text_option(sub, "--warmup", a.warmup,
              "discarded warm-up before each measurement, 0..10m: seconds or with a unit, as --duration "
              "(default 0.2)")
      ->type_name("TIME");
}

// How it runs: the CPUs, the order, the counters and the noise; what it prints of its plan, and the
// time it is fitted to.
void declare_run_how(CLI::App& sub, RunArgs& a) {
  text_option(sub, "--cpus", a.cpus,
              "CPUs to place sides on, each once, e.g. 0,1 or 0-3 (default: all allowed)")
      ->type_name("LIST");
  text_option(sub, "--cpu-matrix", a.cpu_matrix,
              "run each two-sided round-trip benchmark on every pair of --cpus (every) or on one pair per "
              "placement class (class), at placement cross on that pair; the report draws the matrix")
      ->type_name("every|class");
  flag_once(
      sub, "--interleave", a.interleave,
      "run the repetitions of all selected benchmarks in one seeded random order (seed in the results)");
  flag_once(sub, "--kernel-counters", a.kernel_counters,
            "count system calls, context switches, CPU migrations and page faults per op (perf_event_open; "
            "slows blocking round trips: docs/methodology.md)");
  sub.add_option(
         "--antagonist", a.antagonists,
         "run interference through every measured window (repeatable; docs/noise.md): KIND none (an idle "
         "stand-in), cpu, cache, membw, irq, fork or io (stress-ng's stressors), or quota (the sides under a "
         "CPU quota); WHERE relative to the sides' CPUs: same, smt, llc, cross_numa or others (default: "
         "every "
         "CPU the sides do not use); LEVEL the kind's intensity where it has one (cpu: load %, irq: timer "
         "Hz, "
         "fork: children per round, quota: % of one CPU). Each repetition is paired with a quiet one (ABBA), "
         "and the median says how much the noise inflated each figure (extra.inflation)")
      ->type_name("KIND[@WHERE][:LEVEL]")
      ->allow_extra_args(false);
  flag_once(sub, "--unpaired", a.unpaired,
            "under --antagonist, run no quiet repetitions beside the noisy ones (no extra.inflation; what "
            "`ipclab ab` asks, which pairs two builds under the same noise)");
  flag_once(sub, "--verbose", a.verbose,
            "print each repetition's row on the console, not only each point's median (the result "
            "files hold every repetition either way)");
  text_option(sub, "--seed", a.seed, "the seed of --interleave's order (default: drawn, and recorded)")
      ->type_name("N");
  flag_once(sub, "--plan", a.plan_only,
            "print the planned benchmarks as JSON lines (name, suite, mechanism, params) and run nothing");
  flag_once(sub, "--dry-run", a.dry_run,
            "print the plan for a person (points and estimated time per suite and in all) and run nothing");
  text_option(
      sub, "--budget", a.budget,
      "fit the run to this time by shortening windows and repetitions down to their floors (0.2 s, "
      "0.05 s warm-up, 1 repetition), never dropping points: seconds (90) or with a unit (90s, 5m, 1h), "
      "or none (default: quick 5m, default preset 4m, full none)")
      ->type_name("TIME");
}

// Where: the far host (--remote), the results store and the result files.
void declare_run_where(CLI::App& sub, RunArgs& a) {
  text_option(
      sub, "--remote", a.remote,
      "run the other side of the benchmark on HOST, as the same ipclab started through ssh "
      "(docs/remote.md): messaging/tcp and udp (round trips, throughput, open loop), libs/zmq, nng and grpc "
      "over endpoint=tcp, bulk/zerocopy over socket=tcp, echo/epoll and uring, servers/epoll_et "
      "and uring")
      ->type_name("[USER@]HOST");
  sub.add_option(
         "--ssh-option", a.ssh_options,
         "with --remote: an option for ssh, as typed after it (repeatable), e.g. --ssh-option '-p 2222' "
         "--ssh-option '-i KEY' --ssh-option '-o ProxyJump=gw'")
      ->type_name("OPT")
      ->allow_extra_args(false);
  text_option(sub, "--store", a.store,
              "the results store this run is added to, and compared with (docs/store.md): an SQLite file "
              "(default: ipclab.sqlite beside --out's folder; none without --out)")
      ->type_name("PATH");
  flag_once(sub, "--no-store", a.no_store,
            "add this run to no store, and compare it with nothing (also: "
            "IPCLAB_NO_STORE=1)");
  text_option(sub, "--store-wait", a.store_wait,
              "how long to wait for a store another run is writing before going on without it: seconds or "
              "with a unit (default 10s)")
      ->type_name("TIME");
  text_option(sub, "--remote-ipclab", a.remote_ipclab,
              "with --remote: the path of ipclab on HOST (default: ipclab on its PATH)")
      ->type_name("PATH");
  text_option(
      sub, "--remote-address", a.remote_address,
      "with --remote: the IPv4 address on HOST that the data path goes to (default: the one ssh reached; "
      "needed when ssh goes through a jump host)")
      ->type_name("ADDR");
  text_option(sub, "--remote-role", a.remote_role,
              "with --remote: what runs on HOST — server (default: echo's and servers' server there, their "
              "clients here) or client (their clients there, the server here)")
      ->type_name("server|client");
  sub.add_option("--out", a.out_dir, "directory for results.json, results.csv, results.md");
  sub.add_option("--json", a.json, "write the result JSON here (atomically)");
  sub.add_option("--csv", a.csv, "append CSV rows here (header written when new)");
  sub.add_option("--markdown", a.markdown, "write a Markdown table here");
  sub.footer(
      "Examples:\n"
      "  ipclab run\n"
      "  ipclab run --preset quick --out results/quick\n"
      "  ipclab run messaging/pipe -p size=64,4K -p pattern=roundtrip\n"
      "  ipclab run messaging --budget 90s --dry-run\n"
      "  ipclab run 'messaging/shm_*' --repetitions auto --json r.json\n"
      "  ipclab run messaging/pipe -p placement=same --antagonist cpu@others\n"
      "Parameters and their values: `ipclab list SUITE`. Exit: 0 ok, 1 a benchmark failed, 2 usage error.");
}

Runner declare_run(CLI::App& sub) {
  auto a = std::make_shared<RunArgs>();
  declare_run_what(sub, *a);
  declare_run_how(sub, *a);
  declare_run_where(sub, *a);
  return [a](const std::string& cmdline) { return cmd_run(*a, cmdline); };
}

}  // namespace

void start_owned_run() {
  ipc::begin_run();
  ipc::install_signal_cleanup();
  crash::install();
  for (auto& line : ipc::sweep_leftovers()) fmt::print(stderr, "{}\n", line);
}

IPCLAB_COMMAND(Command{"run", "Run the benchmarks matching FILTER (suite, suite/mechanism or glob)",
                       declare_run});

}  // namespace ipclab::cli
