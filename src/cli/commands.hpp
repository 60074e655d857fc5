#pragma once
// The commands of the ipclab binary. Each command's file declares its options and registers it with
// IPCLAB_COMMAND, as a mechanism registers with IPCLAB_REGISTER; main.cpp lists them in the order
// `ipclab --help` shows them and runs the one asked for. Each checks all of its input before it
// starts any work: bad input is a UsageError (one line naming the fix, exit code 2).
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/model/mechanism.hpp"  // IPCLAB_CONCAT

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace ipclab::cli {

/// What runs a command once the command line is parsed, given that line as typed: its exit code.
using Runner = std::function<int(const std::string& cmdline)>;

/// One command: its name, its line in `ipclab --help`, and `declare`, which adds its options (and
/// subcommands) to its CLI11 subcommand, binding them to the runner it returns.
struct Command {
  std::string name, help;
  std::function<Runner(CLI::App& sub)> declare;
};

class Commands {
 public:
  static Commands& get();
  void add(Command c);
  /// The command of this name; a logic_error when none registered it.
  const Command& at(const std::string& name) const;
  const std::vector<Command>& all() const { return commands_; }

 private:
  std::vector<Command> commands_;
};

struct CommandRegistrar {
  explicit CommandRegistrar(Command c) { Commands::get().add(std::move(c)); }
};

/// Registers a command at start-up: `IPCLAB_COMMAND(Command{...});`
#define IPCLAB_COMMAND(...) \
  static const ::ipclab::cli::CommandRegistrar IPCLAB_CONCAT(ipclab_command_, __COUNTER__) { __VA_ARGS__ }

/// An option whose text the command parses itself, kept as given: CLI11 would turn an empty value
/// into the default, and reads integers with base prefixes (010 = 8).
CLI::Option* text_option(CLI::App& sub, const std::string& name, std::optional<std::string>& into,
                         const std::string& help);
/// A flag given at most once (a second is a usage error).
CLI::Option* flag_once(CLI::App& sub, const std::string& name, bool& into, const std::string& help);

/// `text` after `label` padded to `indent` columns, broken after a `sep` ("," between items, " "
/// between words) where the next piece would pass `width`; continuation lines start under the text
/// (output::wrap_text).
std::string wrap(const std::string& label, size_t indent, const std::string& text, size_t width,
                 const std::string& sep);
/// The width to wrap text to: the console's (output::console_columns), less one.
size_t text_width();
/// A line for stderr: on a terminal, wrapped to its width with the later lines indented; into a
/// file or a pipe, one line, as logs and the tools that read them by prefix want it.
std::string stderr_line(const std::string& lead, const std::string& text);

/// What every command that runs benchmarks does before its first: the run's ownership of what it
/// creates (its folder and journal, the sweep of runs that died, clean-up on a signal or a crash).
/// main ends it (ipc::end_run) once the command returns or throws.
void start_owned_run();
/// `ipclab --version` / `ipclab version`: the version, the commit it was built from, the build type,
/// compiler and flags (-march among them), as CMake configured them.
std::string version_text();
/// The commit this binary was built from ("<12 hex>[-dirty]", "unknown" outside a checkout).
std::string build_commit();

}  // namespace ipclab::cli
