#include <algorithm>
#include <stdexcept>

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
  for (auto& o : mechanisms_)
    if (o.full_name() == m.full_name()) throw std::logic_error(m.full_name() + " registered twice");
  mechanisms_.push_back(std::move(m));
  // Stable, readable order for `list` and runs: by suite, then by name.
  std::stable_sort(mechanisms_.begin(), mechanisms_.end(),
                   [](auto& a, auto& b) { return a.suite != b.suite ? a.suite < b.suite : a.name < b.name; });
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
