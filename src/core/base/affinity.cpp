#include "core/base/affinity.hpp"

#include <sched.h>

#include <fmt/format.h>

#include <algorithm>
#include <system_error>

#include "core/base/error.hpp"
#include "core/base/params.hpp"

namespace ipclab {

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return {0};
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}

std::vector<int> parse_cpu_list(const std::string& text) {
  auto allowed = allowed_cpus();
  auto is_allowed = [&](int64_t c) { return std::find(allowed.begin(), allowed.end(), c) != allowed.end(); };
  std::string have;
  for (int c : allowed) have += (have.empty() ? "" : ",") + std::to_string(c);
  if (text.empty())
    throw UsageError(
        fmt::format("--cpus is empty: list CPUs like 0,1 or 0-3 from {}, or leave --cpus out", have));
  // Every number is checked against the allowed set before a range is expanded, so a range
  // is at most CPU_SETSIZE long whatever the text says.
  auto cpu = [&](std::string_view num) {
    auto v = parse_integer(num);
    if (!v)
      throw UsageError(fmt::format("--cpus '{}': '{}' is not a CPU number; write a list like 0,1 or 0-3",
                                   brief(text), brief(num)));
    if (*v < 0 || *v >= CPU_SETSIZE || !is_allowed(*v))
      throw UsageError(fmt::format("--cpus '{}': CPU {} is not available here; choose from {}", brief(text),
                                   brief(num), have));
    return int(*v);
  };
  std::vector<int> out;
  for (size_t pos = 0; pos <= text.size();) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view part = std::string_view(text).substr(pos, comma - pos);
    pos = comma + 1;
    if (part.empty())
      throw UsageError(fmt::format("--cpus '{}': empty element; write a list like 0,1 or 0-3", brief(text)));
    const size_t dash = part.find('-', 1);  // a leading '-' is a sign, which cpu() refuses
    const int lo = cpu(part.substr(0, dash));
    int hi = lo;
    if (dash != std::string_view::npos) {
      hi = cpu(part.substr(dash + 1));
      if (hi < lo)
        throw UsageError(
            fmt::format("--cpus '{}': range {} is reversed; write {}-{}", brief(text), brief(part), hi, lo));
    }
    for (int c = lo; c <= hi; ++c) {
      if (!is_allowed(c))
        throw UsageError(
            fmt::format("--cpus '{}': CPU {} is not available here; choose from {}", brief(text), c, have));
      if (std::find(out.begin(), out.end(), c) != out.end())
        throw UsageError(
            fmt::format("--cpus '{}': CPU {} is listed twice; list each CPU once", brief(text), c));
      out.push_back(c);
    }
  }
  return out;
}

bool set_affinity(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

std::vector<int> round_robin(const std::vector<int>& cpus, size_t first, size_t count) {
  std::vector<int> out;
  for (size_t i = 0; i < count; ++i) out.push_back(cpus.empty() ? -1 : cpus[(first + i) % cpus.size()]);
  return out;
}

void pin_current_thread(int cpu) {
  if (cpu >= 0 && !set_affinity(cpu))
    throw std::system_error(errno, std::generic_category(), fmt::format("pin to CPU {}", cpu));
}

int current_cpu() { return sched_getcpu(); }

ScopedPin::ScopedPin(int cpu) {
  if (cpu < 0) return;
  CPU_ZERO(&old_);
  saved_ = sched_getaffinity(0, sizeof old_, &old_) == 0;
  set_affinity(cpu);
}

ScopedPin::~ScopedPin() {
  if (saved_) sched_setaffinity(0, sizeof old_, &old_);
}

}  // namespace ipclab
