// The commands that live in the Python package report/ (matplotlib, scipy): `ipclab report`,
// `compare`, `ab`, `history` and `agree`. Each takes every argument as given, its help included,
// and execs `python3 -m ipclab_report VERB ARGS...`.
#include <unistd.h>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cli/commands.hpp"
#include "core/base/error.hpp"
#include "core/machine/home.hpp"

namespace ipclab::cli {
namespace {

// The user need not know that the command lives in Python: exec it with the same arguments. A
// bundle leaves the package out (core/machine/home.hpp).
[[noreturn]] void exec_python(const std::string& verb, const std::vector<std::string>& args) {
  const char* py = std::getenv("IPCLAB_PYTHON");
  std::string python = py && *py ? py : "python3";
  std::string pkg = source_file("report");
  if (access((pkg + "/ipclab_report").c_str(), F_OK) != 0)
    throw UsageError(fmt::format(
        "{}: the report package is not here ({}/ipclab_report){}; run `ipclab {}` on the results from a "
        "checkout of ipclab, where `make setup` installs what it needs",
        verb, pkg, started_from_bundle() ? ": a bundle leaves it out" : "", verb));
  const char* old = std::getenv("PYTHONPATH");
  std::string path = pkg + (old && *old ? ":" + std::string(old) : "");
  setenv("PYTHONPATH", path.c_str(), 1);
  // The report reads the registry of a result file that carries none (one older than the registry
  // in the context) from this binary: `ipclab list --json`.
  std::vector<char> self(4096);
  if (ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1); n > 0)
    setenv("IPCLAB_BIN", std::string(self.data(), size_t(n)).c_str(), 1);
  std::vector<std::string> argv{python, "-m", "ipclab_report", verb};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& s : argv) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  execvp(cargv[0], cargv.data());
  fmt::print(stderr, "ipclab: cannot start {}: {}; run `make setup` (or set IPCLAB_PYTHON)\n", python,
             strerror(errno));
  std::exit(2);
}

// Declares a command that exec_python runs: it takes every argument, --help too, as the package's.
Runner declare_python(CLI::App& sub) {
  sub.allow_extras();
  sub.prefix_command();
  sub.set_help_flag();
  return [&sub](const std::string&) -> int { exec_python(sub.get_name(), sub.remaining()); };
}

}  // namespace

IPCLAB_COMMAND(Command{"report",
                       "Reports from result files: report RESULT.json... -o report.html | "
                       "--markdown F | --pages DIR | --reduce OUT.json",
                       declare_python});
IPCLAB_COMMAND(Command{"compare",
                       "Compare two result files: compare BASE.json NEW.json [--threshold PCT] [--noise PCT]",
                       declare_python});
IPCLAB_COMMAND(Command{"ab",
                       "Paired A/B runs: ab BASE_BINARY NEW_BINARY [FILTER...] [-p k=v] [--pairs N] "
                       "[--b-param k=v] [--b-env K=V] ... (see `ipclab ab --help`)",
                       declare_python});
IPCLAB_COMMAND(Command{"history",
                       "A benchmark's runs in the results store and its change points: history [BENCH...] "
                       "[--store PATH] (see `ipclab history --help`)",
                       declare_python});
IPCLAB_COMMAND(Command{
    "agree",
    "Run ipclab and a reference tool (fio, sockperf, perf, zmq, nng, iceoryx) alternately on "
    "the same work and print how far they agree (docs/agreement.md)",
    declare_python});

}  // namespace ipclab::cli
