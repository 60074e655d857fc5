// `ipclab list [SUITE] [--json]`: what the binary can run — the suites, their mechanisms and
// parameters; with --json the registry as the report reads it (output::registry_json).
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <memory>
#include <set>

#include "cli/commands.hpp"
#include "core/base/error.hpp"
#include "core/base/params.hpp"
#include "core/model/mechanism.hpp"
#include "core/output/reporter.hpp"

namespace ipclab::cli {
namespace {

struct ListArgs {
  std::optional<std::string> suite;
  bool json = false;
};

std::string joined(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (auto& x : v) out += (out.empty() ? "" : sep) + x;
  return out;
}

std::string names_of(const std::vector<const Mechanism*>& ms) {
  std::string out;
  for (auto* m : ms) out += (out.empty() ? "" : ", ") + m->name;
  return out;
}

// The index: a suite a row, its mechanisms by name, what the suite measures beneath; each suite's
// parameters with `ipclab list SUITE`.
void print_index(const Registry& reg) {
  for (auto& suite : reg.suite_names()) {
    std::string names;
    for (auto& m : reg.mechanisms())
      if (m.suite == suite) names += (names.empty() ? "" : ", ") + m.name;
    fmt::print("{}\n", wrap(suite, 11, names, text_width(), ", "));
    if (const Suite* s = reg.suite(suite); s && !s->help.empty())
      fmt::print("{}\n", wrap("", 11, s->help, text_width(), " "));
  }
  fmt::print(
      "\n`ipclab list SUITE`: each mechanism's help and parameters, with their values and the presets' "
      "grids.\n");
}

// A parameter of a suite's mechanisms, once for all that take it alike.
struct Entry {
  const ParamSpec* spec;
  std::vector<const Mechanism*> takers;
  std::vector<const ParamSpec*> specs;  // each taker's own (its grids)
};

// A parameter is the same in two mechanisms when all `list` says of it but its presets' grids is:
// grids that differ are said per mechanism.
std::string param_key(const ParamSpec& p) {
  return fmt::format("{}={}\n{}\n{}\n{}\n{}={}", p.name, p.def, p.help, type_name(p.type),
                     joined(p.choices, "|"), p.only_with.first, joined(p.only_with.second, "|"));
}

// The mechanisms' parameters, first seen first.
std::vector<Entry> entries_of(const std::vector<const Mechanism*>& mechs) {
  std::vector<Entry> params;
  for (const Mechanism* m : mechs)
    for (auto& p : m->params) {
      const std::string k = param_key(p);
      auto it = std::find_if(params.begin(), params.end(), [&](auto& e) { return param_key(*e.spec) == k; });
      if (it == params.end())
        params.push_back({&p, {m}, {&p}});
      else
        it->takers.push_back(m), it->specs.push_back(&p);
    }
  return params;
}

// One preset's grid of an entry: the same for every taker, or each value list with its takers.
std::string grid_text(const Entry& e, const char* preset, std::vector<std::string> ParamSpec::*values) {
  std::vector<std::pair<std::string, std::vector<std::string>>> by;  // values -> mechanisms
  for (size_t i = 0; i < e.specs.size(); ++i) {
    const std::string v = joined(e.specs[i]->*values, ",");
    auto it = std::find_if(by.begin(), by.end(), [&](auto& b) { return b.first == v; });
    if (it == by.end())
      by.push_back({v, {e.takers[i]->name}});
    else
      it->second.push_back(e.takers[i]->name);
  }
  if (by.size() == 1)
    return by[0].first.empty() ? std::string() : fmt::format("; {} {}", preset, by[0].first);
  std::string out;
  for (auto& [v, ms] : by)
    out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", v.empty() ? "none" : v, joined(ms, ", "));
  return fmt::format("; {} {}", preset, out);
}

// An entry's line: -p NAME=DEFAULT, then its help, type, values, grids and what it needs, and
// `which` mechanisms take it.
std::string param_line(const Entry& e, const std::string& which, size_t width) {
  const ParamSpec& p = *e.spec;
  const std::string vals = joined(p.choices, "|");
  std::string only;
  for (auto& v : p.only_with.second)
    only += (only.empty() ? "; only with " + p.only_with.first + "=" : "|") + v;
  const std::string label = fmt::format("  -p {}={}", p.name, p.def);
  const std::string text = fmt::format(
      "{} ({}{}{}{}{}){}", p.help, type_name(p.type), vals.empty() ? "" : ": " + vals,
      grid_text(e, "quick", &ParamSpec::quick), grid_text(e, "full", &ParamSpec::full), only, which);
  constexpr size_t kIndent = 26;
  return label.size() + 2 > kIndent ? label + "\n" + wrap("", kIndent, text, width, " ")
                                    : wrap(label, kIndent, text, width, " ");
}

// " [every mechanism]", " [all but ...]" or " [only ...]": which of the suite's mechanisms take it.
std::string takers_text(const Entry& e, const std::vector<const Mechanism*>& mechs) {
  const auto& takers = e.takers;
  if (takers.size() == mechs.size()) return " [every mechanism]";
  std::vector<const Mechanism*> without;
  for (auto* m : mechs)
    if (std::find(takers.begin(), takers.end(), m) == takers.end()) without.push_back(m);
  return without.size() < takers.size() ? " [all but " + names_of(without) + "]"
                                        : " [only " + names_of(takers) + "]";
}

// Each parameter once: those that several mechanisms share (the suite's standard parameters) in
// one list, saying which mechanisms take them; then each mechanism, its help and the parameters
// only it takes.
void print_suite(const Registry& reg, const std::string& suite) {
  std::vector<const Mechanism*> mechs;
  for (auto& m : reg.mechanisms())
    if (m.suite == suite) mechs.push_back(&m);
  const size_t width = text_width();
  const std::vector<Entry> params = entries_of(mechs);
  bool shared_header = false;
  for (auto& e : params) {
    if (e.takers.size() < 2) continue;
    if (!shared_header)
      fmt::print("{}\n", wrap("", 0,
                              fmt::format("Parameters of {} mechanisms (-p NAME=VALUE, the default after the "
                                          "'='; each mechanism's own beneath it):",
                                          suite),
                              width, " "));
    shared_header = true;
    fmt::print("{}\n", param_line(e, takers_text(e, mechs), width));
  }
  if (shared_header) fmt::print("\n");
  for (const Mechanism* m : mechs) {
    const char* kind = m->transport ? "transport" : m->loop ? "loop" : "workload";
    fmt::print("{}  [{}]\n{}\n", m->full_name(), kind, wrap("", 4, m->help, width, " "));
    for (auto& e : params)
      if (e.takers.size() == 1 && e.takers.front() == m) fmt::print("{}\n", param_line(e, "", width));
  }
}

int cmd_list(const ListArgs& a) {
  const auto& suite_filter = a.suite;
  if (suite_filter && suite_filter->empty())
    throw UsageError("list: empty suite name; give a suite (see `ipclab list`) or none for all");
  auto& reg = Registry::get();
  if (const auto names = reg.suite_names();
      suite_filter && std::find(names.begin(), names.end(), *suite_filter) == names.end())
    throw UsageError(
        fmt::format("unknown suite '{}'; run `ipclab list` to see the suites", brief(*suite_filter)));
  if (a.json)
    fmt::print("{}\n", output::registry_json(suite_filter ? std::set<std::string>{*suite_filter}
                                                          : std::set<std::string>{})
                           .dump(2));
  else if (!suite_filter)
    print_index(reg);
  else
    print_suite(reg, *suite_filter);
  return 0;
}

Runner declare_list(CLI::App& sub) {
  auto a = std::make_shared<ListArgs>();
  text_option(sub, "suite", a->suite, "Only this suite");
  flag_once(sub, "--json", a->json,
            "print the registry as JSON: suites, their table columns, mechanisms and parameters");
  sub.footer("Examples:\n  ipclab list\n  ipclab list messaging\n  ipclab list --json");
  return [a](const std::string&) { return cmd_list(*a); };
}

}  // namespace

IPCLAB_COMMAND(Command{"list", "Suites, mechanisms and their parameters", declare_list});

}  // namespace ipclab::cli
