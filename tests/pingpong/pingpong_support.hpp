#pragma once
// Helpers of the pingpong tests: run one benchmark point in-process, through the real runner.
#include <string>
#include <vector>

#include "core/base/params.hpp"
#include "core/machine/placement.hpp"
#include "core/plan/runner.hpp"
#include "core/stats/record.hpp"

namespace ipclab::test {

inline Record run_pingpong(const std::string& mechanism, const Overrides& overrides,
                           double duration_s = 2.0) {
  auto plan_ = plan(select_mechanisms({mechanism}), Preset::Default, overrides);
  RunOptions opts;
  opts.duration_s = duration_s;
  opts.warmup_s = 0.01;
  opts.repetitions = 1;
  opts.cpus = allowed_cpus();
  return run_one(plan_.at(0), opts, 0);
}

}  // namespace ipclab::test
