// Table names: a benchmark as people read it in a table — its mechanism and what varies.
#include <map>
#include <set>

#include "core/output/output.hpp"

namespace ipclab::output {

namespace {

// A size as it is usually typed (1K, 1G), other values as they are.
std::string shown(const Mechanism& m, const std::string& param, const std::string& value) {
  for (auto& spec : m.params)
    if (spec.name == param && spec.type == ParamType::Size)
      if (auto bytes = parse_integer(value)) return size_text(*bytes);
  return value;
}

}  // namespace

const std::string& TableNames::of(const std::string& name) const {
  auto it = short_name.find(name);
  return it == short_name.end() ? name : it->second;
}

TableNames table_names(const std::vector<PlannedBenchmark>& plan) {
  // What varies is judged per mechanism, not across the run: parameters belong to a mechanism,
  // and a value swept for one (a pipe's size) tells nothing apart among another's rows, whose
  // own grid may hold it fixed. Within one mechanism the planned points are distinct (expand_grid
  // has no repeated value), so the parameters that vary tell every row apart; across mechanisms
  // the mechanism's name does — no two rows of a table look alike.
  std::map<const Mechanism*, std::map<std::string, std::set<std::string>>> values;
  std::vector<const PlannedBenchmark*> first;  // each mechanism's first point, in plan order
  for (auto& b : plan) {
    if (!values.count(b.mech)) first.push_back(&b);
    for (auto& [k, v] : b.params.items()) values[b.mech][k].insert(v);
  }
  TableNames t;
  for (auto& b : plan) {
    std::string name = b.mech->full_name();
    for (auto& [k, v] : b.params.items())
      if (values[b.mech][k].size() > 1) name += " " + k + ":" + shown(*b.mech, k, v);
    t.short_name[b.name] = name;
  }
  for (auto* b : first) {
    std::string fixed;
    for (auto& [k, v] : b->params.items())
      if (values[b->mech][k].size() == 1)
        fixed += (fixed.empty() ? "" : " ") + k + ":" + shown(*b->mech, k, v);
    if (!fixed.empty()) t.fixed.emplace_back(b->mech->full_name(), fixed);
  }
  return t;
}

}  // namespace ipclab::output
