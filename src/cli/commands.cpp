// The table of commands (cli/commands.hpp), what their files share, and `ipclab version`, which has
// nothing of its own to declare.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <stdexcept>

#include "cli/commands.hpp"
#include "core/output/reporter.hpp"

namespace ipclab::cli {

Commands& Commands::get() {
  static Commands c;
  return c;
}

void Commands::add(Command c) {
  for (auto& other : commands_)
    if (other.name == c.name) throw std::logic_error("ipclab " + c.name + " registered twice");
  commands_.push_back(std::move(c));
}

const Command& Commands::at(const std::string& name) const {
  for (auto& c : commands_)
    if (c.name == name) return c;
  throw std::logic_error("ipclab " + name + ": no command registered it");
}

CLI::Option* text_option(CLI::App& sub, const std::string& name, std::optional<std::string>& into,
                         const std::string& help) {
  return sub.add_option_function<std::string>(
      name, [&into](const std::string& v) { into = v; }, help);
}

CLI::Option* flag_once(CLI::App& sub, const std::string& name, bool& into, const std::string& help) {
  return sub.add_flag(name, into, help)->multi_option_policy(CLI::MultiOptionPolicy::Throw);
}

std::string wrap(const std::string& label, size_t indent, const std::string& text, size_t width,
                 const std::string& sep) {
  return output::wrap_text(fmt::format("{:<{}}", label, indent), text, width, indent, sep);
}

// The width to wrap text to: the console's (the terminal's, else $COLUMNS, else 100), less one.
size_t text_width() { return output::console_columns(stdout) - 1; }

std::string stderr_line(const std::string& lead, const std::string& text) {
  return output::wrap_text(lead, text, output::terminal_columns(stderr), 4) + "\n";
}

IPCLAB_COMMAND(Command{"version", "The same as --version: version, commit, build type and flags",
                       [](CLI::App&) -> Runner {
                         return [](const std::string&) {
                           fmt::print("{}", version_text());
                           return 0;
                         };
                       }});

}  // namespace ipclab::cli
