// A Markdown table of a run: machine line, warnings, one row per benchmark under its table name
// (table_names) in the columns every result table has (columns()), then the parameters each mechanism held
// constant, so that no value is lost.
#include "core/output/reporter.hpp"

#include <fmt/format.h>

namespace ipclab::output {

std::string markdown(const nlohmann::json& context, const TableNames& names,
                     const std::vector<Record>& records) {
  std::string md = "# ipclab results\n\n";
  auto cpu = context.value("cpu", nlohmann::json::object());
  auto load = context.value("load_avg", nlohmann::json::array());
  md += fmt::format(
      "Machine: {} ({} CPUs), {}, {}; load average {}; {}; git {}\n\n", cpu.value("model", "?"),
      cpu.value("logical_cpus", 0), context.value("kernel", "?"), context.value("virtualization", "?"),
      load.empty() ? "?" : fmt::format("{:.2f}", load[0].get<double>()), context.value("date", "?"),
      context.contains("git_sha") && context["git_sha"].is_string() ? context["git_sha"].get<std::string>()
                                                                    : "?");
  if (context.contains("warnings") && !context["warnings"].empty()) {
    md += "Warnings:\n";
    for (auto& w : context["warnings"])
      md += fmt::format("- {} — {}\n", w.value("message", ""), w.value("remedy", ""));
    md += "\n";
  }
  std::string header = "|", rule = "|";
  for (auto& c : columns()) {
    header += " " + c.key + " |";
    rule += c.width > 0 ? "---:|" : "---|";
  }
  md += header + "\n" + rule + "\n";
  bool any_agg = false;
  for (auto& r : records) any_agg = any_agg || r.run_type == "aggregate";
  for (auto& r : records) {
    if (any_agg && r.run_type != "aggregate") continue;
    const nlohmann::json j = to_json(r);
    std::string row = "|";
    for (auto& c : columns()) {
      std::string text = c.format == "name"     ? "`" + names.of(r.name) + "`"
                         : c.format == "status" ? status_text(r)
                                                : figure_cell(c, j);
      for (auto& ch : text)
        if (ch == '|') ch = '/';
      row += " " + text + " |";
    }
    md += row + "\n";
  }
  if (!names.fixed.empty()) {
    md += "\nThe same in every row of a mechanism:\n";
    for (auto& [mechanism, fixed] : names.fixed) md += fmt::format("- `{}`: `{}`\n", mechanism, fixed);
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
