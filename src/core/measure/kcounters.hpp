#pragma once
// Kernel counters of a benchmark: context switches, CPU migrations, page faults and system calls
// (perf_event_open(2) software events and the raw_syscalls:sys_enter tracepoint), and cycles and
// instructions where the machine has a PMU. They explain most of what an IPC operation costs.
//
// Scope: the counters are opened on the coordinator's thread with `inherit` before the benchmark
// creates any thread or child (run_one), so every thread and process it creates afterwards —
// workers, forked workers, peers, exec'd children — inherits them. Reading an inherited counter
// gives the coordinator's count plus every inheritor's, live or exited (the kernel folds an
// exited child's count into its parent's), so the counts of a window are the differences of two
// readings. A second set without `inherit`, read at the same instants, is the coordinator's own
// part (its polls and sleeps), taken out for windows whose work runs on other threads.
#include <array>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace ipclab {

class KernelCounters {
 public:
  // Software first, then hardware (cycles, instructions): the order of Reading's arrays.
  enum Counter : int {
    kContextSwitches,
    kCpuMigrations,
    kPageFaults,
    kSyscalls,
    kCycles,
    kInstructions,
    kCount
  };
  static const char* name(Counter c);

  struct Value {
    uint64_t count = 0, enabled = 0, running = 0;  // read_format TOTAL_TIME_ENABLED|RUNNING
  };
  /// Every counter's value at one instant: of the coordinator and its inheritors (`all`), and of
  /// the coordinator's thread alone (`own`).
  struct Reading {
    std::array<Value, kCount> all{}, own{};
  };

  /// Opens the counters on the calling thread (see the file's comment). One that cannot be opened
  /// is left out with its reason (unavailable()); the run goes on without it.
  KernelCounters();
  ~KernelCounters();
  KernelCounters(const KernelCounters&) = delete;
  KernelCounters& operator=(const KernelCounters&) = delete;

  /// Reads every open counter; call on the thread that opened them. `own` false: the coordinator's
  /// set is not read (a window whose body runs on the coordinator itself).
  Reading read(bool own = true) const;

  /// Adds the counts between readings `a` and `b` to `kernel` (a record's, see Record::kernel):
  /// its totals, its scope, the counters that were not available and why. `less_own`: the
  /// coordinator's own counts are taken out (its work is not the benchmark's).
  void add_window(nlohmann::json& kernel, const Reading& a, const Reading& b, bool less_own,
                  const std::string& scope) const;

  bool available(Counter c) const { return all_[c] >= 0; }
  /// Why counter `c` could not be opened ("" when it was).
  const std::string& unavailable(Counter c) const { return why_[c]; }

 private:
  std::array<int, kCount> all_, own_;
  std::array<std::string, kCount> why_;
};

/// Fills kernel.per_op (and kernel.hardware's figures per op) from kernel.totals over `ops`, once
/// the workload has counted its operations; nothing when `kernel` holds no window.
void finish_kernel(nlohmann::json& kernel, uint64_t ops);

}  // namespace ipclab
