#pragma once
// Which CPUs this process and its threads run on: the affinity mask read, set and parsed. System
// calls only; where the sides of a benchmark go (placement classes, topology) is
// core/machine/placement.hpp, which builds on this.
#include <sched.h>

#include <string>
#include <vector>

namespace ipclab {

/// CPUs this process may run on (its affinity mask), ascending.
std::vector<int> allowed_cpus();
/// Parses a CPU list such as "0,1" or "0-3" (ascending ranges, each CPU once); UsageError for
/// anything else, and when a CPU is not allowed here.
std::vector<int> parse_cpu_list(const std::string& text);
/// `count` CPUs dealt round-robin from `cpus`, starting at its `first`-th (modulo its size): the
/// CPUs of a side that runs several pinned threads (a server's reactors, the echo client's
/// threads). -1 each when `cpus` is empty (unpinned).
std::vector<int> round_robin(const std::vector<int>& cpus, size_t first, size_t count);
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

}  // namespace ipclab
