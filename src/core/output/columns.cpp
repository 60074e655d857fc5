// The result tables' columns, defined once: the console and the Markdown file draw them from here,
// and the report (HTML and summary.md) from `ipclab list --json`, which exports them.
#include <fmt/format.h>

#include "core/output/output.hpp"

namespace ipclab::output {

const std::vector<Column>& columns() {
  static const std::vector<Column> all = {
      {"name", {}, "name", 0, "the benchmark: its mechanism and the parameters that vary (table_names)"},
      {"time/op", {"time_per_op_ns"}, "time", 10, "wall time per operation"},
      {"rate", {"rates", "ops_per_s"}, "rate", 10, "operations per second"},
      {"p50", {"latency_ns", "p50"}, "time", 10, "median latency (its kind: latency_ns.kind)"},
      {"p99", {"latency_ns", "p99"}, "time", 10, "99th percentile latency"},
      {"CPU/op", {"cpu", "per_op_ns"}, "time", 10, "CPU (user + sys) per operation, every side"},
      {"ctx/op", {"cpu", "ctx_per_op"}, "ratio", 7, "context switches per operation"},
      {"sys/op",
       {"kernel", "per_op", "syscalls"},
       "ratio",
       7,
       "system calls per operation (kernel counters)"},
      {"status", {}, "status", 0, "ok, failed or skipped, and what casts doubt on an ok figure"},
  };
  return all;
}

std::string figure_cell(const Column& c, const nlohmann::json& record) {
  const nlohmann::json* at = &record;
  for (auto& key : c.value) {
    if (!at->is_object() || !at->contains(key)) return "-";
    at = &(*at)[key];
  }
  if (!at->is_number()) return "-";
  const double v = at->get<double>();
  if (c.format == "time") return human_ns(v);
  if (c.format == "rate") return human_rate(v);
  return fmt::format("{:.2f}", v);
}

}  // namespace ipclab::output
