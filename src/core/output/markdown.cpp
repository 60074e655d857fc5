// A Markdown table of a run: machine line, warnings, one row per benchmark under its table name
// (table_names), then the parameters each mechanism held constant, so that no value is lost.
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
  md += "| benchmark | time/op | rate | p50 | p99 | CPU/op | ctx/op | placement | status |\n";
  md += "|---|---:|---:|---:|---:|---:|---:|---|---|\n";
  bool any_agg = false;
  for (auto& r : records) any_agg = any_agg || r.run_type == "aggregate";
  for (auto& r : records) {
    if (any_agg && r.run_type != "aggregate") continue;
    std::string status = status_text(r);
    for (auto& ch : status)
      if (ch == '|') ch = '/';
    md += fmt::format("| `{}` | {} | {} | {} | {} | {} | {:.2f} | {} {} | {} |\n", names.of(r.name),
                      human_ns(r.time_per_op_ns()), human_rate(r.wall_s > 0 ? r.ops / r.wall_s : 0),
                      r.latency ? human_ns(double(r.latency->p50)) : "-",
                      r.latency ? human_ns(double(r.latency->p99)) : "-", human_ns(r.cpu_per_op_ns()),
                      r.ctx_per_op(), r.placement.layout, observed_text(r.placement), status);
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
