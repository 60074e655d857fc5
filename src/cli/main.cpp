// ipclab: one entry point. The command line is declared here; each command is one function
// (cli/commands.hpp): list, env, report, compare and ab (cli/commands.cpp), run — parse → plan → run → report
// — (cli/run.cpp, on core/plan/runner).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "cli/commands.hpp"
#include "cli/parse.hpp"
#include "core/base/error.hpp"
#include "core/machine/env.hpp"
#include "core/machine/home.hpp"
#include "core/ownership/crash.hpp"
#include "core/ownership/journal.hpp"

using namespace ipclab;
using namespace ipclab::cli;

namespace {

std::string command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  try {  // first, while this is the only thread: what a bundle's launcher said leaves the environment
    take_launcher_variable();
  } catch (const UsageError& e) {
    fmt::print(stderr, "ipclab: {}\n", brief(e.what(), 600));
    return 2;
  }
  crash::ignore_file_size_signal();       // a write over `ulimit -f` fails with EFBIG: an error, not a death
  set_build_commit(cli::build_commit());  // the context's git_sha: what this binary was built from
  const std::string cmdline = command_line(argc, argv);
  CLI::App app{"ipclab — measure every way two pieces of code talk on one Linux machine", "ipclab"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every command");
  app.set_version_flag(
      "--version", [] { return version_text(); },
      "The version, the commit it was built from, the build type, compiler and flags");

  // Options whose text cmd_run parses itself keep it as given: CLI11 would turn an empty value
  // into the default, and reads integers with base prefixes (010 = 8).
  auto text_option = [](CLI::App* sub, const std::string& name, std::optional<std::string>& into,
                        const std::string& help) {
    return sub->add_option_function<std::string>(
        name, [&into](const std::string& v) { into = v; }, help);
  };
  auto* list = app.add_subcommand("list", "Suites, mechanisms and their parameters");
  std::optional<std::string> list_suite;
  text_option(list, "suite", list_suite, "Only this suite");
  bool list_json = false;
  list->add_flag("--json", list_json,
                 "print the registry as JSON: suites, their table columns, mechanisms and parameters")
      ->multi_option_policy(CLI::MultiOptionPolicy::Throw);

  RunArgs ra;
  auto* run =
      app.add_subcommand("run", "Run the benchmarks matching FILTER (suite, suite/mechanism or glob)");
  run->add_option("filter", ra.filters, "suite, suite/mechanism, a mechanism name or a glob; none = all");
  text_option(run, "--preset", ra.preset, "quick (a few points, short runs) or full (the complete grids)")
      ->type_name("quick|full");
  run->add_option("-p,--param", ra.params,
                  "name=v1,v2: values of a parameter (repeatable; see `ipclab list SUITE`)");
  text_option(run, "--repetitions", ra.repetitions,
              "repetitions of each benchmark, 1..1000 (default 3; full 5), or auto: until the 95% CI of "
              "the median time/op is narrow enough (--ci-target, --max-repetitions)")
      ->type_name("N|auto");
  text_option(run, "--ci-target", ra.ci_target,
              "with --repetitions auto: the CI half-width to reach, in % of the median, >0..100 (default 2)")
      ->type_name("PCT");
  text_option(run, "--max-repetitions", ra.max_repetitions,
              "with --repetitions auto: the most repetitions of a benchmark, 5..1000 (default 30)")
      ->type_name("N");
  text_option(run, "--duration", ra.duration,
              "measured time per repetition, 1ms..1h: seconds (0.5) or with a unit (500ms, 2s, 1m) "
              "(default 1; quick 0.25; full 2)")
      ->type_name("TIME");
  text_option(run, "--warmup", ra.warmup,
              "discarded warm-up before each measurement, 0..10m: seconds or with a unit, as --duration "
              "(default 0.2)")
      ->type_name("TIME");
  text_option(run, "--cpus", ra.cpus,
              "CPUs to place sides on, each once, e.g. 0,1 or 0-3 (default: all allowed)")
      ->type_name("LIST");
  text_option(run, "--cpu-matrix", ra.cpu_matrix,
              "run each two-sided round-trip benchmark on every pair of --cpus (every) or on one pair per "
              "placement class (class), at placement cross on that pair; the report draws the matrix")
      ->type_name("every|class");
  run->add_flag(
         "--interleave", ra.interleave,
         "run the repetitions of all selected benchmarks in one seeded random order (seed in the results)")
      ->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  run->add_flag(
         "--kernel-counters", ra.kernel_counters,
         "count system calls, context switches, CPU migrations and page faults per op (perf_event_open; "
         "slows blocking round trips: docs/methodology.md)")
      ->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  run->add_option(
         "--antagonist", ra.antagonists,
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
  run->add_flag(
         "--unpaired", ra.unpaired,
         "under --antagonist, run no quiet repetitions beside the noisy ones (no extra.inflation; what "
         "`ipclab ab` asks, which pairs two builds under the same noise)")
      ->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  run->add_flag("--verbose", ra.verbose,
                "print each repetition's row on the console, not only each point's median (the result "
                "files hold every repetition either way)")
      ->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  text_option(run, "--seed", ra.seed, "the seed of --interleave's order (default: drawn, and recorded)")
      ->type_name("N");
  run->add_flag("--plan", ra.plan_only,
                "print the planned benchmarks as JSON lines (name, suite, mechanism, params) and run nothing")
      ->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  run->add_flag(
         "--dry-run", ra.dry_run,
         "print the plan for a person (points and estimated time per suite and in all) and run nothing")
      ->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  text_option(
      run, "--budget", ra.budget,
      "fit the run to this time by shortening windows and repetitions down to their floors (0.2 s, "
      "0.05 s warm-up, 1 repetition), never dropping points: seconds (90) or with a unit (90s, 5m, 1h), "
      "or none (default: quick 5m, default preset 4m, full none)")
      ->type_name("TIME");
  text_option(
      run, "--remote", ra.remote,
      "run the other side of the benchmark on HOST, as the same ipclab started through ssh "
      "(docs/remote.md): messaging/tcp and udp (round trips, throughput, open loop), libs/zmq, nng and grpc "
      "over endpoint=tcp, bulk/zerocopy over socket=tcp, echo/epoll and uring, servers/epoll_et "
      "and uring")
      ->type_name("[USER@]HOST");
  run->add_option(
         "--ssh-option", ra.ssh_options,
         "with --remote: an option for ssh, as typed after it (repeatable), e.g. --ssh-option '-p 2222' "
         "--ssh-option '-i KEY' --ssh-option '-o ProxyJump=gw'")
      ->type_name("OPT")
      ->allow_extra_args(false);
  text_option(run, "--store", ra.store,
              "the results store this run is added to, and compared with (docs/store.md): an SQLite file "
              "(default: ipclab.sqlite beside --out's folder; none without --out)")
      ->type_name("PATH");
  run->add_flag("--no-store", ra.no_store,
                "add this run to no store, and compare it with nothing (also: "
                "IPCLAB_NO_STORE=1)")
      ->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  text_option(run, "--store-wait", ra.store_wait,
              "how long to wait for a store another run is writing before going on without it: seconds or "
              "with a unit (default 10s)")
      ->type_name("TIME");
  text_option(run, "--remote-ipclab", ra.remote_ipclab,
              "with --remote: the path of ipclab on HOST (default: ipclab on its PATH)")
      ->type_name("PATH");
  text_option(
      run, "--remote-address", ra.remote_address,
      "with --remote: the IPv4 address on HOST that the data path goes to (default: the one ssh reached; "
      "needed when ssh goes through a jump host)")
      ->type_name("ADDR");
  text_option(run, "--remote-role", ra.remote_role,
              "with --remote: what runs on HOST — server (default: echo's and servers' server there, their "
              "clients here) or client (their clients there, the server here)")
      ->type_name("server|client");
  run->add_option("--out", ra.out_dir, "directory for results.json, results.csv, results.md");
  run->add_option("--json", ra.json, "write the result JSON here (atomically)");
  run->add_option("--csv", ra.csv, "append CSV rows here (header written when new)");
  run->add_option("--markdown", ra.markdown, "write a Markdown table here");
  run->footer(
      "Examples:\n"
      "  ipclab run\n"
      "  ipclab run --preset quick --out results/quick\n"
      "  ipclab run messaging/pipe -p size=64,4K -p pattern=roundtrip\n"
      "  ipclab run messaging --budget 90s --dry-run\n"
      "  ipclab run 'messaging/shm_*' --repetitions auto --json r.json\n"
      "  ipclab run messaging/pipe -p placement=same --antagonist cpu@others\n"
      "Parameters and their values: `ipclab list SUITE`. Exit: 0 ok, 1 a benchmark failed, 2 usage error.");

  AdviseArgs aa;
  auto* advise = app.add_subcommand(
      "advise", "Which messaging transport for your messages? Measures the candidates here and ranks them");
  text_option(advise, "--size", aa.size, "message size in bytes, e.g. 64 or 4K (default 64)")
      ->type_name("BYTES");
  text_option(advise, "--rate", aa.rate,
              "messages per second offered, e.g. 50k (default: closed-loop round trips)")
      ->type_name("PER_S");
  text_option(advise, "--sides", aa.mode, "threads or processes (default processes)")
      ->type_name("threads|processes");
  text_option(advise, "--placement", aa.placement,
              "same: both sides on one CPU; cross: on two (default cross)")
      ->type_name("same|cross");
  text_option(advise, "--p99-us", aa.p99_us, "the p99 latency bound, microseconds")->type_name("US");
  text_option(advise, "--cpu-us", aa.cpu_us,
              "the CPU bound per round trip (per message with --rate), microseconds")
      ->type_name("US");
  text_option(advise, "--budget", aa.budget,
              "time to spend measuring, up to 1h: seconds (60) or with a unit (90s, 5m), as `run --budget`; "
              "at least what the candidates need at the shortest windows (a smaller one is refused, naming "
              "that least) (default 60s)")
      ->type_name("TIME");
  advise->add_option("--only", aa.only,
                     "only these messaging transports (repeatable), e.g. --only pipe --only 'shm_*'");
  advise
      ->add_option("--noisy", aa.noisy,
                   "rank by p99 under this interference (repeatable; as run --antagonist, docs/noise.md): "
                   "each repetition paired with a quiet one, so that the answer says what it gives up quiet")
      ->type_name("KIND[@WHERE][:LEVEL]")
      ->allow_extra_args(false);
  text_option(advise, "--store", aa.store,
              "add the measurements to this results store (docs/store.md): an SQLite file or postgresql://…")
      ->type_name("PATH");
  advise->add_flag("--json", aa.json, "print the ranking as JSON")
      ->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  advise->footer(
      "Examples:\n"
      "  ipclab advise --size 64 --p99-us 50 --sides processes\n"
      "  ipclab advise --size 4K --rate 50k --cpu-us 5 --budget 2m\n"
      "  ipclab advise --only pipe --only 'shm_*' --placement same --budget 30\n"
      "  ipclab advise --placement same --noisy cpu@same --budget 2m\n"
      "Exit: 0 an answer, 1 no candidate meets the bounds, 2 usage error.");

  // Hidden: what `ipclab run --remote` starts on the remote host through ssh.
  auto* remote_side =
      app.add_subcommand("remote-side", "The remote end of `ipclab run --remote` (started by it)");
  remote_side->group("");

  auto* version =
      app.add_subcommand("version", "The same as --version: version, commit, build type and flags");

  auto* env = app.add_subcommand("env", "The environment block and its warnings");
  bool env_json = false;
  env->add_flag("--json", env_json, "print as JSON")->multi_option_policy(CLI::MultiOptionPolicy::Throw);

  std::vector<std::string> passthrough;
  auto* topo_cmd = app.add_subcommand(
      "topo", "The CPU topology (sysfs) and the measured cache-line round trip between CPUs");
  bool topo_json = false, topo_no_measure = false;
  topo_cmd->add_flag("--json", topo_json, "print as JSON")
      ->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  topo_cmd->add_flag("--no-measure", topo_no_measure, "sysfs only: measure nothing")
      ->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  auto* report = app.add_subcommand("report",
                                    "Reports from result files: report RESULT.json... -o report.html | "
                                    "--markdown F | --pages DIR | --reduce OUT.json");
  auto* store_cmd = app.add_subcommand("store", "The results store: store import FILE... [--store PATH]");
  auto* store_import = store_cmd->add_subcommand(
      "import",
      "Add earlier result files (results.json, reduced files, journals) to the store, each as a run");
  std::vector<std::string> import_files;
  std::optional<std::string> import_store;
  store_import->add_option("FILE", import_files, "result files to add (- : one read from standard input)")
      ->required()
      ->type_name("FILE");
  std::optional<std::string> import_kind;
  text_option(
      store_import, "--kind", import_kind,
      "what the files' runs were: import (default), or ab (ipclab ab's slices of one side: kept, never "
      "compared with a run)")
      ->type_name("KIND");
  text_option(store_import, "--store", import_store, "the store (default: results/ipclab.sqlite)")
      ->type_name("PATH");
  bool import_compare = false;
  store_import
      ->add_flag(
          "--compare", import_compare,
          "say, as a run does at its end, what moved in each file since the last comparable run already in "
          "the store (before the file is added)")
      ->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  store_cmd->require_subcommand(1);
  auto* compare = app.add_subcommand(
      "compare", "Compare two result files: compare BASE.json NEW.json [--threshold PCT] [--noise PCT]");
  auto* ab = app.add_subcommand(
      "ab",
      "Paired A/B runs: ab BASE_BINARY NEW_BINARY [FILTER...] [-p k=v] [--pairs N] [--b-param k=v] "
      "[--b-env K=V] ... (see `ipclab ab --help`)");
  auto* history = app.add_subcommand(
      "history",
      "A benchmark's runs in the results store and its change points: history [BENCH...] [--store PATH] "
      "(see `ipclab history --help`)");
  list->footer("Examples:\n  ipclab list\n  ipclab list messaging\n  ipclab list --json");
  app.footer(
      "Examples:\n"
      "  ipclab run\n"
      "  ipclab run messaging/pipe -p size=64\n"
      "  ipclab advise --size 64 --p99-us 50\n"
      "  ipclab report results/*/results.json -o report.html\n"
      "  ipclab compare base.json new.json\n"
      "  ipclab history messaging/pipe\n"
      "  ipclab ab old/ipclab new/ipclab messaging/pipe\n"
      "Each command's options and examples: ipclab COMMAND --help.");
  for (auto* sub : {report, compare, ab, history}) {
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
                 brief(argv[1]), names);
      return 2;
    }
  }
  if (auto rc = parse_command_line(app, argc, argv, "ipclab", "`ipclab --help`")) return *rc;

  // What the command printed must reach its reader: a failed write or flush of stdout (a full
  // disk, a closed pipe) is an error, not a success with the output lost.
  auto finish = [](int rc, int err = 0) {
    errno = 0;
    const bool flushed = std::fflush(stdout) == 0;
    if (flushed && !std::ferror(stdout)) return rc;
    const int e = !flushed && errno ? errno : err;
    fmt::print(
        stderr,
        "ipclab: cannot write to standard output{}; check where it goes (a full disk, a closed pipe)\n",
        e ? fmt::format(" ({})", std::strerror(e)) : "");
    return rc ? rc : 1;
  };
  try {
    if (*list) {
      cmd_list(list_suite, list_json);
      return finish(0);
    }
    if (*version) {
      fmt::print("{}", version_text());
      return finish(0);
    }
    if (*env) return finish(cmd_env(env_json, cmdline));
    if (*remote_side) {
      int rc = cmd_remote_side();
      ipc::end_run();
      return finish(rc);
    }
    if (*topo_cmd) return finish(cmd_topo(topo_json, !topo_no_measure));
    if (*advise) {
      int rc = cmd_advise(aa, cmdline);
      ipc::end_run();
      return finish(rc);
    }
    if (*store_import)
      return finish(
          cmd_store_import(import_files, import_store, import_kind.value_or("import"), import_compare));
    if (*report) exec_python("report", report->remaining());
    if (*compare) exec_python("compare", compare->remaining());
    if (*ab) exec_python("ab", ab->remaining());
    if (*history) exec_python("history", history->remaining());
    int rc = cmd_run(ra, cmdline);
    ipc::end_run();
    return finish(rc);
  } catch (const UsageError& e) {
    ipc::end_run();
    fmt::print(stderr, "ipclab: {}\n", brief(e.what(), 600));
    return 2;
  } catch (const RunError& e) {
    ipc::end_run();
    fmt::print(stderr, "ipclab: {}\n", brief(e.what(), 600));
    return 1;
  } catch (const std::exception& e) {
    ipc::end_run();
    if (std::ferror(stdout)) {  // a write to stdout failed (fmt throws): say so
      auto* sys = dynamic_cast<const std::system_error*>(&e);
      return finish(1, sys && sys->code().category() == std::generic_category() ? sys->code().value() : 0);
    }
    fmt::print(stderr, "ipclab: internal error: {}\n", brief(e.what(), 600));
    return finish(1);
  }
}
