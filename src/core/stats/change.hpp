#pragma once
// What moved between two runs of one benchmark: the ratio of their medians, its bootstrap
// interval, a Mann-Whitney U test over their repetitions, and the band of change the benchmark's
// own history shows without any change of code — the statistics `ipclab compare` uses
// (report/ipclab_report/compare.py), for the comparison a run makes with the last comparable one
// in the results store (core/store).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace ipclab {

/// Two-sided p of the Mann-Whitney U test of `a` against `b`, as scipy.stats.mannwhitneyu's
/// method "auto" gives it: exact when both have fewer than 8 values and none is tied, else the
/// normal approximation with the tie correction and the continuity correction. 1 when either is
/// empty or every value is equal.
double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b);
/// The smallest two-sided p an exact U test can give for these sizes: 2 / C(n1+n2, n1).
double min_mann_whitney_p(size_t n1, size_t n2);

/// The verdict on one benchmark between a base run and this one.
struct Change {
  /// "slower", "faster" (beyond the band and significant), "slower?" / "faster?" (beyond the band,
  /// too few repetitions for the test to say), or "no change" (within the band, or not significant).
  std::string verdict;
  std::string why;             // for "no change" and the "?" verdicts: what decided it
  double ratio = 0;            // median(now) / median(base) of the figure
  std::array<double, 2> ci{};  // its 95% bootstrap interval
  double p = 1;                // the U test's p (1 when it cannot be computed)
  double band = 0;             // the "no change" band's half-width, as a fraction (0.05: ±5%)
  std::string band_source;     // what set it: "threshold", "its history over N runs", "the runs' spread"
  bool regression() const { return verdict == "slower"; }
};

/// The band a benchmark's history allows: with `history` (the medians of its earlier runs in one
/// series, oldest first) of at least kHistoryMinRuns, 2.5 × the 75th percentile of the |ln ratio|
/// of consecutive runs (the class spread's rule in compare.py); else 3 × the wider of the two runs'
/// own spread (each a robust standard deviation of its repetitions' logarithms: 1.4826 × their
/// median absolute deviation). Never below `threshold`.
inline constexpr size_t kHistoryMinRuns = 5;

/// How far the machine itself moved between the two runs, as |ln ratio|, and what says so: the
/// farthest an anchor of the benchmark's placement class moved (plus the threshold), or the spread
/// of the class's other mechanisms' moves (compare.py's anchor drift and class spread) — a host
/// that moved the vCPUs between the runs moves every cross-CPU figure with them.
struct MachineMove {
  double log = 0;
  std::string source;
};

/// The class's machine move for one benchmark: `anchors` the ln ratios of the anchors of its
/// placement class (itself left out), `others` those of the class's other mechanisms.
MachineMove machine_move(const std::vector<std::pair<std::string, double>>& anchors,
                         const std::vector<double>& others, const std::string& placement,
                         double threshold = 0.05);

/// Judges `now` against `base` (the compared figure of each ok repetition; for `higher_better`
/// figures, such as a capacity, a lower `now` is "slower"), at `alpha` and a `threshold` (a
/// fraction) below which no change matters; `moved`: how far the machine moved (widens the band).
Change judge_change(const std::vector<double>& base, const std::vector<double>& now, bool higher_better,
                    const std::vector<double>& history, uint64_t seed, const MachineMove& moved = {},
                    double threshold = 0.05, double alpha = 0.05);

}  // namespace ipclab
