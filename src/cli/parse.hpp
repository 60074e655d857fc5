#pragma once
// Command-line parsing shared by the ipclab binary and the tools: help exits 0, and bad input is
// one line naming the fix on stderr with exit code 2 (CLI11's message may carry the user's text:
// control characters and invalid UTF-8 are escaped, so that it stays one line).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "core/base/error.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace ipclab {

/// Parses argv into `app`. Returns nothing when the program should go on, or the exit code when
/// it should stop (after help, or after printing "<prog>: <error>; see <help>").
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, std::string_view prog,
                                             std::string_view help) {
  // "--opt=" with nothing after the '=': CLI11 would take the next argument as its value
  // (`--json= messaging/pipe` writing the results over a file named messaging/pipe).
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") break;
    if (arg.size() > 3 && arg.substr(0, 2) == "--" && arg.find('=') == arg.size() - 1) {
      const std::string option(arg.substr(0, arg.size() - 1));
      fmt::print(stderr,
                 "{}: {} has an empty value; give one after the '=' ({}=VALUE), or leave {} out; see {}\n",
                 prog, printable(option), printable(option), printable(option), help);
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "{}: {}; see {}\n", prog, printable(e.what()), help);
    return 2;
  }
  return std::nullopt;
}

}  // namespace ipclab
