// CSV: the leading columns suites declare (e.g. the messaging reference's), then ours.
#include <cmath>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/mechanism.hpp"
#include "core/output/output.hpp"

#include <fmt/format.h>

namespace ipclab::output {

namespace {

const std::vector<std::string> kCommonColumns = {
    "name", "suite", "mechanism", "run_type", "repetition", "status", "ops", "bytes", "wall_s",
    "time_per_op_ns", "ops_per_s", "MiB_per_s", "lat_kind", "lat_p50_ns", "lat_p99_ns",
    "lat_p999_ns", "lat_max_ns", "cpu_user_s", "cpu_sys_s", "cpu_per_op_ns", "ctx_vol",
    "ctx_invol", "ctx_per_op", "placement", "cpus_observed", "sent", "received", "lost",
    "duplicated", "corrupt", "error"};

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string num(double v) {
  if (!std::isfinite(v)) return "";
  return fmt::format("{:.6g}", v);
}

std::vector<std::string> common_cells(const Record& r) {
  double ops_s = r.wall_s > 0 ? double(r.ops) / r.wall_s : 0;
  double mib_s = r.wall_s > 0 ? double(r.bytes) / r.wall_s / 1048576.0 : 0;
  auto& l = r.latency;
  return {r.name, r.suite, r.mechanism, r.run_type, std::to_string(r.repetition),
          status_name(r.status), std::to_string(r.ops), std::to_string(r.bytes), num(r.wall_s),
          num(r.time_per_op_ns()), num(ops_s), num(mib_s), l ? l->kind : "",
          l ? std::to_string(l->p50) : "", l ? std::to_string(l->p99) : "",
          l ? std::to_string(l->p999) : "", l ? std::to_string(l->max) : "", num(r.cpu.user_s),
          num(r.cpu.sys_s), num(r.cpu_per_op_ns()), std::to_string(r.cpu.ctx_vol),
          std::to_string(r.cpu.ctx_invol), num(r.ctx_per_op()), r.placement.layout,
          observed_text(r.placement),
          std::to_string(r.integrity.sent), std::to_string(r.integrity.received),
          std::to_string(r.integrity.lost), std::to_string(r.integrity.duplicated),
          std::to_string(r.integrity.corrupt), r.error};
}

}  // namespace

std::vector<std::string> csv_header(const std::vector<Record>& records) {
  std::vector<std::string> h;
  for (auto& s : Registry::get().suites()) {
    if (s.csv_columns.empty()) continue;
    bool present = false;
    for (auto& r : records) present = present || r.suite == s.name;
    if (present) h.insert(h.end(), s.csv_columns.begin(), s.csv_columns.end());
  }
  h.insert(h.end(), kCommonColumns.begin(), kCommonColumns.end());
  return h;
}

std::string csv_rows(const std::vector<std::string>& header, const std::vector<Record>& records) {
  std::string out;
  size_t lead = header.size() - kCommonColumns.size();
  for (auto& r : records) {
    std::vector<std::string> cells(lead);
    // Leading columns: the row's own suite fills its block, other suites' blocks stay empty.
    size_t at = 0;
    for (auto& s : Registry::get().suites()) {
      if (s.csv_columns.empty()) continue;
      if (at >= lead || header[at] != s.csv_columns.front()) continue;
      if (r.suite == s.name && s.csv_row) {
        auto row = s.csv_row(r);
        for (size_t i = 0; i < row.size() && i < s.csv_columns.size(); ++i) cells[at + i] = row[i];
      }
      at += s.csv_columns.size();
    }
    auto common = common_cells(r);
    cells.insert(cells.end(), common.begin(), common.end());
    std::string line;
    for (size_t i = 0; i < cells.size(); ++i) line += (i ? "," : "") + csv_escape(cells[i]);
    out += line + "\n";
  }
  return out;
}

void append_csv(const std::string& path, const std::vector<Record>& records) {
  auto header = csv_header(records);
  std::string head_line;
  for (size_t i = 0; i < header.size(); ++i) head_line += (i ? "," : "") + header[i];
  std::string existing;
  {
    std::ifstream in(path);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      existing = ss.str();
    }
  }
  if (!existing.empty()) {
    std::string first = existing.substr(0, existing.find('\n'));
    if (first != head_line)
      throw UsageError(fmt::format("--csv {}: the file has other columns (another suite mix); "
                                   "choose another file", path));
    if (existing.back() != '\n') existing += '\n';
  } else {
    existing = head_line + "\n";
  }
  write_file_atomic(path, existing + csv_rows(header, records));
}

}  // namespace ipclab::output
