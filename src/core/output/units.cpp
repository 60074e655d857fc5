// Human-readable times and rates, three significant digits.
#include <cmath>

#include "core/output/output.hpp"

#include <fmt/format.h>

namespace ipclab::output {

std::string human_ns(double ns) {
  if (!std::isfinite(ns) || ns <= 0) return "-";
  const char* unit = "ns";
  double v = ns;
  if (v >= 1e9) {
    v /= 1e9;
    unit = "s";
  } else if (v >= 1e6) {
    v /= 1e6;
    unit = "ms";
  } else if (v >= 1e3) {
    v /= 1e3;
    unit = "us";
  }
  int decimals = v >= 100 ? 0 : v >= 10 ? 1 : 2;
  return fmt::format("{:.{}f} {}", v, decimals, unit);
}

std::string human_rate(double r) {
  if (!std::isfinite(r) || r <= 0) return "-";
  const char* unit = "";
  if (r >= 1e9) {
    r /= 1e9;
    unit = "G";
  } else if (r >= 1e6) {
    r /= 1e6;
    unit = "M";
  } else if (r >= 1e3) {
    r /= 1e3;
    unit = "k";
  }
  int decimals = r >= 100 ? 0 : r >= 10 ? 1 : 2;
  return fmt::format("{:.{}f}{}/s", r, decimals, unit);
}

}  // namespace ipclab::output
