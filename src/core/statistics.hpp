#pragma once
// The statistics of a run: medians and quantiles of samples, and the aggregate record of a
// benchmark's repetitions.
#include <vector>

#include "core/record.hpp"

namespace ipclab {

/// Median of `v` (mean of the two middle values when even); 0 when empty.
double median_of(std::vector<double> v);
/// The value at quantile q in [0, 1] (nearest rank below; 0 for an empty vector).
double quantile_of(std::vector<double> v, double q);

/// Median aggregate over the iteration records of one benchmark: the median time per op (wall
/// and ops kept consistent with it), the median of every rate and per-op CPU figure, the latency
/// and placement of the repetition nearest that median, the integrity counts of all, and the
/// spread of the repetitions' time per op.
Record aggregate_median(const std::vector<Record>& reps);

}  // namespace ipclab
