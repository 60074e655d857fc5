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

const Suite* Registry::suite(const std::string& name) const {
  for (auto& s : suites_)
    if (s.name == name) return &s;
  return nullptr;
}

}  // namespace ipclab
