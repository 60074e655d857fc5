// ipclab: one entry point. parse → plan → run → export.
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <tuple>

#include "cli/parse.hpp"
#include "core/clock.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/fault.hpp"
#include "core/ipc_names.hpp"
#include "core/output/reporter.hpp"
#include "core/placement.hpp"
#include "core/runner.hpp"

using namespace ipclab;

namespace {

struct RunArgs {
  std::vector<std::string> filters;
  std::vector<std::string> params;
  // As given (an empty text included), parsed in cmd_run; nothing when the option is left out.
  std::optional<std::string> preset, repetitions, duration, warmup, cpus, out_dir, json, csv, markdown, seed;
  bool interleave = false;
};

std::string command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

void print_list(const std::optional<std::string>& suite_filter) {
  if (suite_filter && suite_filter->empty())
    throw UsageError("list: empty suite name; give a suite (see `ipclab list`) or none for all");
  auto& reg = Registry::get();
  bool any = false;
  for (auto& m : reg.mechanisms()) {
    if (suite_filter && m.suite != *suite_filter) continue;
    any = true;
    const char* kind = m.transport ? "transport" : m.loop ? "loop" : "workload";
    fmt::print("{}  [{}]\n    {}\n", m.full_name(), kind, m.help);
    for (auto& p : m.params) {
      std::string vals;
      for (auto& c : p.choices) vals += (vals.empty() ? "" : "|") + c;
      std::string quick;
      for (auto& q : p.quick) quick += (quick.empty() ? "" : ",") + q;
      std::string full;
      for (auto& q : p.full) full += (full.empty() ? "" : ",") + q;
      fmt::print("    -p {}={:<12} {} ({}{}{}{})\n", p.name, p.def, p.help, type_name(p.type),
                 vals.empty() ? "" : ": " + vals, quick.empty() ? "" : "; quick " + quick,
                 full.empty() ? "" : "; full " + full);
    }
  }
  if (!any)
    throw UsageError(fmt::format("unknown suite '{}'; run `ipclab list` to see the suites", *suite_filter));
}

int cmd_env(bool as_json, const std::string& cmdline) {
  auto ctx = collect_environment(cmdline);
  if (as_json) {
    fmt::print("{}\n", ctx.dump(2));
    return 0;
  }
  auto& cpu = ctx["cpu"];
  fmt::print("CPU          {} — {} logical CPUs, {} cores, SMT {}\n", cpu["model"].get<std::string>(),
             cpu["logical_cpus"].get<long>(), cpu["physical_cores"].get<long>(), cpu["smt"].get<bool>() ? "on" : "off");
  fmt::print("Caches       {}\n", cpu["caches"].dump());
  fmt::print("Kernel       {} ({})\n", ctx["kernel"].get<std::string>(), ctx["virtualization"].get<std::string>());
  fmt::print("Governor     {}\n", ctx["governor"].is_null() ? "n/a" : ctx["governor"].get<std::string>());
  fmt::print("Load average {}\n", ctx["load_avg"].dump());
  fmt::print("Limits       {}\n", ctx["limits"].dump());
  fmt::print("io_uring     {}\n", ctx["io_uring"].dump());
  fmt::print("Mitigations  {}\n", ctx["mitigations"].dump());
  fmt::print("Build        {} {} [{}]\n", ctx["compiler"].get<std::string>(), ctx["build_type"].get<std::string>(),
             ctx["build_flags"].get<std::string>());
  fmt::print("Libraries    {}\n", ctx["libraries"].dump());
  fmt::print("Git          {}\n", ctx["git_sha"].is_null() ? "n/a" : ctx["git_sha"].get<std::string>());
  for (auto& w : ctx["warnings"])
    fmt::print("warning: {} — {}\n", w["message"].get<std::string>(), w["remedy"].get<std::string>());
  return 0;
}

std::string eta_text(double s) {
  if (s < 60) return fmt::format("{:.0f}s", s);
  return fmt::format("{:.0f}m{:02.0f}s", std::floor(s / 60), std::fmod(s, 60));
}

// The result files to write, as (option, path): --json/--csv/--markdown, and --out's three.
std::vector<std::pair<std::string, std::string>> output_targets(const RunArgs& a) {
  std::vector<std::pair<std::string, std::string>> t;
  for (auto [option, path, file] : {std::tuple{"--json", &a.json, "results.json"},
                                    std::tuple{"--csv", &a.csv, "results.csv"},
                                    std::tuple{"--markdown", &a.markdown, "results.md"}}) {
    if (*path) t.emplace_back(option, **path);  // an empty one is refused by check_target
    else if (a.out_dir) t.emplace_back(option, *a.out_dir + "/" + file);
  }
  return t;
}

// --out: an existing folder (true), or a new one whose parent exists and is writable (false).
bool check_out_dir(const std::string& dir) {
  if (dir.empty()) throw UsageError("--out needs a folder name, e.g. --out results/now");
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    output::check_target("--out", dir);  // its text, and its parent folder
    return false;
  }
  if (!S_ISDIR(st.st_mode)) throw UsageError(fmt::format("--out {} is not a folder; name a folder for the results", dir));
  return true;
}

// Creates --out (0700 whatever the umask) unless it exists.
void make_out_dir(const std::string& dir) {
  try {
    ipc::make_private_dir(dir);
  } catch (const std::system_error& e) {
    throw UsageError(fmt::format("--out {}: {}; choose a writable folder", dir, e.code().message()));
  }
}

// The reporters of the run: the console, then one per result file (--json, --csv, --markdown,
// or --out's three). Constructing them checks their targets, before anything is created.
std::vector<std::unique_ptr<output::Reporter>> make_reporters(const RunArgs& a,
                                                              const std::vector<PlannedBenchmark>& benchmarks) {
  std::vector<std::unique_ptr<output::Reporter>> reporters;
  reporters.push_back(std::make_unique<output::ConsoleReporter>(stdout, output::terminal_columns(stdout)));
  const bool out_exists = a.out_dir && check_out_dir(*a.out_dir);
  std::set<std::string> suites;
  for (auto& b : benchmarks) suites.insert(b.mech->suite);
  for (auto& [option, path] : output_targets(a)) {
    const bool folder_is_new = a.out_dir && !out_exists && path.rfind(*a.out_dir + "/", 0) == 0;
    if (option == "--json") reporters.push_back(std::make_unique<output::JsonReporter>(option, path, folder_is_new));
    if (option == "--csv") reporters.push_back(std::make_unique<output::CsvReporter>(path, suites, folder_is_new));
    if (option == "--markdown")
      reporters.push_back(std::make_unique<output::MarkdownReporter>(option, path, folder_is_new));
  }
  return reporters;
}

// The runner's hooks for the console: a progress line with an ETA on a terminal (naming the
// benchmark as the tables do: a full name may be wider than the line it must clear), each record
// to the reporters as it completes, and a FAILED line on stderr for a failed repetition.
PlanHooks console_hooks(const std::vector<PlannedBenchmark>& benchmarks, const RunOptions& opts,
                        const std::vector<std::unique_ptr<output::Reporter>>& reporters) {
  const bool progress = isatty(2);
  const double per_run = opts.duration_s + opts.warmup_s + 0.05;
  const uint64_t started = now_ns();
  auto names = std::make_shared<output::TableNames>(output::table_names(benchmarks));
  PlanHooks hooks;
  if (progress)
    hooks.starting = [=](const PlannedBenchmark& b, size_t done, size_t total) {
      const double elapsed = double(now_ns() - started) * 1e-9;
      const double eta = done ? elapsed / double(done) * double(total - done) : per_run * double(total);
      fmt::print(stderr, "\r\033[K[{}/{}] {} (ETA {})", done + 1, total, names->of(b.name), eta_text(eta));
    };
  hooks.finished = [progress, &reporters](const Record& r) {
    if (progress) fmt::print(stderr, "\r\033[K");
    for (auto& rep : reporters) rep->record(r);
    if (r.status == Status::Failed && r.run_type != "aggregate")
      fmt::print(stderr, "FAILED {} (repetition {}): {}\n", r.name, r.repetition, r.error);
  };
  return hooks;
}

int cmd_run(const RunArgs& a, const std::string& cmdline) {
  check_fault_env();  // a malformed IPCLAB_FAULT is a usage error before anything runs
  // parse: every option and parameter is checked here and in plan, before anything is created.
  const PresetSpec* preset = find_preset(a.preset.value_or(""));
  if (!preset || (a.preset && a.preset->empty()))
    throw UsageError(fmt::format("--preset '{}': use quick or full, or leave --preset out", a.preset.value_or("")));
  RunOptions opts = preset->options;
  // Seconds and counts: whole decimal numbers (no blanks, junk, nan or inf) within bounds; the
  // bounds are written with "!(in range)" so that a NaN could never pass.
  if (a.duration) {
    auto v = parse_real(*a.duration);
    if (!v || !(*v >= 0.001 && *v <= 3600))
      throw UsageError(fmt::format("--duration '{}': give seconds from 0.001 (1 ms) to 3600, e.g. --duration 0.5",
                                   *a.duration));
    opts.duration_s = *v;
  }
  if (a.warmup) {
    auto v = parse_real(*a.warmup);
    if (!v || !(*v >= 0 && *v <= 600))
      throw UsageError(fmt::format("--warmup '{}': give seconds from 0 to 600, e.g. --warmup 0.1", *a.warmup));
    opts.warmup_s = *v;
  }
  if (a.repetitions) {
    auto v = parse_integer(*a.repetitions);
    if (!v || !(*v >= 1 && *v <= 1000))
      throw UsageError(fmt::format("--repetitions '{}': give a whole number from 1 to 1000, e.g. --repetitions 5",
                                   *a.repetitions));
    opts.repetitions = int(*v);
  }
  opts.cpus = a.cpus ? parse_cpu_list(*a.cpus) : allowed_cpus();
  std::optional<uint64_t> seed;  // --interleave: the order's seed, drawn when not given
  if (a.seed && !a.interleave) throw UsageError("--seed sets the order of --interleave; add --interleave or drop --seed");
  if (a.seed) {
    auto v = parse_integer(*a.seed);
    if (!v || *v < 0) throw UsageError(fmt::format("--seed '{}': give a whole number from 0, e.g. --seed 42", *a.seed));
    seed = uint64_t(*v);
  } else if (a.interleave) {
    seed = std::random_device{}() & 0x7fffffff;
  }
  Overrides overrides;
  for (auto& p : a.params) parse_override(p, overrides);

  // plan
  auto benchmarks = plan(select_mechanisms(a.filters), preset->preset, overrides, opts.cpus);
  auto reporters = make_reporters(a, benchmarks);  // every result target checked here

  // Everything the run creates from here on is its own (docs/reliability.md): its folder and
  // journal, the sweep of runs that died, the clean-up on a signal.
  ipc::begin_run();
  ipc::install_signal_cleanup();
  for (auto& line : ipc::sweep_leftovers()) fmt::print(stderr, "{}\n", line);
  if (a.out_dir) make_out_dir(*a.out_dir);
  for (auto& r : reporters) r->open();  // the result files' temporaries

  // run
  nlohmann::json context = collect_environment(cmdline);
  context["preset"] = a.preset.value_or("default");
  context["repetitions"] = opts.repetitions;
  context["duration_s"] = opts.duration_s;
  context["warmup_s"] = opts.warmup_s;
  context["interleave_seed"] = seed ? nlohmann::json(*seed) : nlohmann::json(nullptr);
  for (auto& w : context["warnings"])
    fmt::print(stderr, "warning: {} — {}\n", w["message"].get<std::string>(), w["remedy"].get<std::string>());
  for (auto& r : reporters) r->begin(context, benchmarks);
  const auto records = run_plan(benchmarks, opts, console_hooks(benchmarks, opts, reporters), seed);

  // export
  for (auto& r : reporters) r->end(records);
  const bool failed = std::any_of(records.begin(), records.end(), [](auto& r) { return r.status == Status::Failed; });
  return failed ? 1 : 0;
}

// report and compare live in the Python package report/ (matplotlib, scipy); the user need not
// know: exec it with the same arguments.
[[noreturn]] void exec_python(const std::string& verb, const std::vector<std::string>& args) {
  const char* py = std::getenv("IPCLAB_PYTHON");
  std::string python = py && *py ? py : "python3";
  std::string pkg = std::string(IPCLAB_SOURCE_DIR) + "/report";
  const char* old = std::getenv("PYTHONPATH");
  std::string path = pkg + (old && *old ? ":" + std::string(old) : "");
  setenv("PYTHONPATH", path.c_str(), 1);
  std::vector<std::string> argv{python, "-m", "ipclab_report", verb};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& s : argv) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  execvp(cargv[0], cargv.data());
  fmt::print(stderr, "ipclab: cannot start {}: {}; run `make setup` (or set IPCLAB_PYTHON)\n", python, strerror(errno));
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmdline = command_line(argc, argv);
  CLI::App app{"ipclab — measure every way two pieces of code talk on one Linux machine"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every command");

  // Options whose text cmd_run parses itself keep it as given: CLI11 would turn an empty value
  // into the default, and reads integers with base prefixes (010 = 8).
  auto text_option = [](CLI::App* sub, const std::string& name, std::optional<std::string>& into,
                        const std::string& help) {
    return sub->add_option_function<std::string>(name, [&into](const std::string& v) { into = v; }, help);
  };
  auto* list = app.add_subcommand("list", "Suites, mechanisms and their parameters");
  std::optional<std::string> list_suite;
  text_option(list, "suite", list_suite, "Only this suite");

  RunArgs ra;
  auto* run = app.add_subcommand("run", "Run the benchmarks matching FILTER (suite, suite/mechanism or glob)");
  run->add_option("filter", ra.filters, "suite, suite/mechanism, a mechanism name or a glob; none = all");
  text_option(run, "--preset", ra.preset, "quick (a few points, short runs) or full (the complete grids)")
      ->type_name("quick|full");
  run->add_option("-p,--param", ra.params, "name=v1,v2: values of a parameter (repeatable; see `ipclab list`)");
  text_option(run, "--repetitions", ra.repetitions, "repetitions of each benchmark, 1..1000 (default 3; full 5)")
      ->type_name("N");
  text_option(run, "--duration", ra.duration, "measured seconds per repetition, 0.001..3600 (default 1; quick 0.25; full 2)")
      ->type_name("SECONDS");
  text_option(run, "--warmup", ra.warmup, "discarded warm-up seconds before each measurement, 0..600 (default 0.2)")
      ->type_name("SECONDS");
  text_option(run, "--cpus", ra.cpus, "CPUs to place sides on, each once, e.g. 0,1 or 0-3 (default: all allowed)")
      ->type_name("LIST");
  run->add_flag("--interleave", ra.interleave,
                "run the repetitions of all selected benchmarks in one seeded random order (seed in the results)")
      ->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  text_option(run, "--seed", ra.seed, "the seed of --interleave's order (default: drawn, and recorded)")->type_name("N");
  run->add_option("--out", ra.out_dir, "directory for results.json, results.csv, results.md");
  run->add_option("--json", ra.json, "write the result JSON here (atomically)");
  run->add_option("--csv", ra.csv, "append CSV rows here (header written when new)");
  run->add_option("--markdown", ra.markdown, "write a Markdown table here");
  run->footer("Parameters and their values: `ipclab list [SUITE]`. Exit: 0 ok, 1 a benchmark failed, 2 usage error.");

  auto* env = app.add_subcommand("env", "The environment block and its warnings");
  bool env_json = false;
  env->add_flag("--json", env_json, "print as JSON")->multi_option_policy(CLI::MultiOptionPolicy::Throw);

  std::vector<std::string> passthrough;
  auto* report = app.add_subcommand(
      "report", "Reports from result files: report RESULT.json... -o report.html | --markdown F | --pages DIR | --reduce OUT.json");
  auto* compare = app.add_subcommand("compare", "Compare two result files: compare BASE.json NEW.json [--threshold PCT] [--noise PCT]");
  for (auto* sub : {report, compare}) {
    sub->allow_extras();
    sub->prefix_command();
    sub->set_help_flag();
  }

  // CLI11 reports an unknown command as "A subcommand is required": name it and the commands.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (auto* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      known = known || sub->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      fmt::print(stderr, "ipclab: unknown command '{}'; use one of {} (see `ipclab --help`)\n",
                 printable(argv[1]), names);
      return 2;
    }
  }
  if (auto rc = parse_command_line(app, argc, argv, "ipclab", "`ipclab --help`")) return *rc;

  try {
    if (*list) {
      print_list(list_suite);
      return 0;
    }
    if (*env) return cmd_env(env_json, cmdline);
    if (*report) exec_python("report", report->remaining());
    if (*compare) exec_python("compare", compare->remaining());
    int rc = cmd_run(ra, cmdline);
    ipc::end_run();
    return rc;
  } catch (const UsageError& e) {
    ipc::end_run();
    fmt::print(stderr, "ipclab: {}\n", printable(e.what()));
    return 2;
  } catch (const std::exception& e) {
    ipc::end_run();
    fmt::print(stderr, "ipclab: internal error: {}\n", printable(e.what()));
    return 1;
  }
}
