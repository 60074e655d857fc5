#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "core/model/mechanism.hpp"

namespace ipclab {

Registry& Registry::get() {
  static Registry r;
  return r;
}

void Registry::add(Mechanism m) {
  int kinds = bool(m.transport) + bool(m.loop) + bool(m.workload);
  if (kinds != 1) throw std::logic_error(m.full_name() + ": give exactly one of transport, loop, workload");
  if (m.server && !m.workload)
    throw std::logic_error(m.full_name() + ": a server is started and driven by its suite's workload");
  // Kept in a stable, readable order for `list` and runs (by suite, then by name) by inserting each
  // at its place: sorting the whole list again at every registration made start-up quadratic (a
  // third of an ASan test program's start, which every unit test pays).
  auto before = [](const Mechanism& a, const Mechanism& b) {
    return std::tie(a.suite, a.name) < std::tie(b.suite, b.name);
  };
  auto [same, after] = std::equal_range(mechanisms_.begin(), mechanisms_.end(), m, before);
  if (same != after) throw std::logic_error(m.full_name() + " registered twice");
  mechanisms_.insert(after, std::move(m));
}

void Registry::add(Suite s) { suites_.push_back(std::move(s)); }

std::vector<std::string> Registry::suite_names() const {
  std::vector<std::string> out;
  for (auto& m : mechanisms_)
    if (std::find(out.begin(), out.end(), m.suite) == out.end()) out.push_back(m.suite);
  return out;
}

std::vector<Suite::Table> with_open_loop_tables(std::vector<Suite::Table> closed, const std::string& op,
                                                const std::string& what, const std::string& label) {
  closed.push_back(
      {.id = "rate",
       .title = "Open-loop load: " + what + "; latency from each " + op + "'s intended send time",
       .where = "open_loop",
       .figures = {{"requested", "paced_rate:requested_per_s"},
                   {"achieved", "paced_rate:achieved_per_s"},
                   {"p50", "paced_latency:p50"},
                   {"p99", "paced_latency:p99"},
                   {"p99.9", "paced_latency:p999"},
                   {"raw p99", "paced_latency:p99:raw"},
                   {"sched error p99", "paced_latency:p99:sched"},
                   {"pacing floor p99", "paced_latency:p99:floor"},
                   {"CPU/" + op, "cpu"},
                   {"CPU/" + op + " by role", "cpu_by_role"},
                   {"saturated", "saturated"}},
       .label = label,
       .hide = {"rate"}});
  closed.push_back(
      {.id = "capacity",
       .title = "Capacity: the highest rate whose p99 (from the intended send time) meets the bound",
       .where = "capacity",
       .figures = {{"p99 bound", "slo_bound"},
                   {"bound basis", "slo_basis"},
                   {"capacity", "capacity"},
                   {"confirmed", "confirmed"},
                   {"p99 at capacity", "paced_latency:p99"},
                   {"trials", "trials"}},
       .label = label,
       .hide = {"rate", "slo_p99_us"}});
  return closed;
}

const Suite* Registry::suite(const std::string& name) const {
  for (auto& s : suites_)
    if (s.name == name) return &s;
  return nullptr;
}

}  // namespace ipclab
