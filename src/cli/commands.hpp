#pragma once
// The commands of the ipclab binary, one function each; main.cpp declares the command line and
// calls them. Each checks all of its input before it starts any work: bad input is a UsageError
// (one line naming the fix, exit code 2).
#include <optional>
#include <string>
#include <vector>

namespace ipclab::cli {

/// `ipclab run`'s arguments as given (an empty text included), parsed by cmd_run; an option left
/// out is nothing.
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

/// `ipclab advise`'s arguments as given; parsed by cmd_advise.
struct AdviseArgs {
  std::optional<std::string> size, rate, mode, placement, p99_us, cpu_us, budget;
  std::optional<std::string> store;  // --store: the results store its measurements go into
  std::vector<std::string> only;
  std::vector<std::string> noisy;  // --noisy KIND[@WHERE][:LEVEL]: rank under these antagonists
  bool json = false;
};

/// `text` after `label` padded to `indent` columns, broken after a `sep` ("," between items, " "
/// between words) where the next piece would pass `width`; continuation lines start under the text
/// (output::wrap_text).
std::string wrap(const std::string& label, size_t indent, const std::string& text, size_t width,
                 const std::string& sep);
/// The width to wrap text to: the console's (output::console_columns), less one.
size_t text_width();

/// `ipclab list [SUITE] [--json]`: suites, mechanisms and their parameters; with --json the
/// registry as the report reads it (output::registry_json).
void cmd_list(const std::optional<std::string>& suite_filter, bool as_json);
/// `ipclab env [--json]`: the environment block and its warnings.
int cmd_env(bool as_json, const std::string& cmdline);
/// `ipclab topo [--json] [--no-measure]`: the CPU topology from sysfs and, measured, the
/// cache-line round trip between every pair of allowed CPUs, sorted into classes.
int cmd_topo(bool as_json, bool measure);
/// `ipclab run`: parse → plan → run → report. Exit code: 0 ok, 1 a benchmark failed.
int cmd_run(const RunArgs& a, const std::string& cmdline);
/// `ipclab advise`: measures the messaging transports that can carry the user's messages and ranks
/// them against the user's bounds. Exit code: 0 an answer, 1 none meets the bounds.
int cmd_advise(const AdviseArgs& a, const std::string& cmdline);
/// `ipclab store import FILE... [--store PATH] [--kind import|ab]`: earlier results.json files,
/// reduced files and journals (- : one on standard input) into the store, each a run of `kind`.
/// With `compare`, each file's records are first compared with the last comparable run in the store,
/// as a run's are at its end. Exit code: 0, or 1 when one was not stored.
int cmd_store_import(const std::vector<std::string>& files, const std::optional<std::string>& store,
                     const std::string& kind, bool compare = false);
/// What every command that runs benchmarks does before its first: the run's ownership of what it
/// creates (its folder and journal, the sweep of runs that died, clean-up on a signal or a crash).
void start_owned_run();
/// `ipclab remote-side`: the remote end of `ipclab run --remote`, started there by ssh
/// (core/remote/remote.hpp).
int cmd_remote_side();
/// `ipclab --version` / `ipclab version`: the version, the commit it was built from, the build type,
/// compiler and flags (-march among them), as CMake configured them.
std::string version_text();
/// The commit this binary was built from ("<12 hex>[-dirty]", "unknown" outside a checkout).
std::string build_commit();
/// `ipclab report`, `ipclab compare` and `ipclab ab` live in the Python package report/: exec it.
[[noreturn]] void exec_python(const std::string& verb, const std::vector<std::string>& args);

}  // namespace ipclab::cli
