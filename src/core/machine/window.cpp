#include "core/machine/window.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>

#include "core/base/clock.hpp"
#include "core/base/fs.hpp"

namespace ipclab {

namespace {

double resolution_s(clockid_t id) {
  timespec ts{};
  if (clock_getres(id, &ts) != 0) return 0;
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

}  // namespace

double WindowFloor::timer_floor_s() const { return 1000 * (2 * clock_read_ns + clock_resolution_ns) * 1e-9; }
double WindowFloor::scheduler_floor_s() const { return kQuanta * std::max(tick_s, slice_s); }

const WindowFloor& window_floor() {
  static const WindowFloor floor = [] {
    WindowFloor f;
    f.clock_read_ns = clock_read_ns();
    f.clock_resolution_ns = resolution_s(CLOCK_MONOTONIC) * 1e9;
    f.tick_s = resolution_s(CLOCK_MONOTONIC_COARSE);
    for (const char* path :
         {"/proc/sys/kernel/sched_min_granularity_ns", "/sys/kernel/debug/sched/min_granularity_ns",
          "/sys/kernel/debug/sched/base_slice_ns"}) {
      const std::string line = read_first_line(path);
      char* end = nullptr;
      const double ns = line.empty() ? 0 : std::strtod(line.c_str(), &end);
      if (ns > 0) {
        f.slice_s = ns * 1e-9;
        f.slice_source = path;
        break;
      }
    }
    f.floor_s = std::max(f.timer_floor_s(), f.scheduler_floor_s());
    return f;
  }();
  return floor;
}

nlohmann::json to_json(const WindowFloor& f) {
  return {
      {"floor_s", f.floor_s},
      {"timer_floor_s", f.timer_floor_s()},
      {"scheduler_floor_s", f.scheduler_floor_s()},
      {"clock_read_ns", f.clock_read_ns},
      {"clock_resolution_ns", f.clock_resolution_ns},
      {"tick_s", f.tick_s},
      {"slice_s", f.slice_s > 0 ? nlohmann::json(f.slice_s) : nlohmann::json(nullptr)},
      {"slice_source", f.slice_source.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.slice_source)},
      {"rule", fmt::format("the longer of 1000 x (two clock reads + the clock's resolution) and {:g} "
                           "scheduler quanta (the longer of the tick and the scheduler's slice): a "
                           "record whose measured window is shorter is flagged short_window and not ranked",
                           WindowFloor::kQuanta)}};
}

}  // namespace ipclab
