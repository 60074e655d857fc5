#include "core/placement.hpp"

#include <sched.h>

#include <fmt/format.h>

#include <algorithm>
#include <system_error>

#include "core/error.hpp"

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
  std::vector<int> out;
  auto allowed = allowed_cpus();
  size_t pos = 0;
  auto bad = [&] {
    return UsageError(fmt::format("--cpus '{}': write a list like 0,1 or 0-3", text));
  };
  while (pos < text.size()) {
    auto comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string part = text.substr(pos, comma - pos);
    auto dash = part.find('-');
    try {
      size_t used = 0;
      int lo = std::stoi(part.substr(0, dash), &used);
      if (used != (dash == std::string::npos ? part.size() : dash)) throw bad();
      int hi = lo;
      if (dash != std::string::npos) {
        hi = std::stoi(part.substr(dash + 1), &used);
        if (used != part.size() - dash - 1) throw bad();
      }
      if (lo < 0 || hi < lo) throw bad();
      for (int c = lo; c <= hi; ++c) out.push_back(c);
    } catch (const UsageError&) {
      throw;
    } catch (...) {
      throw bad();
    }
    pos = comma + 1;
  }
  if (out.empty()) throw bad();
  std::string have;
  for (int c : allowed) have += (have.empty() ? "" : ",") + std::to_string(c);
  for (int c : out)
    if (std::find(allowed.begin(), allowed.end(), c) == allowed.end())
      throw UsageError(fmt::format("--cpus: CPU {} is not available here; choose from {}", c, have));
  return out;
}

void pin_current_thread(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    throw std::system_error(errno, std::generic_category(), fmt::format("pin to CPU {}", cpu));
}

int current_cpu() { return sched_getcpu(); }

int cpu_for_side(const std::string& layout, int side, const std::vector<int>& cpus) {
  if (layout == "unpinned" || cpus.empty()) return -1;
  if (layout == "same") return cpus[0];
  if (layout == "cross") {
    if (cpus.size() < 2)
      throw UsageError("placement cross needs two CPUs; give --cpus with two CPUs, e.g. --cpus 0,1");
    return cpus[side == 0 ? 0 : 1];
  }
  throw UsageError(fmt::format("unknown placement '{}'; use same, cross or unpinned", layout));
}

}  // namespace ipclab
