#pragma once
// Plan → run → aggregate. The runner expands every matching mechanism's grid, runs each point
// for the requested repetitions (back to back, or interleaved across benchmarks in a seeded random
// order), and adds a median record per benchmark.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/machine/placement.hpp"
#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"
#include "core/model/planned.hpp"
#include "core/stats/record.hpp"

namespace ipclab {

/// Mechanisms whose `suite/name` matches any filter: a glob (`*`, `?`), or a prefix ending at a
/// `/` boundary, or a bare mechanism name. No filter = all. UsageError when a filter is empty, is
/// not printable UTF-8 (control characters, invalid bytes), or matches none.
std::vector<const Mechanism*> select_mechanisms(const std::vector<std::string>& filters);

/// The grid of every selected mechanism. Impossible points (a placement with more sides than
/// distinct `cpus`, or the mechanism's check) are dropped from preset grids, and are a UsageError
/// when the user asked for them with -p. UsageError for -p names no mechanism has, and when no
/// point is left.
std::vector<PlannedBenchmark> plan(const std::vector<const Mechanism*>& mechs, Preset preset,
                                   const Overrides& overrides, const std::vector<int>& cpus = allowed_cpus());

/// --cpu-matrix MODE: each two-sided round-trip point of `benchmarks` (a `placement` that offers
/// cross, and round trips) once per pair of `cpus` at placement=cross on that pair, its params
/// gaining cpus=A,B — MODE `every`: every pair, side 0 on the CPU listed first; `class`: one pair
/// per placement class present here (resolve_pair: the pair nearest its class's median). Other
/// points are left out. UsageError for another MODE, when no point is left, when -p placement
/// was given (the matrix places the sides), and for `every` over more than 64 CPUs.
/// The default preset's plan with every selected suite's first answer (Suite::first) in front:
/// for each suite whose mechanisms are all in `selected`, the points of its grid with the other
/// parameters at their defaults (one the CPUs or the mechanism cannot hold is left out), marked
/// with the answer's title; the same points are not planned again further on.
std::vector<PlannedBenchmark> first_answers_first(std::vector<PlannedBenchmark> planned,
                                                  const std::vector<const Mechanism*>& selected,
                                                  const std::vector<int>& cpus = allowed_cpus());

std::vector<PlannedBenchmark> cpu_matrix(const std::vector<PlannedBenchmark>& benchmarks,
                                         const std::string& mode, const std::vector<int>& cpus,
                                         bool placement_asked);

/// A preset: which grid each parameter takes (its `quick` or `full` values, declared with the
/// parameter) and the run options it implies. The one table of presets.
struct PresetSpec {
  const char* name;  // as given to --preset ("" for the default)
  Preset preset;
  RunOptions options;  // duration, warm-up and repetitions (cpus left empty)
  /// The budget the preset fits its runs to when no --budget, --duration, --warmup or
  /// --repetitions is given (core/plan/estimate.hpp), in seconds; 0: none.
  double budget_s = 0;
};
/// The preset called `name` ("" = the default); nullptr when there is none.
const PresetSpec* find_preset(const std::string& name);

/// Runs one repetition of one benchmark; never throws for benchmark failures (they go into the
/// record), only for UsageError.
Record run_one(const PlannedBenchmark& b, const RunOptions& opts, int repetition);

/// Whether `o` pairs each noisy repetition with a quiet one (antagonists given, --unpaired not).
bool paired(const RunOptions& o);
/// One repetition under `noisy`'s antagonists paired with one of the same point without them, in
/// ABBA order over the repetitions (quiet first in the even ones): the noisy record, its quiet pair's
/// time per op, rate and latency percentiles in extra.noise_pair (docs/noise.md). A failed quiet
/// pair fails the record: there is no inflation without what it inflates.
Record run_noise_pair(const PlannedBenchmark& b, const RunOptions& noisy, int repetition);
/// The aggregate's extra.inflation from its repetitions' pairs: per figure (time per op, p50, p99,
/// p99.9, throughput) the median of the pairs' noisy-over-quiet ratios and, from 3 pairs, its
/// bootstrap 95% interval. Nothing when no repetition was paired.
void add_inflation(Record& agg, const std::vector<Record>& reps);

/// What run_plan tells its caller and asks of it as it goes (any may be empty): `starting` before
/// each repetition (the options it runs with; `done` of `total` repetitions run so far),
/// `finished` as each record completes — repetitions, and aggregates. `options`, asked before a
/// benchmark's first repetition in a run without a seed, gives the options all of its repetitions
/// run with (its place in the plan, the run's options): a budget that paces the run (BudgetPacer,
/// core/plan/estimate.hpp). Empty, or interleaved: every benchmark runs with the run's options.
struct PlanHooks {
  std::function<void(const PlannedBenchmark&, const RunOptions&, size_t done, size_t total)> starting;
  std::function<void(const Record&)> finished;
  std::function<RunOptions(size_t index, const RunOptions& run)> options;
};

/// Runs the plan: `opts.repetitions` repetitions of every benchmark and, for more than one, its
/// median aggregate (statistics.hpp). Without a seed, each benchmark's repetitions run back to
/// back, its aggregate right after them. With `interleave_seed`, the repetitions of all
/// benchmarks run in one random order drawn from that seed (as google/benchmark's random
/// interleaving), so that a slow drift of the machine falls on every benchmark alike; the
/// aggregates come at the end. Either way the records are returned grouped per benchmark in plan
/// order: its repetitions (numbered in the order they ran), then its aggregate.
///
/// With `opts.ci_target_pct` > 0 (--repetitions auto), each benchmark runs kAutoMinRepetitions
/// repetitions, then one more at a time until the 95% CI half-width of its median time per op is
/// within the target, `opts.max_repetitions` are run, or a repetition failed; its aggregate
/// records which (`repetitions_auto`). Interleaved, that is rounds of one repetition of each
/// benchmark not done yet, each round in a random order drawn from the seed.
std::vector<Record> run_plan(const std::vector<PlannedBenchmark>& benchmarks, const RunOptions& opts,
                             const PlanHooks& hooks, std::optional<uint64_t> interleave_seed = {});

}  // namespace ipclab
