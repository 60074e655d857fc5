#pragma once
// The shortest measured window this machine can time and schedule fairly: a figure from a shorter
// window is flagged `short_window` (core/stats/record.hpp) and never ranked.
#include <string>

#include <nlohmann/json.hpp>

namespace ipclab {

/// The floor and what it is made of, read once per process. The larger of two bounds:
/// - the timer's: the window's two clock reads and the clock's resolution are under 0.1% of it,
///   1000 × (2 × clock_read_ns + CLOCK_MONOTONIC's resolution);
/// - the scheduler's: the window holds kQuanta scheduler quanta, so that one preemption — a
///   quantum given to other work — moves it by at most 1/kQuanta. A quantum is the longer of the
///   tick (CLOCK_MONOTONIC_COARSE's resolution, 1/HZ) and the scheduler's slice
///   (sched_min_granularity_ns, or EEVDF's base_slice_ns, where the kernel shows it).
struct WindowFloor {
  static constexpr double kQuanta = 5;
  double floor_s = 0;
  double clock_read_ns = 0, clock_resolution_ns = 0, tick_s = 0;
  double slice_s = 0;        // 0: the kernel does not show it here (then the tick stands alone)
  std::string slice_source;  // the file it was read from ("" when none)
  double timer_floor_s() const;
  double scheduler_floor_s() const;
};
const WindowFloor& window_floor();
/// The run context's `window_floor`: the floor, its parts, and the rule, in words.
nlohmann::json to_json(const WindowFloor& f);

}  // namespace ipclab
