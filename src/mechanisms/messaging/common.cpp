#include "mechanisms/messaging/common.hpp"

#include <immintrin.h>

#include <fmt/format.h>

#include <cerrno>
#include <fstream>
#include <mutex>
#include <set>
#include <system_error>

#include "core/measure/session.hpp"
#include "core/model/std_params.hpp"

namespace ipclab::messaging {

std::vector<ParamSpec> suite_params(std::vector<ParamSpec> extra) {
  // Quick: threads only (the quick preset is a few points); the full preset adds processes.
  auto mode = std_params::mode({"threads"}, {"threads", "processes"});
  // Quick: one CPU and two, side by side (what a wake-up on another CPU costs is the first thing
  // the headline table shows); full: cross-CPU. Unpinned on request (-p placement=unpinned).
  auto placement = std_params::placement({"same", "cross", "unpinned"}, {"same", "cross"});
  placement.full = {"cross"};
  std::vector<ParamSpec> v = {
      std_params::pattern(),
      std_params::size({"64"}, {"64", "256", "1024", "4096", "8192"}),
      {.name = "producers",
       .type = ParamType::Int,
       .def = "1",
       .help = "producers (throughput: all share one queue; roundtrip: pairs, = consumers); on more than 2 "
               "CPUs the presets scale it: 1, 2, 4 … CPUs/2",
       .full = {"1", "2", "4"},
       .min = 1,
       .max = 16,
       .per_cpu = 2},
      {.name = "consumers",
       .type = ParamType::Int,
       .def = "1",
       .help = "consumers (throughput: all share one queue; roundtrip: pairs, = producers)",
       .full = {"1", "2", "4"},
       .min = 1,
       .max = 16},
      mode,
      placement,
      std_params::latency_sample(),
      std_params::latency_reservoir(),
      std_params::random(),
  };
  for (auto& r : std_params::rate_params()) v.push_back(std::move(r));
  for (auto& e : extra) v.push_back(std::move(e));
  return v;
}

std::string check(const Caps& caps, const Params& p) {
  const bool roundtrip = std_params::is_roundtrip(p);
  const int64_t size = p.i64("size"), prod = p.i64("producers"), cons = p.i64("consumers");
  if (auto why = std_params::size_problem(p); !why.empty()) return why;
  if (std_params::is_rate(p) && p.i64_or("latency_reservoir", 0) > 0)
    return "latency_reservoir samples the throughput pattern's latencies; use latency_reservoir=0";
  if (size > caps.max_size)
    return fmt::format("size {} is over this mechanism's limit of {} ({}); use a smaller size", size,
                       caps.max_size, caps.size_limit_why);
  if (!caps.processes && p.str("mode") == "processes")
    return "an in-process queue cannot cross processes; use mode=threads";
  if (roundtrip) {
    if (p.i64_or("latency_reservoir", 0) > 0)
      return "latency_reservoir samples one-way latencies (the reference's); use pattern=throughput or "
             "latency_reservoir=0";
    if (prod != cons) return "roundtrip pairs one producer with one consumer; set producers = consumers";
    if (prod > 1 && !caps.pairs)
      return "this mechanism runs one round-trip pair; use producers=1 consumers=1";
    return "";
  }
  if ((prod > 1 || cons > 1) && !caps.shared_queue)
    return fmt::format("{}; use producers=1 consumers=1", caps.topology_why);
  if (prod > caps.max_producers)
    return fmt::format("at most {} producer(s) here; use producers={}", caps.max_producers,
                       caps.max_producers);
  if (cons > caps.max_consumers)
    return fmt::format("at most {} consumer(s) here; use consumers={}", caps.max_consumers,
                       caps.max_consumers);
  return "";
}

ParamSpec queue_depth(std::string def, std::string help, int64_t max) {
  return {.name = "queue_depth",
          .type = ParamType::Int,
          .def = std::move(def),
          .help = std::move(help),
          .min = 1,
          .max = max};
}

ParamSpec nonblocking() {
  return {.name = "nonblocking",
          .type = ParamType::Bool,
          .def = "0",
          .help = "non-blocking calls, busy-polling on EAGAIN (burns a CPU per waiting side)"};
}

ParamSpec wait_strategy(std::vector<std::string> quick) {
  return {.name = "wait",
          .type = ParamType::String,
          .def = "adaptive",
          .choices = {"spin", "spin_yield", "futex", "adaptive"},
          .help =
              "how a side waits for its peer: spin (pause), spin_yield (sched_yield), futex "
              "(sleep at once), adaptive (spin, then futex)",
          .quick = std::move(quick),
          .full = {"spin", "spin_yield", "futex", "adaptive"}};
}

void warn_once(const std::string& key, const std::string& text) {
  static std::mutex mu;
  static std::set<std::string> said;
  std::lock_guard lock(mu);
  if (said.insert(key).second) fmt::print(stderr, "warning: {}\n", text);
}

int64_t read_proc_int(const char* path, int64_t fallback) {
  std::ifstream in(path);
  int64_t v;
  return in >> v ? v : fallback;
}

}  // namespace ipclab::messaging
