#pragma once
#include <sched.h>

#include <string>
#include <utility>
#include <vector>

namespace ipclab {
namespace topo {
struct Topology;
}

/// CPUs this process may run on (its affinity mask), ascending.
std::vector<int> allowed_cpus();
/// Parses a CPU list such as "0,1" or "0-3" (ascending ranges, each CPU once); UsageError for
/// anything else, and when a CPU is not allowed here.
std::vector<int> parse_cpu_list(const std::string& text);
/// Pins the calling thread to `cpu` (no-op for -1); throws std::system_error on failure.
void pin_current_thread(int cpu);
/// Pins the calling thread to `cpu` (>= 0); false when the kernel refuses. System calls only, no
/// allocation: a forked child may call it before it execs.
bool set_affinity(int cpu);
/// CPU the calling thread runs on now.
int current_cpu();

/// Pins the calling thread to `cpu` for its lifetime (no-op for -1), then restores its previous
/// affinity: a coordinator thread that drives one side of a run (a load generator) and goes on.
class ScopedPin {
 public:
  explicit ScopedPin(int cpu);
  ~ScopedPin();
  ScopedPin(const ScopedPin&) = delete;
  ScopedPin& operator=(const ScopedPin&) = delete;

 private:
  bool saved_ = false;
  cpu_set_t old_;
};

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
/// last-level caches of one NUMA node), `cross_numa` (two NUMA nodes); core/topology.hpp.
bool is_class_layout(const std::string& layout);
/// The first pair of `cpus` (in their order, side 0 first) that `t` relates as class `layout`
/// says; {-1, -1} when there is none.
std::pair<int, int> class_pair(const std::string& layout, const std::vector<int>& cpus, const topo::Topology& t);
/// Why `layout` cannot run on `cpus` (too few distinct CPUs), or "" when it can.
std::string placement_problem(const std::string& layout, const std::vector<int>& cpus);
int cpu_for_side(const std::string& layout, int side, const std::vector<int>& cpus);

}  // namespace ipclab
