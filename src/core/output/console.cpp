// The console table, in the manner of Google Benchmark's.
#include <algorithm>

#include "core/output/output.hpp"

#include <fmt/format.h>

namespace ipclab::output {

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
