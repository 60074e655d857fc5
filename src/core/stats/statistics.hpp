#pragma once
// The statistics of a run: medians and quantiles of samples, and the aggregate record of a
// benchmark's repetitions.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/stats/record.hpp"

namespace ipclab {

/// Median of `v` (mean of the two middle values when even); 0 when empty.
double median_of(std::vector<double> v);
/// The value at quantile q in [0, 1] (nearest rank below; 0 for an empty vector).
double quantile_of(std::vector<double> v, double q);

/// A deterministic seed from a name (FNV-1a: std::hash differs between standard libraries).
uint64_t seed_of(const std::string& name);

/// Percentile bootstrap confidence intervals of the medians of `columns` (each the same length
/// n: one value per repetition): `resamples` draws of n rows with replacement (one draw of rows
/// serves every column), from std::mt19937_64 seeded with `seed`; each interval is the
/// (1-level)/2 and (1+level)/2 quantiles of the resampled medians.
std::vector<std::array<double, 2>> bootstrap_median_ci(const std::vector<std::vector<double>>& columns,
                                                       uint64_t seed, int resamples = 2000,
                                                       double level = 0.95);

/// Median aggregate over the iteration records of one benchmark: the median time per op (wall
/// and ops kept consistent with it), the median of every rate, per-op CPU and latency figure (the
/// latency's kind and histogram, and the placement, those of the repetition nearest the median
/// time per op), the integrity counts of all, and the
/// spread of the repetitions' time per op; with 3 ok repetitions or more, bootstrap 95%
/// confidence intervals (`ci`) of the median time per op, p50 and p99, seeded from the benchmark's
/// name; its `flags`: those of the repetitions' series, and `bimodal_repetitions` when 6 or more
/// repetitions' times per op split into two clusters (core/stats/series.hpp).
Record aggregate_median(const std::vector<Record>& reps);

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

/// Two clusters of values (rates) at least this far apart (20%) are two modes: `bimodal`.
inline constexpr double kClustersMinApart = 0.20;

/// The bimodal rule on a split of logarithms: the cluster medians more than kClustersMinApart
/// apart and the gap wider than three pooled standard deviations.
bool is_bimodal(const Split& s);

}  // namespace ipclab
