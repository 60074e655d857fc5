// What moved since the last comparable run, as the console and summary.md say it: from the
// `extra.since` the results store set on each benchmark's summary record (core/store/store.hpp).
#include <fmt/format.h>

#include <map>

#include "core/output/output.hpp"

namespace ipclab::output {

namespace {

std::string figure_text(const std::string& metric, double v) {
  return metric == "capacity" ? human_rate(v) : human_ns(v);
}

std::string pct(double ratio) { return fmt::format("{:+.1f}%", (ratio - 1) * 100); }

std::string base_text(const nlohmann::json& b) {
  std::string date = b.value("date", "");
  if (date.size() >= 16) date = date.substr(0, 10) + " " + date.substr(11, 5) + " UTC";
  std::string commit = b.value("git_sha", "");
  if (commit.empty()) commit = "no commit";
  return fmt::format("{}, {}, {}", date, commit, b.value("kernel", ""));
}

}  // namespace

SinceText since_text(const std::vector<Record>& records, const TableNames& names) {
  SinceText out;
  std::vector<const Record*> judged;
  for (auto& r : records)
    if (r.extra.contains("since")) judged.push_back(&r);
  if (judged.empty()) return out;
  std::map<std::string, int> bases;
  for (auto* r : judged) ++bases[r->extra["since"]["base"].value("run_id", "")];
  const bool one_base = bases.size() == 1;
  out.heading = one_base ? fmt::format("Since the last comparable run in the store ({}):",
                                       base_text(judged.front()->extra["since"]["base"]))
                         : "Since each benchmark's last comparable run in the store:";
  size_t same = 0;
  for (auto* r : judged) {
    const nlohmann::json& s = r->extra["since"];
    const std::string verdict = s.value("verdict", "");
    if (verdict == "no change") {
      ++same;
      continue;
    }
    const std::string metric = s.value("metric", "time/op");
    const auto ci = s.value("ci", std::vector<double>{0, 0});
    std::string line =
        fmt::format("{}: {} {} [{}, {}], {} → {}", verdict, metric, pct(s.value("ratio", 1.0)), pct(ci.at(0)),
                    pct(ci.at(1)), figure_text(metric, s["base"].value("median", 0.0)),
                    figure_text(metric, s.value("median", 0.0)));
    line += verdict.back() == '?'
                ? fmt::format(" ({})", s.value("why", ""))
                : fmt::format(" (p {:.2g}; no change within ±{:.1f}%, {})", s.value("p", 1.0),
                              s.value("band", 0.0) * 100, s.value("band_source", ""));
    if (!one_base) line += " since " + base_text(s["base"]);
    out.lines.push_back(names.of(r->name) + "  " + line);
  }
  if (same)
    out.lines.push_back(fmt::format("{} of {} benchmark{}: no change beyond {} noise band", same,
                                    judged.size(), judged.size() == 1 ? "" : "s",
                                    same == 1 ? "its" : "their"));
  return out;
}

}  // namespace ipclab::output
