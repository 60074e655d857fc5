#pragma once
// Command-line parsing shared by the ipclab binary and the tools: help exits 0, and bad input is
// one line naming the fix on stderr with exit code 2 (CLI11's own message spans several lines).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>

namespace ipclab {

/// Parses argv into `app`. Returns nothing when the program should go on, or the exit code when
/// it should stop (after help, or after printing "<prog>: <error>; see <help>").
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, std::string_view prog,
                                             std::string_view help) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string what = e.what();
    fmt::print(stderr, "{}: {}; see {}\n", prog, what.substr(0, what.find('\n')), help);
    return 2;
  }
  return std::nullopt;
}

}  // namespace ipclab
