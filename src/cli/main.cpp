// ipclab: one entry point, and the table of contents of its commands. Each command declares its
// options in its own file and registers itself (cli/commands.hpp): list (cli/list.cpp); run — parse
// → plan → run → report, on core/plan/runner — (cli/run.cpp); advise (cli/advise.cpp); remote-side
// (cli/remote_side.cpp); version (cli/commands.cpp); env (cli/env.cpp); topo (cli/topo.cpp); store
// (cli/store.cpp); report, compare, ab, history and agree, which live in the Python package report/
// (cli/python.cpp). main lists them in help order, parses the command line and runs the one asked for.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <system_error>
#include <utility>
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

// The commands, in the order `ipclab --help` lists them (remote-side hidden).
constexpr const char* kCommands[] = {"list",   "run",   "advise",  "remote-side", "version", "env",  "topo",
                                     "report", "store", "compare", "ab",          "history", "agree"};

std::string command_line(int argc, char** argv) {
  std::string s;
  for (int i = 0; i < argc; ++i) s += (i ? " " : "") + std::string(argv[i]);
  return s;
}

// The command line: ipclab's own options and help, and each command in kCommands' order, declared
// by its file. Returns each command's subcommand with what runs it.
std::vector<std::pair<CLI::App*, Runner>> declare(CLI::App& app) {
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every command");
  app.set_version_flag(
      "--version", [] { return version_text(); },
      "The version, the commit it was built from, the build type, compiler and flags");
  if (Commands::get().all().size() != std::size(kCommands))
    throw std::logic_error("a registered command is missing from main.cpp's kCommands");
  std::vector<std::pair<CLI::App*, Runner>> commands;
  for (const char* name : kCommands) {
    const Command& c = Commands::get().at(name);
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    commands.emplace_back(sub, c.declare(*sub));
  }
  // After the commands: a subcommand takes its parent's footer when it is added.
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
  return commands;
}

// CLI11 reports an unknown command as "A subcommand is required": name it and the commands.
bool unknown_command(CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return false;
  std::string names;
  bool known = false;
  for (auto* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    known = known || sub->get_name() == argv[1];
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  if (!known)
    fmt::print(stderr, "ipclab: unknown command '{}'; use one of {} (see `ipclab --help`)\n", brief(argv[1]),
               names);
  return !known;
}

// What the command printed must reach its reader: a failed write or flush of stdout (a full disk, a
// closed pipe) is an error, not a success with the output lost.
int finish(int rc, int err = 0) {
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  if (flushed && !std::ferror(stdout)) return rc;
  const int e = !flushed && errno ? errno : err;
  fmt::print(stderr,
             "ipclab: cannot write to standard output{}; check where it goes (a full disk, a closed pipe)\n",
             e ? fmt::format(" ({})", std::strerror(e)) : "");
  return rc ? rc : 1;
}

// A command's error as one line, and its exit code: 2 bad input, 1 a run that failed or anything else.
int failed(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const UsageError& e) {
    fmt::print(stderr, "ipclab: {}\n", brief(e.what(), 600));
    return 2;
  } catch (const RunError& e) {
    fmt::print(stderr, "ipclab: {}\n", brief(e.what(), 600));
    return 1;
  } catch (const std::exception& e) {
    if (std::ferror(stdout)) {  // a write to stdout failed (fmt throws): say so
      auto* sys = dynamic_cast<const std::system_error*>(&e);
      return finish(1, sys && sys->code().category() == std::generic_category() ? sys->code().value() : 0);
    }
    fmt::print(stderr, "ipclab: internal error: {}\n", brief(e.what(), 600));
    return finish(1);
  }
}

// Runs the command. Whatever a run it began created goes on every path, before its error is said
// (ipc::end_run: here, once for every command; nothing when the command began no run).
int execute(const Runner& run, const std::string& cmdline) {
  int rc = 0;
  std::exception_ptr error;
  try {
    rc = run(cmdline);
  } catch (...) {
    error = std::current_exception();
  }
  ipc::end_run();
  return error ? failed(error) : finish(rc);
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
  CLI::App app{"ipclab — measure every way two pieces of code talk on one Linux machine", "ipclab"};
  const auto commands = declare(app);
  if (unknown_command(app, argc, argv)) return 2;
  if (auto rc = parse_command_line(app, argc, argv, "ipclab", "`ipclab --help`")) return *rc;
  for (auto& [sub, run] : commands)
    if (*sub) return execute(run, command_line(argc, argv));
  return 2;  // not reached: the command line names one command (require_subcommand)
}
