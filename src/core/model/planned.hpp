#pragma once
// A point of a plan: one mechanism with one value of each of its parameters, as the planner
// (core/plan/runner.hpp) makes it and everything after it — the runner, the estimates, the
// outputs — reads it. Here, beside what a mechanism is, so that the outputs name points without
// depending on the planner.
#include <string>
#include <vector>

#include "core/base/params.hpp"
#include "core/model/mechanism.hpp"

namespace ipclab {

struct PlannedBenchmark {
  const Mechanism* mech;
  Params params;
  std::string name;
  /// --cpu-matrix: the pair this point runs on (in place of the run's --cpus), how the matrix was
  /// asked for ("every_pair" or "per_class") and, per class, which class the pair stands for.
  std::vector<int> cpus;
  std::string cpu_matrix, cpu_class;
  /// The title of the suite's first answer this point belongs to (Suite::first); empty for others.
  std::string first;
};

}  // namespace ipclab
