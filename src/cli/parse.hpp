#pragma once
// Command-line parsing shared by the ipclab binary and the tools: help exits 0, and bad input is
// one line naming the fix on stderr with exit code 2 (CLI11's message may carry the user's text:
// control characters and invalid UTF-8 are escaped, so that it stays one line).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "core/base/error.hpp"
#include "core/output/reporter.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace ipclab {

/// The width help is wrapped to: $COLUMNS when it is a number, else the terminal's (stdout), else
/// 80; never under 40.
inline size_t help_width() {
  size_t width = 0;
  if (const char* c = std::getenv("COLUMNS"); c && *c) width = std::strtoul(c, nullptr, 10);
  if (!width) width = output::terminal_columns(stdout);
  return std::max<size_t>(width ? width : 80, 40);
}

/// CLI11's help text with every line that passes `width` broken between words: an option's
/// description continues under its column (`desc_col`), any other line under its own indentation.
inline std::string wrap_help(const std::string& help, size_t width, size_t desc_col) {
  std::istringstream in(help);
  std::string out, line;
  while (std::getline(in, line)) {
    while (!line.empty() && line.back() == ' ') line.pop_back();
    if (line.size() <= width) {
      out += line + "\n";
      continue;
    }
    const size_t lead = line.find_first_not_of(' ');
    // An option's row: two spaces, its name, and its description from desc_col on.
    const bool row =
        lead == 2 && line.size() > desc_col && line[desc_col - 1] == ' ' && line[desc_col] != ' ';
    size_t indent = row ? desc_col : lead;
    if (indent + 20 > width) indent = 4;
    std::string cur = line.substr(0, row ? desc_col : lead);
    std::string words = line.substr(row ? desc_col : lead);
    bool fresh = true;  // nothing but the indentation on `cur` yet
    for (size_t pos = 0; pos < words.size();) {
      size_t end = words.find(' ', pos);
      if (end == std::string::npos) end = words.size();
      const std::string word = words.substr(pos, end - pos);
      pos = end + 1;
      if (word.empty()) continue;
      if (!fresh && cur.size() + 1 + word.size() > width) {
        out += cur + "\n";
        cur = std::string(indent, ' ');
        fresh = true;
      }
      cur += (fresh ? "" : " ") + word;
      fresh = false;
    }
    out += cur + "\n";
  }
  return out;
}

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
  // Help fits the terminal: the option column narrows with it, and long lines break between words.
  const size_t width = help_width();
  const size_t column = std::min<size_t>(30, width / 3);
  app.get_formatter()->column_width(column);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    fmt::print("{}", wrap_help(app.help(), width, column));
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    fmt::print("{}", wrap_help(app.help("", CLI::AppFormatMode::All), width, column));
    return 0;
  } catch (const CLI::CallForVersion& e) {
    const std::string text = e.what();
    fmt::print("{}{}", text, !text.empty() && text.back() == '\n' ? "" : "\n");
    return 0;
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "{}: {}; see {}\n", prog, printable(e.what()), help);
    return 2;
  }
  return std::nullopt;
}

}  // namespace ipclab
