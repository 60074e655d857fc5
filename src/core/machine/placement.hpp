#pragma once
#include <sched.h>

#include <string>
#include <utility>
#include <vector>

#include "core/base/affinity.hpp"

namespace ipclab {
namespace topo {
struct Topology;
struct Matrix;
}  // namespace topo

/// Layouts of two sides: `same` (both on cpus[0]), `cross` (side 0 on cpus[0], side 1 on
/// cpus[1]), a placement class (is_class_layout: the first pair of cpus in that relation),
/// `unpinned` (the scheduler decides).
/// Returns the CPU for `side` (0 or 1) under `layout`, or -1 for unpinned; UsageError when the
/// layout is impossible on `cpus` (the planner rules that out before a run starts), Skip when
/// `cpus` hold no pair of a placement class (the benchmark is skipped with the reason).
/// Distinct CPUs `layout` needs (unpinned 0, same 1, cross 2); UsageError for an unknown layout.
int cpus_needed(const std::string& layout);
/// The placement classes: the two sides on CPUs that sysfs relates as the layout says — `smt` (two
/// threads of one core), `llc` (two cores sharing a last-level cache), `cross_llc` (two
/// last-level caches of one NUMA node), `cross_numa` (two NUMA nodes); core/machine/topology.hpp.
bool is_class_layout(const std::string& layout);
/// The pair a placement resolves to: side 0 on `a`, side 1 on `b`, their measured cache-line round
/// trip, and on what grounds the pair belongs to its class.
struct ResolvedPair {
  int a = -1, b = -1;
  double c2c_ns = 0;  // 0: not measured
  std::string basis;  // "sysfs", or "measured: behaves as SMT siblings (sysfs: llc)"
};
/// The pair of `cpus` that class `layout` resolves to on topology `t` with the pairs measured in
/// `m`: among the pairs the class holds — sysfs's relation, except that a pair measured as
/// hidden SMT siblings counts as `smt` and leaves its sysfs class — the one whose round trip is
/// closest to the class's median (a typical pair, not an outlier); the earliest such pair in
/// `cpus`' order when none was measured. {-1, -1} when the class holds none.
ResolvedPair class_pair(const std::string& layout, const std::vector<int>& cpus, const topo::Topology& t,
                        const topo::Matrix& m);
/// The pair a two-sided pinned layout (cross, or a class) places its sides on over `cpus`, with
/// its measured round trip: on this machine, measured once per process and kept (the first call
/// measures; `ipclab run` makes it before any worker starts). Skip when a class is missing here;
/// {-1, -1} for same and unpinned.
ResolvedPair resolve_pair(const std::string& layout, const std::vector<int>& cpus);
/// The machine's measured matrix over `cpus`, measured once per process (resolve_pair's).
const topo::Matrix& measured_matrix(const std::vector<int>& cpus);
/// Why `layout` cannot run on `cpus` (too few distinct CPUs), or "" when it can.
std::string placement_problem(const std::string& layout, const std::vector<int>& cpus);
int cpu_for_side(const std::string& layout, int side, const std::vector<int>& cpus);

}  // namespace ipclab
