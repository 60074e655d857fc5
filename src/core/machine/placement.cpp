#include "core/machine/placement.hpp"

#include <sched.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <system_error>

#include "core/base/error.hpp"
#include "core/base/params.hpp"
#include "core/machine/topology.hpp"
#include "core/stats/statistics.hpp"

namespace ipclab {

namespace {

// What each class asks of a pair, for messages.
const char* class_wording(const std::string& layout) {
  if (layout == "smt") return "two threads of one core (SMT siblings)";
  if (layout == "llc") return "two cores that share a last-level cache";
  if (layout == "cross_llc") return "two last-level caches of one NUMA node";
  return "two NUMA nodes";
}

}  // namespace

bool is_class_layout(const std::string& layout) {
  return layout == "smt" || layout == "llc" || layout == "cross_llc" || layout == "cross_numa";
}

ResolvedPair class_pair(const std::string& layout, const std::vector<int>& cpus, const topo::Topology& t,
                        const topo::Matrix& m) {
  auto find = [&](int id) -> const topo::Cpu* {
    for (auto& c : t.cpus)
      if (c.id == id) return &c;
    return nullptr;
  };
  auto rank = [&](int id) { return std::find(cpus.begin(), cpus.end(), id) - cpus.begin(); };
  auto hidden = [&](int a, int b) {
    return std::any_of(m.hidden_siblings.begin(), m.hidden_siblings.end(),
                       [&](const topo::Pair& p) { return (p.a == a && p.b == b) || (p.a == b && p.b == a); });
  };
  auto measured = [&](int a, int b) {
    for (auto& p : m.pairs)
      if ((p.a == a && p.b == b) || (p.a == b && p.b == a)) return p.ns;
    return 0.0;
  };
  // The class's pairs, side 0 on the one listed first.
  std::vector<ResolvedPair> members;
  for (size_t i = 0; i < cpus.size(); ++i)
    for (size_t j = i + 1; j < cpus.size(); ++j) {
      const topo::Cpu *a = find(cpus[i]), *b = find(cpus[j]);
      if (!a || !b) continue;
      const std::string rel = topo::relation(*a, *b);
      const bool sibling = hidden(a->id, b->id);
      if (sibling ? layout != "smt" : rel != layout) continue;
      members.push_back(
          {a->id, b->id, measured(a->id, b->id),
           sibling ? fmt::format("measured: behaves as SMT siblings (sysfs: {})", rel) : "sysfs"});
    }
  if (members.empty()) return {};
  std::vector<double> ns;
  for (auto& p : members)
    if (p.c2c_ns > 0) ns.push_back(p.c2c_ns);
  if (ns.empty()) return members.front();
  const double mid = median_of(ns);
  auto best = members.end();
  for (auto it = members.begin(); it != members.end(); ++it) {
    if (!(it->c2c_ns > 0)) continue;
    if (best == members.end()) {
      best = it;
      continue;
    }
    const double d = std::abs(it->c2c_ns - mid), bd = std::abs(best->c2c_ns - mid);
    // Nearest the median; a tie goes to the pair listed first.
    if (d < bd ||
        (d == bd && std::make_pair(rank(it->a), rank(it->b)) < std::make_pair(rank(best->a), rank(best->b))))
      best = it;
  }
  return *best;
}

const topo::Matrix& measured_matrix(const std::vector<int>& cpus) {
  // One measurement per CPU set for the whole process: the coordinator resolves a run's placement
  // before any worker starts, so forked workers inherit the figures rather than measure anew.
  static std::mutex lock;
  static std::map<std::vector<int>, topo::Matrix> done;
  std::lock_guard hold(lock);
  auto it = done.find(cpus);
  if (it == done.end()) {
    const topo::Topology t = topo::read("/sys", cpus);
    it = done.emplace(cpus, topo::measure_pairs(t, [](int a, int b) { return topo::c2c_ns(a, b); })).first;
  }
  return it->second;
}

ResolvedPair resolve_pair(const std::string& layout, const std::vector<int>& cpus) {
  if (layout == "unpinned" || layout == "same" || cpus.empty()) return {};
  if (std::string why = placement_problem(layout, cpus); !why.empty()) throw UsageError(why);
  if (layout == "cross") {
    // Just the pair used: no need to measure every pair of --cpus.
    static std::mutex lock;
    static std::map<std::pair<int, int>, double> done;
    std::lock_guard hold(lock);
    const auto key = std::make_pair(cpus[0], cpus[1]);
    auto it = done.find(key);
    if (it == done.end()) it = done.emplace(key, topo::c2c_ns(cpus[0], cpus[1])).first;
    return {cpus[0], cpus[1], it->second, "given"};
  }
  if (!is_class_layout(layout)) throw UsageError(fmt::format("unknown placement '{}'", brief(layout)));
  ResolvedPair p = class_pair(layout, cpus, topo::here(), measured_matrix(cpus));
  if (p.a < 0) {
    std::string have;
    for (int c : cpus) have += (have.empty() ? "" : ",") + std::to_string(c);
    // A class the machine lacks skips the benchmark, with the reason, as a missing feature does.
    throw Skip(fmt::format(
        "placement {} needs {} among the CPUs given ({}), and neither sysfs nor the measured round trips "
        "show one here (see `ipclab topo`); give --cpus with such a pair",
        layout, class_wording(layout), have));
  }
  return p;
}

int cpus_needed(const std::string& layout) {
  if (layout == "unpinned") return 0;
  if (layout == "same") return 1;
  if (layout == "cross" || is_class_layout(layout)) return 2;
  throw UsageError(fmt::format(
      "unknown placement '{}'; use same, cross, smt, llc, cross_llc, cross_numa or unpinned", brief(layout)));
}

std::string placement_problem(const std::string& layout, const std::vector<int>& cpus) {
  const size_t need = size_t(cpus_needed(layout));
  std::vector<int> distinct = cpus;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  if (distinct.size() >= need) return "";
  std::string have;
  for (int c : distinct) have += (have.empty() ? "" : ",") + std::to_string(c);
  return fmt::format(
      "placement {} needs {} distinct CPUs but only {} {} available ({}); give --cpus "
      "with {} CPUs, e.g. --cpus 0,1, or choose another placement",
      layout, need, distinct.size(), distinct.size() == 1 ? "is" : "are", have.empty() ? "none" : have, need);
}

int cpu_for_side(const std::string& layout, int side, const std::vector<int>& cpus) {
  if (layout == "unpinned" || cpus.empty()) return -1;
  if (std::string why = placement_problem(layout, cpus); !why.empty()) throw UsageError(why);
  if (layout == "same") return cpus[0];
  if (is_class_layout(layout)) {
    const ResolvedPair p = resolve_pair(layout, cpus);
    return side == 0 ? p.a : p.b;
  }
  return cpus[side == 0 ? 0 : 1];
}

}  // namespace ipclab
