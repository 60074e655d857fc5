// What the antagonists did to each median (extra.inflation, core/plan/runner.hpp: add_inflation),
// as the console and results.md say it.
#include <fmt/format.h>

#include <cmath>

#include "core/output/output.hpp"

namespace ipclab::output {

namespace {

// "×1.29 [1.28, 1.30]" (no interval under 3 pairs); "" for a figure the pairs lack.
std::string factor(const nlohmann::json& f) {
  if (!f.is_object() || !f["ratio"].is_number()) return "";
  std::string s = fmt::format("×{:.3g}", f["ratio"].get<double>());
  if (f["ci"].is_array())
    s += fmt::format(" [{:.3g}, {:.3g}]", f["ci"][0].get<double>(), f["ci"][1].get<double>());
  return s;
}

}  // namespace

SinceText inflation_text(const std::vector<Record>& records, const TableNames& names) {
  SinceText out;
  for (auto& r : records) {
    if (r.run_type != "aggregate" || !r.extra.contains("inflation")) continue;
    const auto& inf = r.extra["inflation"];
    std::string what;
    for (auto [key, label] :
         {std::pair{"p50", "p50"}, {"p99", "p99"}, {"p999", "p99.9"}, {"time_per_op", "time/op"}})
      if (const std::string f = factor(inf[key]); !f.empty())
        what += fmt::format("{}{} {}", what.empty() ? "" : ", ", label, f);
    if (const auto& t = inf["throughput"]; t.is_object() && t["ratio"].is_number()) {
      const double lost = 100 * (1 - t["ratio"].get<double>());
      what += fmt::format("{}throughput {:+.1f}%", what.empty() ? "" : ", ", -lost);
      if (t["ci"].is_array())
        what += fmt::format(" [{:+.1f}%, {:+.1f}%]", 100 * (t["ci"][0].get<double>() - 1),
                            100 * (t["ci"][1].get<double>() - 1));
    }
    out.lines.push_back(fmt::format("{}: {} ({} pairs)", names.of(r.name), what, inf.value("pairs", 0)));
  }
  if (!out.lines.empty())
    out.heading =
        "What the noise did, each figure under the antagonists over the same quiet (the median of the ABBA "
        "pairs' "
        "ratios, its 95% interval from 3 pairs):";
  return out;
}

}  // namespace ipclab::output
