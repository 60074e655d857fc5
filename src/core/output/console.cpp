// The console table, in the manner of Google Benchmark's: a row per record as it completes, each
// benchmark under its table name (table_names).
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>

#include "core/output/reporter.hpp"

#include <fmt/format.h>

namespace ipclab::output {

namespace {

constexpr const char* kMedian = " (median)";
// What a row holds after the name: five 10-wide figures, ctx/op, sys/op, and the status ("ok"
// mostly).
constexpr size_t kFigures = 5 * 11 + 8 + 8 + 2 + 6;
constexpr size_t kMinName = 20;

std::string row_name(const TableNames& names, const Record& r) {
  return names.of(r.name) + (r.run_type == "aggregate" ? kMedian : "");
}

}  // namespace

size_t terminal_columns(FILE* out) {
  winsize ws{};
  if (!isatty(fileno(out)) || ioctl(fileno(out), TIOCGWINSZ, &ws) != 0) return 0;
  return ws.ws_col;
}

void ConsoleReporter::begin(const nlohmann::json& context, const std::vector<PlannedBenchmark>& plan) {
  names_ = table_names(plan);
  // "auto" (--repetitions auto) runs five or more.
  const auto reps = context.value("repetitions", nlohmann::json(1));
  const bool medians = reps.is_string() || (reps.is_number() && reps.get<int>() > 1);
  size_t widest = 0;
  for (auto& [_, name] : names_.short_name)
    widest = std::max(widest, name.size() + (medians ? std::string(kMedian).size() : 0));
  // On a terminal the rows fit its width where they can; a longer name is then printed whole on a
  // line of its own, its figures on the next (see record), never cut.
  const size_t room = columns_ > kFigures ? columns_ - kFigures : 0;
  width_ = std::max(kMinName, columns_ ? std::min(widest, room) : widest);
  std::string h =
      fmt::format("{:<{}} {:>10} {:>10} {:>10} {:>10} {:>10} {:>7} {:>7}  {}", "Benchmark", width_, "Time/op",
                  "Rate", "p50", "p99", "CPU/op", "ctx/op", "sys/op", "Status");
  fmt::print(out_, "{}\n{}\n", h, std::string(h.size() + 4, '-'));
  fflush(out_);
}

void ConsoleReporter::record(const Record& r) {
  std::string name = row_name(names_, r);
  if (name.size() > width_) {
    fmt::print(out_, "{}\n", name);
    name.clear();
  }
  std::string status = status_text(r);
  // System calls per operation, when the kernel counted them (core/kcounters.hpp).
  const nlohmann::json sys =
      r.kernel.value("per_op", nlohmann::json::object()).value("syscalls", nlohmann::json());
  fmt::print(out_, "{:<{}} {:>10} {:>10} {:>10} {:>10} {:>10} {:>7.2f} {:>7}  {}\n", name, width_,
             human_ns(r.time_per_op_ns()), human_rate(r.wall_s > 0 ? r.ops / r.wall_s : 0),
             r.latency ? human_ns(double(r.latency->p50)) : "-",
             r.latency ? human_ns(double(r.latency->p99)) : "-", human_ns(r.cpu_per_op_ns()), r.ctx_per_op(),
             sys.is_number() ? fmt::format("{:.2f}", sys.get<double>()) : "-", status);
  fflush(out_);
}

}  // namespace ipclab::output
