#include "core/measure/kcounters.hpp"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "core/base/fdio.hpp"
#include "core/base/fs.hpp"
#include "core/machine/env.hpp"

namespace ipclab {

namespace {

constexpr const char* kSoftware[] = {"context_switches", "cpu_migrations", "page_faults", "syscalls"};

// Where tracefs shows the tracepoint's id: its own mount point, or under debugfs on older systems.
constexpr const char* kSysEnterId[] = {"/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
                                       "/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id"};

std::string paranoid_hint() {
  const std::string level = read_first_line("/proc/sys/kernel/perf_event_paranoid");
  return fmt::format(
      "kernel.perf_event_paranoid is {}: counting the kernel's part of a process needs 1 or lower "
      "(sysctl kernel.perf_event_paranoid=1) or CAP_PERFMON",
      level.empty() ? "unreadable" : level);
}

/// raw_syscalls:sys_enter's tracepoint id (the config of a PERF_TYPE_TRACEPOINT event), or -1
/// with the reason in `why`.
long sys_enter_id(std::string& why) {
  int last_errno = ENOENT;
  for (const char* path : kSysEnterId) {
    const int fd = ::open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      if (errno != ENOENT) last_errno = errno;
      continue;
    }
    const std::string text = read_from_start(fd, '\n');
    ::close(fd);
    char* end = nullptr;
    const long id = std::strtol(text.c_str(), &end, 10);
    if (end != text.c_str() && id >= 0) return id;
    why = fmt::format("{} holds no tracepoint id", path);
    return -1;
  }
  if (last_errno == ENOENT)
    why =
        "tracefs is not mounted (no raw_syscalls:sys_enter under /sys/kernel/tracing): "
        "mount -t tracefs nodev /sys/kernel/tracing";
  else
    why = fmt::format("{}: {}", kSysEnterId[0], std::strerror(last_errno));
  return -1;
}

/// One counter on the calling thread (pid 0, any CPU), counting from now on; -1 with the reason
/// in `why` when the kernel refuses it.
int open_counter(uint32_t type, uint64_t config, bool inherit, bool hardware, std::string& why) {
  perf_event_attr attr{};
  attr.size = sizeof attr;
  attr.type = type;
  attr.config = config;
  attr.inherit = inherit ? 1 : 0;
  attr.exclude_hv = 1;
  // Hardware counters can be multiplexed on a busy PMU: the times scale a count to its window.
  attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  const int fd = int(::syscall(SYS_perf_event_open, &attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd >= 0) return fd;
  const int e = errno;
  if (e == EACCES || e == EPERM)
    why = fmt::format("perf_event_open: {} ({})", std::strerror(e), paranoid_hint());
  else if (hardware && (e == ENOENT || e == EOPNOTSUPP || e == ENODEV))
    why = fmt::format("no hardware PMU (perf_event_open: {})", std::strerror(e));
  else
    why = fmt::format("perf_event_open: {}", std::strerror(e));
  return -1;
}

KernelCounters::Value read_value(int fd) {
  uint64_t v[3] = {};
  KernelCounters::Value out;
  if (fd < 0 || ::read(fd, v, sizeof v) != ssize_t(sizeof v)) return out;
  out.count = v[0];
  out.enabled = v[1];
  out.running = v[2];
  return out;
}

/// A counter's count between two readings, scaled up when it ran for part of the time only (a
/// multiplexed hardware counter; software counters always run).
double delta(const KernelCounters::Value& a, const KernelCounters::Value& b) {
  const double count = double(b.count - a.count);
  const uint64_t enabled = b.enabled - a.enabled, running = b.running - a.running;
  return running > 0 && running < enabled ? count * double(enabled) / double(running) : count;
}

}  // namespace

const char* KernelCounters::name(Counter c) {
  switch (c) {
    case kCycles:
      return "cycles";
    case kInstructions:
      return "instructions";
    default:
      return c >= 0 && c < kCycles ? kSoftware[c] : "?";
  }
}

KernelCounters::KernelCounters() {
  all_.fill(-1);
  own_.fill(-1);
  struct Spec {
    uint32_t type;
    uint64_t config;
  };
  std::array<Spec, kCount> spec{{{PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
                                 {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
                                 {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
                                 {PERF_TYPE_TRACEPOINT, 0},
                                 {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
                                 {PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS}}};
  const long id = sys_enter_id(why_[kSyscalls]);
  if (id < 0) spec[kSyscalls].type = UINT32_MAX;  // not opened: its reason is set
  spec[kSyscalls].config = uint64_t(id);
  for (int c = 0; c < kCount; ++c) {
    if (spec[c].type == UINT32_MAX) continue;
    const bool hardware = spec[c].type == PERF_TYPE_HARDWARE;
    all_[c] = open_counter(spec[c].type, spec[c].config, true, hardware, why_[c]);
    if (all_[c] < 0) continue;
    own_[c] = open_counter(spec[c].type, spec[c].config, false, hardware, why_[c]);
    if (own_[c] < 0) {  // without the coordinator's part the window's count would include it
      ::close(all_[c]);
      all_[c] = -1;
    }
  }
  // Cycles without instructions (or the reverse) give no IPC: both or neither.
  if (!available(kCycles) || !available(kInstructions)) {
    const std::string why = why_[kCycles].empty() ? why_[kInstructions] : why_[kCycles];
    for (Counter c : {kCycles, kInstructions}) {
      if (all_[c] >= 0) ::close(all_[c]);
      if (own_[c] >= 0) ::close(own_[c]);
      all_[c] = own_[c] = -1;
      why_[c] = why;
    }
  }
}

KernelCounters::~KernelCounters() {
  for (int c = 0; c < kCount; ++c) {
    if (all_[c] >= 0) ::close(all_[c]);
    if (own_[c] >= 0) ::close(own_[c]);
  }
}

KernelCounters::Reading KernelCounters::read(bool own) const {
  // Each counter's pair back to back, in the same order at every reading: the reads of one
  // reading that fall between a counter's `all` and `own` reads are the same at both ends of a
  // window, so they cancel out of the difference.
  Reading r;
  for (int c = 0; c < kCount; ++c) {
    if (all_[c] < 0) continue;
    r.all[c] = read_value(all_[c]);
    if (own) r.own[c] = read_value(own_[c]);
  }
  return r;
}

void KernelCounters::add_window(nlohmann::json& kernel, const Reading& a, const Reading& b, bool less_own,
                                const std::string& scope) const {
  if (!kernel.is_object()) kernel = nlohmann::json::object();
  nlohmann::json& totals = kernel["totals"];
  if (!totals.is_object()) totals = nlohmann::json::object();
  nlohmann::json unavailable = nlohmann::json::object();
  for (int c = 0; c < kCount; ++c) {
    const char* key = name(Counter(c));
    if (!available(Counter(c))) {
      if (c < kCycles) unavailable[key] = why_[c];
      continue;
    }
    double n = delta(a.all[c], b.all[c]);
    if (less_own) n -= delta(a.own[c], b.own[c]);
    // Whole events: a scaled hardware count is an estimate, and the coordinator's part can exceed
    // the rest by an event read in between (never below zero).
    totals[key] = totals.value(key, uint64_t(0)) + uint64_t(std::max(0.0, std::round(n)));
  }
  kernel["scope"] = scope;
  if (!unavailable.empty()) kernel["unavailable"] = unavailable;
  if (!available(kCycles)) kernel["hardware_unavailable"] = why_[kCycles];
}

void finish_kernel(nlohmann::json& kernel, uint64_t ops) {
  if (!kernel.is_object() || !kernel.contains("totals")) return;
  nlohmann::json& totals = kernel["totals"];
  nlohmann::json per_op = nlohmann::json::object();
  for (const char* key : kSoftware)
    if (totals.contains(key) && ops) per_op[key] = totals[key].get<double>() / double(ops);
  kernel["per_op"] = per_op;
  // The hardware figures are given per op only: totals holds the software counters.
  if (totals.contains("cycles") && totals.contains("instructions")) {
    const double cycles = totals["cycles"].get<double>(), instructions = totals["instructions"].get<double>();
    if (ops)
      kernel["hardware"] = {
          {"cycles", cycles / double(ops)},
          {"instructions", instructions / double(ops)},
          {"ipc", cycles > 0 ? nlohmann::json(instructions / cycles) : nlohmann::json(nullptr)}};
    totals.erase("cycles");
    totals.erase("instructions");
  }
}

}  // namespace ipclab
