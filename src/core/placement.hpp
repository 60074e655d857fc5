#pragma once
#include <string>
#include <vector>

namespace ipclab {

/// CPUs this process may run on (its affinity mask), ascending.
std::vector<int> allowed_cpus();
/// Parses a CPU list such as "0,1" or "0-3"; UsageError when a CPU is not allowed here.
std::vector<int> parse_cpu_list(const std::string& text);
/// Pins the calling thread to `cpu` (no-op for -1); throws std::system_error on failure.
void pin_current_thread(int cpu);
/// CPU the calling thread runs on now.
int current_cpu();

/// Layouts of two sides: `same` (both on cpus[0]), `cross` (side 0 on cpus[0], side 1 on
/// cpus[1]), `unpinned` (the scheduler decides).
/// Returns the CPU for `side` (0 or 1) under `layout`, or -1 for unpinned.
int cpu_for_side(const std::string& layout, int side, const std::vector<int>& cpus);

}  // namespace ipclab
