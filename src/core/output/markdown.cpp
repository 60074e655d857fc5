// A Markdown table of a run: machine line, warnings, one row per benchmark under its table name
// (table_names) in the columns every result table has (columns()), then the parameters each mechanism held
// constant, so that no value is lost.
#include "core/output/reporter.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ipclab::output {

namespace {

// Text from the machine, the environment, a remote side or a failure (a hostname, a kernel string,
// a warning, an error a remote side sent) reaches the page as text: no renderer may read a tag, a
// link, an image or a code span in it. HTML's three characters become entities; '[', ']', '`',
// '|' and '\\' are backslash-escaped (emphasis marks are left: harmless, and the raw file stays
// readable in a terminal).
std::string md_text(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '\\':
      case '`':
      case '[':
      case ']':
      case '|':
        out += '\\';
        out += c;
        break;
      case '\n':
      case '\r':
        out += ' ';
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A code span that holds `s` whatever it holds: delimited by one backtick more than its longest run
// of them (CommonMark), padded where it starts or ends with one; '|' as '/' in a table cell.
std::string md_code(std::string s) {
  size_t longest = 0, run = 0;
  for (char& c : s) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
    if (c == '|') c = '/';
    if (c == '\n' || c == '\r') c = ' ';
  }
  const std::string fence(longest + 1, '`');
  const bool pad = !s.empty() && (s.front() == '`' || s.back() == '`');
  return fence + (pad ? " " : "") + s + (pad ? " " : "") + fence;
}

// ipclab's own prose (flag_table()'s texts): its `code spans` as code spans, the rest as md_text.
std::string md_prose(const std::string& s) {
  std::string out;
  bool code = false;
  for (size_t pos = 0; pos <= s.size(); code = !code) {
    const size_t tick = std::min(s.find('`', pos), s.size());
    const std::string part = s.substr(pos, tick - pos);
    out += code ? md_code(part) : md_text(part);
    pos = tick + 1;
  }
  return out;
}

}  // namespace

std::string antagonists_text(const nlohmann::json& context) {
  std::string out;
  if (context.contains("antagonists") && context["antagonists"].is_array())
    for (auto& a : context["antagonists"])
      if (a.is_string()) out += (out.empty() ? "" : ", ") + a.get<std::string>();
  return out;
}

namespace {

// The page's heading: the machine line, and the antagonists the run was measured under.
std::string md_machine(const nlohmann::json& context) {
  std::string md = "# ipclab results\n\n";
  auto cpu = context.value("cpu", nlohmann::json::object());
  auto load = context.value("load_avg", nlohmann::json::array());
  md += fmt::format("Machine: {} ({} CPUs), {}, {}; load average {}; {}; git {}\n\n",
                    md_text(cpu.value("model", "?")), cpu.value("logical_cpus", 0),
                    md_text(context.value("kernel", "?")), md_text(context.value("virtualization", "?")),
                    load.empty() ? "?" : fmt::format("{:.2f}", load[0].get<double>()),
                    md_text(context.value("date", "?")),
                    md_text(context.contains("git_sha") && context["git_sha"].is_string()
                                ? context["git_sha"].get<std::string>()
                                : "?"));
  if (const std::string noise = antagonists_text(context); !noise.empty())
    md += fmt::format(
        "Under antagonists: {} — every figure below was measured under that noise "
        "(docs/noise.md; each record's `extra.antagonists` says what ran).\n\n",
        md_text(noise));
  return md;
}

// The run's warnings, then each repetition's own (flag_steal); "" when there are none.
std::string md_warnings(const nlohmann::json& context, const TableNames& names,
                        const std::vector<Record>& records) {
  std::string warned;
  auto warn = [&](const std::string& who, const nlohmann::json& w) {
    warned +=
        fmt::format("- {}{} — {}\n", who, md_text(w.value("message", "")), md_text(w.value("remedy", "")));
  };
  for (auto& w : context.value("warnings", nlohmann::json::array())) warn("", w);
  for (auto& r : records)
    for (auto& w : r.warnings)
      warn(fmt::format("{} (repetition {}): ", md_code(names.of(r.name)), r.repetition), w);
  return warned.empty() ? "" : "Warnings:\n" + warned + "\n";
}

// The table: a row per benchmark (its median where the run has medians, else every record), in the
// columns every result table has; a column only some runs have figures for (Column::needs, e.g.
// sys/op) only where a row has one.
std::string md_table(const std::vector<const Record*>& rows, const TableNames& names) {
  std::vector<const Column*> shown;
  for (auto& c : columns()) {
    bool any = c.needs.empty();
    for (size_t i = 0; !any && i < rows.size(); ++i) any = figure_cell(c, to_json(*rows[i])) != "-";
    if (any) shown.push_back(&c);
  }
  std::string header = "|", rule = "|";
  for (auto* c : shown) {
    header += " " + c->key + " |";
    rule += c->width > 0 ? "---:|" : "---|";
  }
  std::string md = header + "\n" + rule + "\n";
  for (auto* rp : rows) {
    const Record& r = *rp;
    const nlohmann::json j = to_json(r);
    std::string row = "|";
    for (auto* cp : shown) {
      const Column& c = *cp;
      const std::string text = c.format == "name"     ? md_code(names.of(r.name))
                               : c.format == "status" ? md_text(status_text(r))
                                                      : md_text(figure_cell(c, j));
      row += " " + text + " |";
    }
    md += row + "\n";
  }
  return md;
}

// What each flag the rows show means, and what to do about it (flag_table()).
std::string md_flag_legend(const std::vector<const Record*>& rows) {
  std::set<Flag> flags;
  for (auto* rp : rows)
    for (Flag f : record_flags(*rp)) flags.insert(f);
  if (flags.empty()) return "";
  std::string md = "\nWhat the flags mean, and what to do:\n";
  for (auto& f : flag_table())
    if (flags.count(f.flag))
      md += fmt::format("- **{}** ({}): {} — {}\n", md_text(f.word), md_code(f.id), md_prose(f.meaning),
                        md_prose(f.remedy));
  return md;
}

// A section of lines under its heading (the inflation's, the moves since the last run); "" without lines.
std::string md_section(const SinceText& section) {
  if (section.lines.empty()) return "";
  std::string md = "\n" + md_prose(section.heading) + "\n";
  for (auto& line : section.lines) md += "- " + md_text(line) + "\n";
  return md;
}

}  // namespace

std::string markdown(const nlohmann::json& context, const TableNames& names,
                     const std::vector<Record>& records) {
  std::string md = md_machine(context) + md_warnings(context, names, records);
  bool any_agg = false;
  for (auto& r : records) any_agg = any_agg || r.run_type == "aggregate";
  std::vector<const Record*> rows;
  for (auto& r : records)
    if (!any_agg || r.run_type == "aggregate") rows.push_back(&r);
  md += md_table(rows, names);
  md += md_flag_legend(rows);
  md += md_section(inflation_text(records, names));
  md += md_section(since_text(records, names));
  if (!names.fixed.empty()) {
    md += "\nThe same in every row of a mechanism:\n";
    for (auto& [mechanism, fixed] : names.fixed)
      md += fmt::format("- {}: {}\n", md_code(mechanism), md_code(fixed));
  }
  return md;
}

void MarkdownReporter::begin(const nlohmann::json& context, const std::vector<PlannedBenchmark>& plan) {
  AtomicReporter::begin(context, plan);
  names_ = table_names(plan);
}

void MarkdownReporter::end(const std::vector<Record>& records) {
  commit(markdown(context_, names_, records));
}

}  // namespace ipclab::output
