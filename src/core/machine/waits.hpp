#pragma once
// Waits calibrated in time. A wait that spins before it sleeps (adaptive) is worth its spinning
// only while the side it waits for runs on another CPU and answers sooner than a sleep and a
// wake-up would take. A budget counted in pause iterations is a different time on every CPU (a
// pause costs ~20 ns on one Xeon VM, ~29 ns on an AMD EPYC VM, ~40 ns on Skylake-SP and later),
// so the budget is a time — what a futex sleep and wake-up between two CPUs costs on this machine,
// measured once per process — turned into pause iterations by the measured cost of one pause.
// Two sides on one CPU never spin: the peer cannot run until the spinner gives the CPU up. Such a
// wait yields instead (handing the CPU to the peer, which usually answers at once) for as long as
// a sleep and a wake-up on one CPU cost, then sleeps.
#include <cstdint>

#include <nlohmann/json.hpp>

namespace ipclab::waits {

/// The measured costs, each once per process (the first call takes a few milliseconds on a
/// machine whose cross-CPU wake-up costs tens of µs; later calls are free).
struct Costs {
  double pause_ns = 0;       // one pause instruction (the minimum of repeated timings)
  double wake_cross_ns = 0;  // one futex hand-over between two threads on two CPUs (median); 0: one CPU
  double wake_same_ns = 0;   // the same with both threads on one CPU
  int cpus[2] = {-1, -1};    // the CPUs the hand-overs ran on
};
const Costs& costs();

/// What an adaptive wait does before it sleeps.
struct Budget {
  uint32_t spins = 0;     // pause iterations while the peer runs on another CPU (wake_cross_ns)
  uint64_t yield_ns = 0;  // how long to yield while the peer shares this CPU (wake_same_ns)
  bool same_cpu = false;  // the sides are pinned to one CPU, or only one CPU is allowed
};

/// The budget for a run whose sides are pinned to one CPU (`pinned_same`); a process allowed a
/// single CPU counts as that too.
Budget adaptive(bool pinned_same);

/// The budget and the costs it came from, for the record (`extra.wait_budget`).
nlohmann::json to_json(const Budget& b);

}  // namespace ipclab::waits
