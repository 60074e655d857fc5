#pragma once
// CPU time, context switches and page faults from getrusage: per thread, per process, or of reaped children.
#include <sys/resource.h>

#include <cstdint>

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

}  // namespace ipclab
