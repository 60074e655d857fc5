#pragma once
// The statistics of a run: medians and quantiles of samples, and the aggregate record of a
// benchmark's repetitions.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/record.hpp"

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
/// and ops kept consistent with it), the median of every rate and per-op CPU figure, the latency
/// and placement of the repetition nearest that median, the integrity counts of all, and the
/// spread of the repetitions' time per op; with 3 ok repetitions or more, bootstrap 95%
/// confidence intervals (`ci`) of the median time per op, p50 and p99, seeded from the benchmark's
/// name; its `flags`: those of the repetitions' series, and `bimodal_repetitions` when 6 or more
/// repetitions' times per op split into two clusters (core/series.hpp).
Record aggregate_median(const std::vector<Record>& reps);

}  // namespace ipclab
