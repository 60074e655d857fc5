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

#include "core/stats/histogram.hpp"

namespace ipclab {

/// Two-sided p-value of the Mann-Kendall trend test of `y` against its order: S over every pair,
/// its variance corrected for ties, the normal approximation without continuity correction (as
/// scipy.stats.kendalltau(range(n), y, method="asymptotic")). 1 for fewer than 3 values.
double mann_kendall_p(const std::vector<double>& y);

/// Theil-Sen slope of `y` against its index: the median of the slopes of every pair (as
/// scipy.stats.theilslopes(y)[0]). 0 for fewer than 2 values.
double theil_sen_slope(const std::vector<double>& y);

/// The smallest changes the flags report: a trend of 10% of the median rate over the run
/// (`non_steady`); two clusters of slice rates kClustersMinApart apart (`bimodal`,
/// core/stats/statistics.hpp).
inline constexpr double kTrendMinChange = 0.10;

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
