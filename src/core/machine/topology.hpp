#pragma once
// The machine's CPU topology, as sysfs states it and as a measurement shows it. sysfs gives
// packages, NUMA nodes, last-level-cache domains, cores and SMT siblings; a virtual machine often
// hides what lies under its vCPUs (two vCPUs on one physical core look like two cores), so the
// cache-line round trip between CPUs is also measured, pair by pair, and sorted into classes by
// the gaps between the figures. A pair measured far faster than the pairs sysfs puts in its class
// "behaves as SMT siblings" and is reported with its figures.
#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ipclab::topo {

struct Cpu {
  int id = -1;
  int package = -1, core = -1, node = -1;
  int llc = -1;               // the last-level cache's domain: the lowest CPU sharing it
  std::vector<int> siblings;  // SMT siblings, itself included (thread_siblings_list)
};

/// What sysfs says of `cpus` (every CPU listed there when empty). `sys` is the sysfs root
/// ("/sys", or a fake tree for tests): cpu/cpuN/topology, cpu/cpuN/cache/indexK, node/nodeM,
/// node/has_memory.
struct Topology {
  std::vector<Cpu> cpus;
  int packages = 0, nodes = 0, llcs = 0, cores = 0;  // nodes: those `cpus` are on
  bool smt = false;                                  // some core lists more than one thread
  /// Every NUMA node of the machine (node/nodeM, whatever CPUs it has), and those that hold memory
  /// (node/has_memory; every listed node when the file is missing). A kernel without NUMA lists
  /// none: then node 0, with memory.
  std::vector<int> node_ids, memory_nodes;
};
Topology read(const std::string& sys, const std::vector<int>& cpus = {});
/// read("/sys", allowed_cpus()): the CPUs this process may use, read once per process.
const Topology& here();

/// How sysfs relates two CPUs: "smt" (one core), "llc" (one last-level cache), "cross_llc" (one
/// NUMA node, two caches), "cross_numa".
std::string relation(const Cpu& a, const Cpu& b);

/// Classes of measured values: each value's class index (0 = the fastest class), split where
/// one sorted value exceeds the previous by more than `gap` times — so that noise within a class
/// (a few tens of percent) makes no class, and a real step (SMT siblings at a third of a core
/// pair's figure, another socket at twice) does.
std::vector<int> classes(const std::vector<double>& values, double gap = 1.5);

/// A measured pair.
struct Pair {
  int a, b;
  double ns;  // median cache-line round trip
};

/// The measurement: every pair of `t`'s CPUs up to 64 CPUs; beyond, up to `per_relation` pairs
/// of each sysfs relation (stated in the result). `measure(a, b)` gives a pair's figure.
struct Matrix {
  std::vector<Pair> pairs;
  bool sampled = false;
  std::vector<int> cls;  // classes() of the pairs' figures
  /// Pairs at most half as slow as the median of their sysfs relation, where that relation is
  /// not already "smt": hidden siblings (a VM's two vCPUs on one physical core).
  std::vector<Pair> hidden_siblings;
  /// Pairs that were hidden siblings on the first look and not on a second (their figure in
  /// `pairs` is the second look's, this one the first's): a VM whose vCPUs move between the host's
  /// cores. Neither smt nor trusted as two cores; env and topo say so.
  std::vector<Pair> fleeting_siblings;
};
template <class Measure>
Matrix measure_pairs(const Topology& t, Measure&& measure, size_t per_relation = 8);
/// Classes and hidden siblings of measured pairs (measure_pairs calls it; tests give it pairs).
void judge(const Topology& t, Matrix& m);
/// "CPUs 2 and 5 behaved as SMT siblings on one look (86 ns) and not on the next (341 ns)", for a
/// pair of m.fleeting_siblings: what env and topo warn.
std::string fleeting_text(const Matrix& m, const Pair& first_look);

/// The median cache-line round trip between CPUs `a` and `b`: two threads pinned there bounce
/// one line `rounds` times. 0 when either cannot be pinned.
double c2c_ns(int a, int b, int rounds = 2000);

nlohmann::json to_json(const Topology& t);
nlohmann::json to_json(const Topology& t, const Matrix& m);

// ---------------------------------------------------------------------------------------------

template <class Measure>
Matrix measure_pairs(const Topology& t, Measure&& measure, size_t per_relation) {
  Matrix m;
  const size_t n = t.cpus.size();
  m.sampled = n > 64;
  std::vector<std::pair<size_t, size_t>> todo;
  std::vector<std::pair<std::string, size_t>> taken;  // per relation, how many so far
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      if (m.sampled) {
        const std::string rel = relation(t.cpus[i], t.cpus[j]);
        auto it = std::find_if(taken.begin(), taken.end(), [&](auto& p) { return p.first == rel; });
        if (it == taken.end()) it = taken.insert(taken.end(), {rel, 0});
        if (it->second >= per_relation) continue;
        ++it->second;
      }
      todo.emplace_back(i, j);
    }
  for (auto [i, j] : todo)
    m.pairs.push_back({t.cpus[i].id, t.cpus[j].id, measure(t.cpus[i].id, t.cpus[j].id)});
  judge(t, m);
  // A hidden sibling must still be one on a second look: a VM's vCPUs may move between the host's
  // cores, and two that shared one while they were measured need not the next moment (a 16-vCPU
  // KVM guest: env named 2&5 and 3&9, topo a minute later 0&7). Each is measured again, once all
  // pairs are done; the slower look stands, and a pair that is no sibling on it is fleeting.
  const std::vector<Pair> first = m.hidden_siblings;
  if (first.empty()) return m;
  for (const Pair& h : first) {
    const double again = measure(h.a, h.b);
    for (Pair& p : m.pairs)
      if (p.a == h.a && p.b == h.b && again > p.ns) p.ns = again;
  }
  judge(t, m);
  for (const Pair& h : first)
    if (std::none_of(m.hidden_siblings.begin(), m.hidden_siblings.end(),
                     [&](const Pair& p) { return p.a == h.a && p.b == h.b; }))
      m.fleeting_siblings.push_back(h);
  return m;
}

}  // namespace ipclab::topo
