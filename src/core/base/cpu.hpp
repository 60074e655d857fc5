#pragma once
// CPU time, context switches and page faults from getrusage: per thread, per process, or of reaped
// children. And steal time from /proc/stat: the time a hypervisor ran something else while a vCPU
// had work.
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace ipclab {

struct CpuUsage {
  double user_s = 0, sys_s = 0;
  int64_t ctx_vol = 0, ctx_invol = 0;
  int64_t faults = 0;  // page faults, minor and major (a first touch of a page, a mapping's fill)

  /// User and system time together.
  double total_s() const { return user_s + sys_s; }

  CpuUsage& operator+=(const CpuUsage& o) {
    user_s += o.user_s;
    sys_s += o.sys_s;
    ctx_vol += o.ctx_vol;
    ctx_invol += o.ctx_invol;
    faults += o.faults;
    return *this;
  }
  friend CpuUsage operator+(CpuUsage a, const CpuUsage& b) { return a += b; }
  friend CpuUsage operator-(CpuUsage a, const CpuUsage& b) {
    a.user_s -= b.user_s;
    a.sys_s -= b.sys_s;
    a.ctx_vol -= b.ctx_vol;
    a.ctx_invol -= b.ctx_invol;
    a.faults -= b.faults;
    return a;
  }
};

/// The CPU figures of an rusage (getrusage's, or wait4's for a reaped child).
inline CpuUsage usage_of(const rusage& ru) {
  CpuUsage u;
  u.user_s = double(ru.ru_utime.tv_sec) + double(ru.ru_utime.tv_usec) * 1e-6;
  u.sys_s = double(ru.ru_stime.tv_sec) + double(ru.ru_stime.tv_usec) * 1e-6;
  u.ctx_vol = ru.ru_nvcsw;
  u.ctx_invol = ru.ru_nivcsw;
  u.faults = ru.ru_minflt + ru.ru_majflt;
  return u;
}

/// who: RUSAGE_THREAD (calling thread), RUSAGE_SELF (all threads) or RUSAGE_CHILDREN (reaped).
inline CpuUsage cpu_usage(int who) {
  rusage ru{};
  getrusage(who, &ru);
  return usage_of(ru);
}

/// A task's scheduler statistics (/proc/.../schedstat): nanoseconds on a CPU, and nanoseconds
/// waited on a run queue — runnable, not running: preempted, or woken and not yet run.
struct SchedStat {
  uint64_t on_cpu_ns = 0, wait_ns = 0;
  SchedStat& operator+=(const SchedStat& o) {
    on_cpu_ns += o.on_cpu_ns;
    wait_ns += o.wait_ns;
    return *this;
  }
};
/// One schedstat file's figures; nullopt where it cannot be read (a kernel without
/// CONFIG_SCHED_INFO has none).
std::optional<SchedStat> read_schedstat(const char* path);
/// Every thread of process `pid` (0: this one) together (/proc/PID/task/*/schedstat); nullopt when
/// none could be read.
std::optional<SchedStat> process_schedstat(int pid = 0);
/// The calling thread's (/proc/thread-self/schedstat).
inline std::optional<SchedStat> thread_schedstat() { return read_schedstat("/proc/thread-self/schedstat"); }

/// One reading of /proc/stat's `cpu` lines: of each, the steal figure (the 8th, in USER_HZ ticks,
/// sysconf(_SC_CLK_TCK)) and the busy time (user, nice, system, irq, softirq and steal; idle and
/// iowait left out).
struct StealReading {
  struct Line {
    std::optional<uint64_t> steal;  // none on a kernel without the figure (before 2.6.11)
    uint64_t busy = 0;
    uint64_t irq = 0, softirq = 0;  // time in hard and soft interrupts (0 without IRQ time accounting
                                    // for irq: its ticks are then the interrupted task's)
  };
  std::optional<Line> all;               // the `cpu` line: every CPU together
  std::vector<std::optional<Line>> cpu;  // [N]: the `cpuN` line; none where it is missing (offline)
};

/// Reads the `cpu` lines of /proc/stat's text; other lines and lines it cannot read are skipped.
StealReading parse_steal(std::string_view proc_stat);
/// /proc/stat now (empty when it cannot be read).
StealReading read_steal();
/// Seconds per USER_HZ tick, the unit of /proc/stat.
double tick_s();

/// The steal of a record's measured windows, over the CPUs its sides were placed on
/// (docs/methodology.md, "Steal time").
struct Steal {
  double steal_s = 0;       // steal of the CPUs read, summed over the windows
  double irq_s = 0;         // hard-interrupt time of the CPUs read, summed over the windows
  double softirq_s = 0;     // soft-interrupt time (network receive, timers, RCU ...), likewise
  double capacity_s = 0;    // each window's wall time x the CPUs read, summed
  double resolution_s = 0;  // a tick per CPU read per window: the most the tick counts overstate
  std::vector<int> cpus;    // the CPUs read (the last window's)

  /// The part of the windows' CPU time the hypervisor took, in [0, 1] (a window shorter than a
  /// tick can count more than itself).
  double share() const { return capacity_s > 0 ? std::clamp(steal_s / capacity_s, 0.0, 1.0) : 0.0; }
  /// The least share the tick counts allow: share() less the counts' rounding.
  double least_share() const {
    return capacity_s > 0 ? std::clamp((steal_s - resolution_s) / capacity_s, 0.0, 1.0) : 0.0;
  }
  Steal& operator+=(const Steal& o) {
    steal_s += o.steal_s;
    irq_s += o.irq_s;
    softirq_s += o.softirq_s;
    capacity_s += o.capacity_s;
    resolution_s += o.resolution_s;
    cpus = o.cpus;
    return *this;
  }
};

/// The steal of `cpus` over one window of `wall_s` seconds between readings `a` and `b`. A CPU
/// whose count went back (a wrap, a CPU taken offline and back) counts 0, never less. None when a
/// CPU has no steal figure in either reading (offline, an old kernel, /proc unreadable) or `cpus`
/// is empty.
std::optional<Steal> steal_between(const StealReading& a, const StealReading& b, const std::vector<int>& cpus,
                                   double wall_s);

}  // namespace ipclab
