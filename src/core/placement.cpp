#include "core/placement.hpp"

#include <sched.h>

#include <fmt/format.h>

#include <algorithm>
#include <system_error>

#include "core/error.hpp"
#include "core/params.hpp"
#include "core/topology.hpp"

namespace ipclab {

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return {0};
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

std::vector<int> parse_cpu_list(const std::string& text) {
  auto allowed = allowed_cpus();
  auto is_allowed = [&](int64_t c) { return std::find(allowed.begin(), allowed.end(), c) != allowed.end(); };
  std::string have;
  for (int c : allowed) have += (have.empty() ? "" : ",") + std::to_string(c);
  if (text.empty())
    throw UsageError(
        fmt::format("--cpus is empty: list CPUs like 0,1 or 0-3 from {}, or leave --cpus out", have));
  // Every number is checked against the allowed set before a range is expanded, so a range
  // is at most CPU_SETSIZE long whatever the text says.
  auto cpu = [&](std::string_view num) {
    auto v = parse_integer(num);
    if (!v)
      throw UsageError(
          fmt::format("--cpus '{}': '{}' is not a CPU number; write a list like 0,1 or 0-3", brief(text), brief(num)));
    if (*v < 0 || *v >= CPU_SETSIZE || !is_allowed(*v))
      throw UsageError(
          fmt::format("--cpus '{}': CPU {} is not available here; choose from {}", brief(text), brief(num), have));
    return int(*v);
  };
  std::vector<int> out;
  for (size_t pos = 0; pos <= text.size();) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view part = std::string_view(text).substr(pos, comma - pos);
    pos = comma + 1;
    if (part.empty())
      throw UsageError(fmt::format("--cpus '{}': empty element; write a list like 0,1 or 0-3", brief(text)));
    const size_t dash = part.find('-', 1);  // a leading '-' is a sign, which cpu() refuses
    const int lo = cpu(part.substr(0, dash));
    int hi = lo;
    if (dash != std::string_view::npos) {
      hi = cpu(part.substr(dash + 1));
      if (hi < lo)
        throw UsageError(fmt::format("--cpus '{}': range {} is reversed; write {}-{}", brief(text), brief(part), hi, lo));
    }
    for (int c = lo; c <= hi; ++c) {
      if (!is_allowed(c))
        throw UsageError(
            fmt::format("--cpus '{}': CPU {} is not available here; choose from {}", brief(text), c, have));
      if (std::find(out.begin(), out.end(), c) != out.end())
        throw UsageError(fmt::format("--cpus '{}': CPU {} is listed twice; list each CPU once", brief(text), c));
      out.push_back(c);
    }
  }
  return out;
}

bool set_affinity(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

void pin_current_thread(int cpu) {
  if (cpu >= 0 && !set_affinity(cpu))
    throw std::system_error(errno, std::generic_category(), fmt::format("pin to CPU {}", cpu));
}

int current_cpu() { return sched_getcpu(); }

ScopedPin::ScopedPin(int cpu) {
  if (cpu < 0) return;
  CPU_ZERO(&old_);
  saved_ = sched_getaffinity(0, sizeof old_, &old_) == 0;
  set_affinity(cpu);
}

ScopedPin::~ScopedPin() {
  if (saved_) sched_setaffinity(0, sizeof old_, &old_);
}

namespace {

// What each class asks of a pair, for messages.
const char* class_wording(const std::string& layout) {
  if (layout == "smt") return "two threads of one core (SMT siblings)";
  if (layout == "llc") return "two cores that share a last-level cache";
  if (layout == "cross_llc") return "two last-level caches of one NUMA node";
  return "two NUMA nodes";
}

// The allowed CPUs' topology as sysfs states it, read once.
const topo::Topology& machine() {
  static const topo::Topology t = topo::read("/sys", allowed_cpus());
  return t;
}

}  // namespace

bool is_class_layout(const std::string& layout) {
  return layout == "smt" || layout == "llc" || layout == "cross_llc" || layout == "cross_numa";
}

std::pair<int, int> class_pair(const std::string& layout, const std::vector<int>& cpus, const topo::Topology& t) {
  auto find = [&](int id) -> const topo::Cpu* {
    for (auto& c : t.cpus)
      if (c.id == id) return &c;
    return nullptr;
  };
  for (size_t i = 0; i < cpus.size(); ++i)
    for (size_t j = i + 1; j < cpus.size(); ++j) {
      const topo::Cpu *a = find(cpus[i]), *b = find(cpus[j]);
      if (a && b && topo::relation(*a, *b) == layout) return {cpus[i], cpus[j]};
    }
  return {-1, -1};
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
    // A class the machine lacks skips the benchmark, with the reason, as a missing feature does.
    const auto [a, b] = class_pair(layout, cpus, machine());
    if (a < 0) {
      std::string have;
      for (int c : cpus) have += (have.empty() ? "" : ",") + std::to_string(c);
      throw Skip(fmt::format(
          "placement {} needs {} among the CPUs given ({}), and sysfs shows none here (a VM may hide what "
          "lies under its vCPUs: see `ipclab topo`); give --cpus with such a pair",
          layout, class_wording(layout), have));
    }
    return side == 0 ? a : b;
  }
  return cpus[side == 0 ? 0 : 1];
}

}  // namespace ipclab
