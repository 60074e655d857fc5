#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <system_error>

#include "core/error.hpp"
#include "core/mechanism.hpp"
#include "core/output/output.hpp"

namespace ipclab::output {

void write_file_atomic(const std::string& path, const std::string& content) {
  std::string tmp = fmt::format("{}.tmp.{}", path, getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw UsageError(fmt::format("cannot write '{}': {}; choose a writable path", path, strerror(errno)));
  const char* p = content.data();
  size_t left = content.size();
  while (left) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw std::system_error(e, std::generic_category(), "write " + tmp);
    }
    p += n;
    left -= size_t(n);
  }
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw std::system_error(e, std::generic_category(), "rename to " + path);
  }
}

std::string json_document(const nlohmann::json& context, const std::vector<Record>& records) {
  nlohmann::json doc;
  doc["schema_version"] = kSchemaVersion;
  doc["context"] = context;
  doc["benchmarks"] = nlohmann::json::array();
  for (auto& r : records) doc["benchmarks"].push_back(to_json(r));
  return doc.dump(1) + "\n";
}

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
  std::string observed;
  for (auto& s : r.placement.sides) {
    std::string cpus;
    for (int c : s.observed) cpus += (cpus.empty() ? "" : "+") + std::to_string(c);
    observed += (observed.empty() ? "" : " ") + s.role + std::to_string(s.index) + "@" + cpus;
  }
  double ops_s = r.wall_s > 0 ? double(r.ops) / r.wall_s : 0;
  double mib_s = r.wall_s > 0 ? double(r.bytes) / r.wall_s / 1048576.0 : 0;
  auto& l = r.latency;
  return {r.name, r.suite, r.mechanism, r.run_type, std::to_string(r.repetition),
          status_name(r.status), std::to_string(r.ops), std::to_string(r.bytes), num(r.wall_s),
          num(r.time_per_op_ns()), num(ops_s), num(mib_s), l ? l->kind : "",
          l ? std::to_string(l->p50) : "", l ? std::to_string(l->p99) : "",
          l ? std::to_string(l->p999) : "", l ? std::to_string(l->max) : "", num(r.cpu.user_s),
          num(r.cpu.sys_s), num(r.cpu_per_op_ns()), std::to_string(r.cpu.ctx_vol),
          std::to_string(r.cpu.ctx_invol), num(r.ctx_per_op()), r.placement.layout, observed,
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

std::string human_ns(double ns) {
  if (!std::isfinite(ns) || ns <= 0) return "-";
  const char* unit = "ns";
  double v = ns;
  if (v >= 1e9) { v /= 1e9; unit = "s"; }
  else if (v >= 1e6) { v /= 1e6; unit = "ms"; }
  else if (v >= 1e3) { v /= 1e3; unit = "us"; }
  int decimals = v >= 100 ? 0 : v >= 10 ? 1 : 2;
  return fmt::format("{:.{}f} {}", v, decimals, unit);
}

std::string human_rate(double r) {
  if (!std::isfinite(r) || r <= 0) return "-";
  const char* unit = "";
  if (r >= 1e9) { r /= 1e9; unit = "G"; }
  else if (r >= 1e6) { r /= 1e6; unit = "M"; }
  else if (r >= 1e3) { r /= 1e3; unit = "k"; }
  int decimals = r >= 100 ? 0 : r >= 10 ? 1 : 2;
  return fmt::format("{:.{}f}{}/s", r, decimals, unit);
}

std::string markdown(const nlohmann::json& context, const std::vector<Record>& records) {
  std::string md = "# ipclab results\n\n";
  auto cpu = context.value("cpu", nlohmann::json::object());
  auto load = context.value("load_avg", nlohmann::json::array());
  md += fmt::format("Machine: {} ({} CPUs), {}, {}; load average {}; {}; git {}\n\n",
                    cpu.value("model", "?"), cpu.value("logical_cpus", 0), context.value("kernel", "?"),
                    context.value("virtualization", "?"), load.empty() ? "?" : fmt::format("{:.2f}", load[0].get<double>()),
                    context.value("date", "?"),
                    context.contains("git_sha") && context["git_sha"].is_string()
                        ? context["git_sha"].get<std::string>() : "?");
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
    std::string observed;
    for (auto& s : r.placement.sides) {
      std::string cpus;
      for (int c : s.observed) cpus += (cpus.empty() ? "" : "+") + std::to_string(c);
      observed += (observed.empty() ? "" : " ") + s.role + "@" + (cpus.empty() ? "?" : cpus);
    }
    std::string status = status_name(r.status);
    if (!r.error.empty()) status += ": " + r.error;
    for (auto& ch : status)
      if (ch == '|') ch = '/';
    md += fmt::format("| `{}` | {} | {} | {} | {} | {} | {:.2f} | {} {} | {} |\n", r.name,
                      human_ns(r.time_per_op_ns()), human_rate(r.wall_s > 0 ? r.ops / r.wall_s : 0),
                      r.latency ? human_ns(double(r.latency->p50)) : "-",
                      r.latency ? human_ns(double(r.latency->p99)) : "-", human_ns(r.cpu_per_op_ns()),
                      r.ctx_per_op(), r.placement.layout, observed, status);
  }
  return md;
}

void Console::header(size_t name_width) {
  width_ = std::max<size_t>(name_width, 20);
  std::string h = fmt::format("{:<{}} {:>10} {:>10} {:>10} {:>10} {:>10} {:>7}  {}", "Benchmark",
                              width_, "Time/op", "Rate", "p50", "p99", "CPU/op", "ctx/op", "Status");
  fmt::print(out_, "{}\n{}\n", h, std::string(h.size() + 4, '-'));
  fflush(out_);
}

void Console::row(const Record& r) {
  std::string name = r.name;
  if (r.run_type == "aggregate") name += "_median";
  std::string status = status_name(r.status);
  if (!r.error.empty()) status += ": " + r.error;
  fmt::print(out_, "{:<{}} {:>10} {:>10} {:>10} {:>10} {:>10} {:>7.2f}  {}\n", name, width_,
             human_ns(r.time_per_op_ns()), human_rate(r.wall_s > 0 ? r.ops / r.wall_s : 0),
             r.latency ? human_ns(double(r.latency->p50)) : "-",
             r.latency ? human_ns(double(r.latency->p99)) : "-", human_ns(r.cpu_per_op_ns()),
             r.ctx_per_op(), status);
  fflush(out_);
}

}  // namespace ipclab::output
