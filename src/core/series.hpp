#pragma once
// The time series of one repetition (the record's `series`): the measured window cut into equal
// slices, each with its ops, rate and latency quantiles, and the two flags read from them —
// `non_steady` (a trend across the slices) and `bimodal` (the slices fall into two clusters).
//
// The tests are written here: Debian bookworm has no C++ statistics library that offers the
// Mann-Kendall test or the Theil-Sen estimator (GSL has neither, Boost.Math only the
// distributions), and each is a few lines over at most a few dozen values.
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/histogram.hpp"

namespace ipclab {

/// Two-sided p-value of the Mann-Kendall trend test of `y` against its order: S over every pair,
/// its variance corrected for ties, the normal approximation without continuity correction (as
/// scipy.stats.kendalltau(range(n), y, method="asymptotic")). 1 for fewer than 3 values.
double mann_kendall_p(const std::vector<double>& y);

/// Theil-Sen slope of `y` against its index: the median of the slopes of every pair (as
/// scipy.stats.theilslopes(y)[0]). 0 for fewer than 2 values.
double theil_sen_slope(const std::vector<double>& y);

/// The best split of `v` into a low and a high cluster: of the cuts of the sorted values that
/// leave at least `min_side` on each side, the one with the least sum of squares within the two
/// (one-dimensional 2-means, exact). `found` false when there are fewer than 2*min_side values.
struct Split {
  bool found = false;
  size_t low_n = 0, high_n = 0;
  double low_median = 0, high_median = 0;
  double gap = 0;        // lowest high value less the highest low value
  double pooled_sd = 0;  // within the two clusters, n-2 degrees of freedom
};
Split best_split(std::vector<double> v, size_t min_side = 3);

/// The smallest changes the flags report: a trend of 10% of the median rate over the run
/// (`non_steady`), two clusters of slice rates 20% apart (`bimodal`).
inline constexpr double kTrendMinChange = 0.10;
inline constexpr double kClustersMinApart = 0.20;

/// The bimodal rule on a split of logarithms: the cluster medians more than kClustersMinApart
/// apart and the gap wider than three pooled standard deviations.
bool is_bimodal(const Split& s);

/// The operations the median slice must hold for the flags to be judged: a slice's rate is its
/// whole count of ops over its length, known to one op in that count, so with fewer than
/// 1 / (the smallest change a flag reports) = 10 ops one op more or fewer is such a change by
/// itself, and a run of 0-1 ops per slice would be "bimodal" from counting alone.
uint64_t min_ops_per_slice();
double median_ops_per_slice(const std::vector<uint64_t>& ops);

/// The `series` of a record from the slice boundaries `t_ns` (slices + 1 values from 0, relative
/// to the window's start), each slice's ops and latencies (`lat` empty: no latency measured).
nlohmann::json make_series(const std::vector<uint64_t>& t_ns, const std::vector<uint64_t>& ops,
                           const std::vector<CoarseHistogram>& lat);

}  // namespace ipclab
