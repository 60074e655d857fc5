// The result tables' columns, defined once: the console and the Markdown file draw them from here,
// and the report (HTML and summary.md) from `ipclab list --json`, which exports them.
#include <fmt/format.h>

#include "core/output/output.hpp"

namespace ipclab::output {

namespace {

// latency_ns.kind: as the tables word it (at most 10 characters: the console's column), and what it
// measures.
struct Kind {
  const char *code, *text, *meaning;
};
constexpr Kind kKinds[] = {
    {"rtt", "round trip", "a request and its reply (echo: at the row's connection count)"},
    {"one_way", "one-way+q", "sent to received, the time queued behind earlier messages included"},
    {"io", "per IO", "one IO, at the row's queue depth"},
    {"op", "per op", "one operation"},
    {"session", "session", "a whole client session"},
    {"sched_error", "lateness", "a paced wait's actual minus intended time"},
    {"batch_mean", "batch mean", "an op's mean over a timed batch, too short to time alone"},
    {"none", "-", "no distribution: time/op (a mean) only"},
};

std::string kind_help() {
  std::string h = "what p50 and p99 measure (latency_ns.kind):";
  for (auto& k : kKinds) h += fmt::format(" {} = {};", k.text, k.meaning);
  h.back() = '.';
  return h;
}

}  // namespace

std::string latency_kind_text(const std::string& kind) {
  for (auto& k : kKinds)
    if (kind == k.code) return k.text;
  return kind.empty() ? "-" : kind;
}

nlohmann::json latency_kind_texts() {
  nlohmann::json j = nlohmann::json::object();
  for (auto& k : kKinds) j[k.code] = k.text;
  return j;
}

std::string latency_kind_meaning(const std::string& kind) {
  for (auto& k : kKinds)
    if (kind == k.code) return k.meaning;
  return kind;
}

const std::vector<Column>& columns() {
  static const std::vector<Column> all = {
      {"name", {}, "name", 0, "the benchmark: its mechanism and the parameters that vary (table_names)"},
      {"time/op", {"time_per_op_ns"}, "time", 7, "wall time per operation"},
      {"rate", {"rates", "ops_per_s"}, "rate", 7, "operations per second"},
      {"latency", {"latency_ns", "kind"}, "kind", 10, kind_help()},
      {"p50", {"latency_ns", "p50"}, "whole_ns", 7, "median latency, of the kind the latency column names"},
      {"p99", {"latency_ns", "p99"}, "whole_ns", 7, "99th percentile latency, of the same kind"},
      {"CPU/op", {"cpu", "per_op_ns"}, "time", 7, "CPU (user + sys) per operation, every side"},
      {"ctx/op", {"cpu", "ctx_per_op"}, "ratio", 6, "context switches per operation"},
      {"sys/op",
       {"kernel", "per_op", "syscalls"},
       "ratio",
       6,
       "system calls per operation (kernel counters: --kernel-counters; a table leaves the column out "
       "when no row has them)",
       "kernel_counters"},
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
  if (c.format == "kind") return at->is_string() ? latency_kind_text(at->get<std::string>()) : "-";
  if (!at->is_number()) return "-";
  const double v = at->get<double>();
  if (c.format == "time") return human_ns(v);
  // A latency's percentiles are whole nanoseconds (its histogram's): below a microsecond shown so,
  // never with decimals a batch mean of 1.39 ns does not have ("1 ns", not "1.00 ns").
  if (c.format == "whole_ns") return v > 0 && v < 1000 ? fmt::format("{:.0f} ns", v) : human_ns(v);
  if (c.format == "rate") return human_rate(v);
  return fmt::format("{:.2f}", v);
}

}  // namespace ipclab::output
