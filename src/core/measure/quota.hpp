#pragma once
// The `quota` antagonist: the sides of a repetition run under a CPU quota — CFS bandwidth control,
// as a container's CPU limit is — in a cgroup of ipclab's own, so that throttling's effect on the
// tail is measured like any antagonist's (docs/methodology.md, "Noisy neighbours: quota").
//
// LEVEL is the quota in percent of one CPU per period: 50 lets the cgroup's tasks run 50 ms of every
// 100 ms period, together (every thread in it draws on one budget); 250 is two and a half CPUs.
// Its range is 1 (the kernel's least quota, 1 ms of a 100 ms period) to 100 × the CPUs this process
// may run on (a quota above that can never bind). The period is fixed at the kernel's default,
// 100 ms (QuotaSpec::kPeriodUs), not derived from the machine's tick or slice: it is the period
// every container runtime sets (docker --cpus, Kubernetes limits), so a point measures what a
// container with that limit sees — long stalls of up to (period − quota) once the budget is spent,
// which a period of a few ticks would cut into many short ones no deployment has.
//
// Which cgroup hierarchy: the one the cpu controller is in for this process, read from
// /proc/self/cgroup and /proc/self/mountinfo (mountinfo rather than /proc/mounts: it gives the
// mount's root, so a container's view of a subtree is placed right), never an assumed path —
//   v1 (cpu in a `cgroup` hierarchy): a child of this process's own cpu cgroup, its quota in
//      cpu.cfs_period_us and cpu.cfs_quota_us; the sides' threads go in by id (`tasks`), whole
//      processes by pid (`cgroup.procs`);
//   v2 (cpu in the unified `cgroup2` hierarchy): a child of the nearest cgroup at or above this
//      process's whose cgroup.subtree_control enables cpu, its quota in cpu.max. v2 moves threads
//      only within a threaded subtree, which ipclab does not make of a cgroup not its own: a side
//      that is a thread of ipclab puts the whole ipclab process in — its coordinator included (the
//      record says so: the quota entry of extra.antagonists, sides.whole_process).
// What is throttled is exactly the tasks moved in (its entry in extra.antagonists: sides), and whatever they
// start meanwhile; a process or thread of ipclab not among them is not.
//
// Lifetime: the cgroup is an object of the run's (core/ownership/journal.hpp: create_cgroup), made
// by start, removed by stop — every task moved back to the cgroup it came from, then rmdir — and
// on every other path by the ownership rules: the destructor (a failed point), the signal clean-up
// (SIGINT/SIGTERM/SIGHUP: its tasks moved to its parent, then removed), the run's end, and, for a
// run killed with SIGKILL, the next run's sweep, which removes the dead run's cgroup once it is
// empty and never moves a task out of it.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/measure/antagonist.hpp"

namespace ipclab {

/// What `--antagonist quota:LEVEL` asks.
struct QuotaSpec {
  static constexpr uint64_t kPeriodUs = 100'000;  // the kernel's default CFS period
  static constexpr double kMinPercent = 1;        // 1 ms per period: the least quota the kernel takes
  double percent = 0;                             // LEVEL: of one CPU per period
  uint64_t quota_us() const;
  /// "" when `percent` is a LEVEL this machine takes, else the one-line fix (1 to 100 × `cpus`,
  /// the CPUs this process may use).
  static std::string level_problem(double percent, int cpus);
};

/// Where the cpu controller's hierarchy is for this process.
struct CpuCgroup {
  int version = 0;         // 1 or 2; 0: none (why)
  std::string mount;       // where its file system is mounted
  std::string root;        // the cgroup the mount shows as its top ("/" unless a container's view)
  std::string own;         // this process's cgroup in it, as a folder under `mount`
  bool read_only = false;  // mounted read-only (a container's view)
  std::string why;         // "" when found
};
/// From the texts of /proc/self/cgroup and /proc/self/mountinfo: the v1 hierarchy that lists cpu,
/// else the unified one (whether cpu is enabled there is the files' to say: Quota::problem).
CpuCgroup find_cpu_cgroup(std::string_view proc_cgroup, std::string_view mountinfo);
/// The folder of the cgroup a /proc/<pid>/cgroup text (`proc_cgroup`) names in `where`'s hierarchy;
/// "" when it names none there, or one outside what the mount shows.
std::string cgroup_folder(const CpuCgroup& where, std::string_view proc_cgroup);

/// On v2, the cgroup the quota's cgroup is made in: the nearest at or above `own` (up to the
/// hierarchy's top, `mount`) whose cgroup.subtree_control enables cpu for its children; "" when
/// none does. `read(path)` gives a file's text ("" when it cannot be read).
std::string v2_parent(const std::string& own, const std::string& mount,
                      const std::function<std::string(const std::string&)>& read);

/// Throttling counts from a cgroup's cpu.stat: v1 gives throttled_time in ns, v2 throttled_usec.
struct CpuStat {
  bool ok = false;  // the file had nr_periods, nr_throttled and a throttled time
  uint64_t nr_periods = 0, nr_throttled = 0, throttled_us = 0;
};
CpuStat parse_cpu_stat(std::string_view text);

class Quota {
 public:
  /// The tasks that run under the quota: threads of this process (their ids, gettid()) and whole
  /// processes (their pids: every thread of each) — the sides' tasks (core/measure/antagonist.hpp).
  using Sides = SideTasks;

  /// "" when a quota can be set here, else why not and what would allow it (one line): no
  /// cgroup hierarchy with the cpu controller, cpu not enabled for children on v2, a read-only
  /// cgroup file system, not writable by this user, no CFS bandwidth control in the kernel.
  static std::string problem();

  /// Makes the cgroup (ipclab-<run id>-<n>), sets `spec`'s quota and moves `sides` in: from now on
  /// they are throttled. Skip with the reason (problem(), or the write the kernel refused) when it
  /// cannot; then nothing is left behind and no side has moved. Reads cpu.stat as the first mark.
  /// UsageError when `spec` fails QuotaSpec::level_problem (the caller checks it up front).
  Quota(const QuotaSpec& spec, const Sides& sides);
  /// stop(), its errors swallowed (said on stderr): the path of a failed point.
  ~Quota();
  Quota(const Quota&) = delete;
  Quota& operator=(const Quota&) = delete;

  /// The measured window opens (closes) now: cpu.stat's counts are taken here, and the record's are
  /// their differences. Without these calls, the whole of start to stop is the window.
  void open_window();
  void close_window();

  /// Moves every side back to the cgroup it came from and removes the cgroup. Returns what the quota entry of
  /// extra.antagonists holds: {cgroup_version, path, percent, quota_us, period_us, cpus_equiv, nr_periods,
  /// nr_throttled, throttled_us, sides: {threads, processes, whole_process}} (docs/json-schema.md). Throws
  /// std::runtime_error when the cgroup cannot be removed (it stays journaled for the run's end).
  nlohmann::json stop();

  /// The cgroup's folder.
  const std::string& path() const { return path_; }

 private:
  struct Moved {
    pid_t id;
    bool process;        // through cgroup.procs, else tasks
    std::string origin;  // the cgroup folder it came from
  };
  CpuStat read_stat() const;
  void move_back();

  QuotaSpec spec_;
  int version_ = 0;
  std::string path_;
  std::vector<Moved> moved_;
  bool whole_process_ = false;
  Sides sides_;
  CpuStat at_open_, at_close_;
  bool closed_ = false, stopped_ = false;
};

}  // namespace ipclab
