#pragma once
// Plan → run → aggregate. The runner expands every matching mechanism's grid, runs each point
// for the requested repetitions, and adds a median record per benchmark.
#include <functional>
#include <string>
#include <vector>

#include "core/mechanism.hpp"
#include "core/placement.hpp"
#include "core/record.hpp"
#include "core/session.hpp"

namespace ipclab {

struct PlannedBenchmark {
  const Mechanism* mech;
  Params params;
  std::string name;
};

/// Mechanisms whose `suite/name` matches any filter: a glob (`*`, `?`), or a prefix ending at a
/// `/` boundary, or a bare mechanism name. No filter = all. UsageError when a filter is empty, is
/// not printable UTF-8 (control characters, invalid bytes), or matches none.
std::vector<const Mechanism*> select_mechanisms(const std::vector<std::string>& filters);

/// The grid of every selected mechanism. Impossible points (a placement with more sides than
/// distinct `cpus`, or the mechanism's check) are dropped from preset grids, and are a UsageError
/// when the user asked for them with -p. UsageError for -p names no mechanism has, and when no
/// point is left.
std::vector<PlannedBenchmark> plan(const std::vector<const Mechanism*>& mechs, Preset preset,
                                   const Overrides& overrides,
                                   const std::vector<int>& cpus = allowed_cpus());

/// Runs one repetition of one benchmark; never throws for benchmark failures (they go into the
/// record), only for UsageError.
Record run_one(const PlannedBenchmark& b, const RunOptions& opts, int repetition);

/// Median of `v` (mean of the two middle values when even); 0 when empty.
double median_of(std::vector<double> v);
/// The value at quantile q in [0, 1] (nearest rank below; 0 for an empty vector).
double quantile_of(std::vector<double> v, double q);

/// Median aggregate over the iteration records of one benchmark.
Record aggregate_median(const std::vector<Record>& reps);

}  // namespace ipclab
