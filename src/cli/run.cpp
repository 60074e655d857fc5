// `ipclab run`: parse → plan → run → report. Every option and parameter is checked, and every
// result target, before the run creates anything (docs/reliability.md).
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
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
// A line for stderr: on a terminal, wrapped to its width with the later lines indented; into a
// file or a pipe, one line, as logs and the tools that read them by prefix want it.
std::string stderr_line(const std::string& lead, const std::string& text) {
  return output::wrap_text(lead, text, output::terminal_columns(stderr), 4) + "\n";
}

constexpr double kProgressEveryS = 5;
PlanHooks console_hooks(const std::vector<PlannedBenchmark>& benchmarks, const RunOptions& opts,
                        const std::vector<std::unique_ptr<output::Reporter>>& reporters,
                        std::shared_ptr<CostModel> model, std::shared_ptr<BudgetPacer> pacer) {
  const bool terminal = isatty(2);
  const bool autorep = opts.ci_target_pct > 0;
  struct State {
    uint64_t started = now_ns();
    std::map<std::string, size_t> index;                      // benchmark name → its place in the plan
    std::vector<int> reps;                                    // repetitions finished per benchmark
    std::vector<bool> done;                                   // every repetition of the benchmark finished
    std::map<std::string, std::pair<size_t, size_t>> suites;  // points done, points
    std::set<std::string> begun;
    uint64_t last_line = 0;  // when the last progress line was printed (not on a terminal)
  };
  auto st = std::make_shared<State>();
  st->reps.assign(benchmarks.size(), 0);
  st->done.assign(benchmarks.size(), false);
  for (size_t i = 0; i < benchmarks.size(); ++i) {
    st->index[benchmarks[i].name] = i;
    ++st->suites[benchmarks[i].mech->suite].second;
  }
  auto names = std::make_shared<output::TableNames>(output::table_names(benchmarks));
  // The seconds still to run: the repetitions left of each benchmark (auto: to its fewest, or one
  // more) at the model's estimate, which learns as the run goes, with the windows the pacer gave it
  // or would give it next.
  auto left = [&benchmarks, opts, autorep, st, model, pacer] {
    double s = 0;
    for (size_t i = 0; i < benchmarks.size(); ++i) {
      if (st->done[i]) continue;
      const int more =
          autorep ? std::max(1, kAutoMinRepetitions - st->reps[i]) : opts.repetitions - st->reps[i];
      s += double(std::max(0, more)) * estimate_repetition(benchmarks[i], pacer->options_of(i), *model);
    }
    return s;
  };
  auto progress_line = [st, left](const std::string& suite) {
    const auto [done, points] = st->suites[suite];
    size_t all_done = 0;
    for (bool d : st->done) all_done += d;
    st->last_line = now_ns();
    fmt::print(stderr, "progress: {} {}/{} points ({}/{} in all), {} elapsed, ~{} left\n", suite, done,
               points, all_done, st->done.size(), duration_text(double(now_ns() - st->started) * 1e-9),
               duration_text(left()));
  };
  // The suite's point `i` has every repetition it will get.
  auto point_done = [st, terminal, progress_line, &benchmarks](size_t i) {
    if (st->done[i]) return;
    st->done[i] = true;
    const std::string& suite = benchmarks[i].mech->suite;
    auto& [done, points] = st->suites[suite];
    if (++done == points && !terminal) progress_line(suite);
  };
  PlanHooks hooks;
  hooks.options = pacer->hook();
  hooks.starting = [=](const PlannedBenchmark& b, const RunOptions&, size_t done, size_t total) {
    Record r;  // what run_one will fill in
    r.name = b.name;
    r.suite = b.mech->suite;
    r.mechanism = b.mech->name;
    r.params = b.params;
    r.repetition = st->reps[st->index[b.name]];
    crash::arm(r);
    if (terminal) {
      fmt::print(stderr, "\r\033[K[{}/{}] {} (~{} left)", done + 1, total, names->of(b.name),
                 duration_text(left()));
    } else if (st->begun.insert(b.mech->suite).second ||
               double(now_ns() - st->last_line) * 1e-9 >= kProgressEveryS) {
      progress_line(b.mech->suite);
    }
  };
  hooks.finished = [=, &reporters](const Record& r) {
    crash::disarm();
    if (terminal) fmt::print(stderr, "\r\033[K");
    for (auto& rep : reporters) rep->record(r);
    // On a terminal the point as the tables name it (the full name is wider than most lines); in a
    // log, its full name.
    const std::string name = terminal ? names->of(r.name) : r.name;
    if (r.status == Status::Failed && r.run_type != "aggregate")
      fmt::print(stderr, "{}",
                 stderr_line(fmt::format("FAILED {} (repetition {}): ", name, r.repetition), r.error));
    for (auto& w : r.warnings)  // a repetition's own (flag_steal)
      fmt::print(stderr, "{}",
                 stderr_line(fmt::format("warning: {} (repetition {}): ", name, r.repetition),
                             output::warning_text(w)));
    const auto it = st->index.find(r.name);
    if (it == st->index.end()) return;
    const size_t i = it->second;
    if (r.run_type == "aggregate") return point_done(i);
    ++st->reps[i];
    // Without auto, the last repetition ends the point (its aggregate, if any, follows); with
    // auto, its aggregate does.
    if (!autorep && st->reps[i] >= opts.repetitions) point_done(i);
  };
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

}  // namespace

int cmd_remote_side() {
  // Its run folder, swept at its end like a local one (and by a later run if it dies); what its
  // sweep removes goes to the local side in its hello, not on its stderr, which is ssh's.
  ipc::begin_run();
  ipc::install_signal_cleanup();
  crash::install();
  return remote::serve(ipc::sweep_leftovers());
}

void start_owned_run() {
  ipc::begin_run();
  ipc::install_signal_cleanup();
  crash::install();
  for (auto& line : ipc::sweep_leftovers()) fmt::print(stderr, "{}\n", line);
}

int cmd_run(const RunArgs& a, const std::string& cmdline) {
  check_fault_env();  // a malformed IPCLAB_FAULT is a usage error before anything runs
  // parse: every option and parameter is checked here and in plan, before anything is created.
  const PresetSpec* preset = find_preset(a.preset.value_or(""));
  if (!preset || (a.preset && a.preset->empty()))
    throw UsageError(
        fmt::format("--preset '{}': use quick or full, or leave --preset out", brief(a.preset.value_or(""))));
  std::optional<uint64_t> seed;  // --interleave: the order's seed
  RunOptions opts = parse_options(a, *preset, seed);
  const auto [budget_s, budget_source] = budget_of(a, *preset);
  Overrides overrides;
  for (auto& p : a.params) parse_override(p, overrides);

  // plan
  const remote::Options remote_opts = parse_remote(a);
  const auto selected = select_mechanisms(a.filters);
  auto benchmarks = plan(selected, preset->preset, overrides, opts.cpus);
  // The default preset answers first (Suite::first) when nothing narrower was asked: no -p, one
  // host, the plan's own order.
  if (preset->preset == Preset::Default && overrides.empty() && !a.cpu_matrix && !a.remote && !seed)
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

  // run
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
  if (!opts.antagonists.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (auto& spec : opts.antagonists) list.push_back(spec.text());
    context["antagonists"] = list;
    context["quiet_pairs"] = opts.quiet_pairs;
    fmt::print(
        stderr, "{}",
        stderr_line("",
                    fmt::format("antagonists {} run through every measured window: every figure of this "
                                "run is under that noise (each record's extra.antagonists says what ran){}",
                                output::antagonists_text(context),
                                opts.quiet_pairs ? "; each repetition is paired with a quiet one (ABBA), and "
                                                   "each median's extra.inflation says how much it grew"
                                                 : "")));
  }
  if (a.cpu_matrix) context["cpu_matrix"] = *a.cpu_matrix;
  if (link) {
    context["remote"] = link->context();
    for (auto& line : context["remote"]["swept"])
      fmt::print(stderr, "on {}: {}\n", link->host(), line.get<std::string>());
  }
  {
    // The registry of the run's suites, so that a report of this file, by any later ipclab, builds
    // their pages and tables as this binary describes them.
    std::set<std::string> suites;
    for (auto& b : benchmarks) suites.insert(b.mech->suite);
    context["registry"] = output::registry_json(suites);
  }
  // A run that places sides by class or over a CPU matrix records the round trips it chose by.
  const bool by_class = a.cpu_matrix || std::any_of(benchmarks.begin(), benchmarks.end(), [](auto& b) {
                          return is_class_layout(b.params.str_or("placement", ""));
                        });
  if (by_class) add_measured_topology(context, opts.cpus);
  for (auto& w : context["warnings"])
    fmt::print(stderr, "{}", stderr_line("warning: ", output::warning_text(w)));
  std::vector<Record> records;
  try {
    for (auto& r : reporters) r->begin(context, benchmarks);
    // A run with a budget is paced as it goes (BudgetPacer); an interleaved one keeps the fitted
    // windows (the runner asks it no options).
    auto pacer = std::make_shared<BudgetPacer>(benchmarks, fit, model);
    records = run_plan(benchmarks, opts, console_hooks(benchmarks, opts, reporters, model, pacer), seed);
    if (const std::string paced = pacer->text(); !paced.empty())
      fmt::print(stderr, "{}", stderr_line("", paced));

    // export: what moved since the last comparable run in the store (read before the result files
    // are written, so that they say it too), the result files, then this run into the store.
    // A run under antagonists is no point of a quiet run's series: compared with nothing, and
    // stored as a run of kind noise.
    const bool noisy = !opts.antagonists.empty();
    if (results_store && !noisy)
      if (const auto note = results_store->compare(records, context); !note.empty())
        fmt::print(stderr, "{}", stderr_line("warning: ", note));
    for (auto& r : reporters) r->end(records);
    if (results_store) {
      std::vector<nlohmann::json> stored;
      for (auto& r : records) stored.push_back(to_json(r));
      if (const auto note = results_store->append(noisy ? "noise" : "run", context, stored); !note.empty())
        fmt::print(stderr, "{}", stderr_line("warning: ", note));
      else
        fmt::print(stderr, "stored in {} (`ipclab history` shows each benchmark's runs there)\n",
                   results_store->where());
    }
  } catch (const RunError& e) {
    throw RunError(e.what() + kept_note(reporters));
  } catch (const UsageError& e) {
    throw UsageError(e.what() + kept_note(reporters));
  }
  const bool failed =
      std::any_of(records.begin(), records.end(), [](auto& r) { return r.status == Status::Failed; });
  return failed ? 1 : 0;
}

int cmd_store_import(const std::vector<std::string>& files, const std::optional<std::string>& where,
                     const std::string& kind, bool compare) {
  if (kind != "import" && kind != "ab")
    throw UsageError(fmt::format("store import --kind '{}': use import or ab", brief(kind)));
  if (std::count(files.begin(), files.end(), "-") > 1)
    throw UsageError("store import: standard input (-) can be read once; give it once");
  // Every file read and checked before the store is touched: a file that is no result file is a
  // usage error of its own line, and nothing is stored.
  struct Input {
    std::string path;
    nlohmann::json context;
    std::vector<nlohmann::json> records;
  };
  std::vector<Input> inputs;
  for (auto& path : files) {
    Input in{path, nullptr, {}};
    std::string body;
    try {
      if (path == "-") {
        std::ostringstream in_stdin;
        in_stdin << std::cin.rdbuf();
        body = in_stdin.str();
      } else {
        body = read_regular_file(path);
      }
    } catch (const std::exception& e) {
      throw UsageError(fmt::format("store import {}: {}; give a results.json, a reduced file or a journal",
                                   brief(path), e.what()));
    }
    try {
      if (body.rfind("{\"ipclab_journal\"", 0) == 0) {  // a journal: a header line, then a record a line
        std::istringstream lines(body);
        std::string line;
        for (bool first = true; std::getline(lines, line); first = false) {
          if (line.empty()) continue;
          auto j = nlohmann::json::parse(line);
          if (first)
            in.context = j.at("context");
          else
            in.records.push_back(std::move(j));
        }
      } else {
        auto j = nlohmann::json::parse(body);
        in.context = j.at("context");
        for (auto& r : j.at("benchmarks")) in.records.push_back(r);
      }
    } catch (const std::exception&) {
      throw UsageError(
          fmt::format("store import {}: not a result file of ipclab (results.json, a reduced file "
                      "or a journal)",
                      brief(path)));
    }
    if (!in.context.is_object() || in.records.empty())
      throw UsageError(fmt::format("store import {}: holds no records; nothing to import", brief(path)));
    inputs.push_back(std::move(in));
  }
  const std::string spec = where.value_or("results/ipclab.sqlite");
  std::string note;
  auto s = store::Store::open(spec, false, store::kDefaultWaitS, &note);
  if (!s) {
    fmt::print(stderr, "ipclab: {}\n", note);
    return 1;
  }
  int rc = 0;
  for (auto& in : inputs) {
    char abs[PATH_MAX];
    const std::string source = in.path == "-"                   ? "(standard input)"
                               : realpath(in.path.c_str(), abs) ? abs
                                                                : in.path;
    bool held = false;
    try {
      held = s->holds(in.context);
    } catch (const std::exception& e) {
      fmt::print(stderr, "ipclab: {}: {}\n", in.path, e.what());
      rc = 1;
      continue;
    }
    if (held) {
      fmt::print("{}: already in {} (the same run: date, host, command line, commit); not added again\n",
                 in.path, s->where());
      continue;
    }
    if (compare) {
      std::vector<Record> records;
      for (auto& r : in.records) records.push_back(record_from_json(r));
      if (const auto note = s->compare(records, in.context); !note.empty())
        fmt::print(stderr, "{}", stderr_line("warning: ", note));
      if (const auto since = output::since_text(records, output::TableNames{}); !since.lines.empty()) {
        fmt::print("{}: {}\n", in.path, since.heading);
        for (auto& line : since.lines) fmt::print("  {}\n", line);
      } else {
        fmt::print("{}: no earlier comparable run in {}\n", in.path, s->where());
      }
    }
    if (const auto why = s->append(kind, in.context, in.records, source); !why.empty()) {
      fmt::print(stderr, "ipclab: {}: {}\n", in.path, why);
      rc = 1;
    } else {
      fmt::print("{}: {} records stored in {}\n", in.path, in.records.size(), s->where());
    }
  }
  return rc;
}

}  // namespace ipclab::cli
