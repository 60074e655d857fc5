#pragma once
// What the tests of workload suites (servers, echo, cachecalc) share: find a registered
// mechanism, give it parameters, run it in a Session the way the harness does, count our fds;
// and run one planned point of a selection as `ipclab run` would (run_point).
#include <dirent.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>

#include "core/machine/placement.hpp"
#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"
#include "core/plan/runner.hpp"
#include "core/stats/record.hpp"

namespace ipclab::test {

inline const Mechanism* find_mechanism(const std::string& suite, const std::string& name) {
  for (const auto& m : Registry::get().mechanisms())
    if (m.suite == suite && m.name == name) return &m;
  return nullptr;
}

/// Every parameter of `m` at its default, except those in `over`.
inline Params params_of(const Mechanism& m, const std::map<std::string, std::string>& over = {}) {
  Params p;
  for (const auto& spec : m.params) {
    auto it = over.find(spec.name);
    p.set(spec.name, it != over.end() ? it->second : spec.def);
  }
  return p;
}

/// Runs `m`'s workload (or `body`, in its place) in a Session over every allowed CPU;
/// duration 0 and no warm-up: exactly one iteration.
inline Record run_workload(const Mechanism& m, const Params& p, double duration_s = 0, double warmup_s = 0,
                           const std::function<void(Session&)>& body = {}) {
  RunOptions o;
  o.duration_s = duration_s;
  o.warmup_s = warmup_s;
  o.cpus = allowed_cpus();
  Record rec;
  Session s(m, p, o, rec);
  if (body)
    body(s);
  else
    m.workload(s);
  return rec;
}

/// The one point that `selection` (e.g. "bulk/pipe") and `o` plan, run once as `ipclab run` runs
/// it: a short window after a short warm-up.
inline Record run_point(const std::string& selection, Overrides o, double duration_s = 0.05,
                        double warmup_s = 0.01) {
  auto planned = plan(select_mechanisms({selection}), Preset::Default, o);
  EXPECT_EQ(planned.size(), 1u);
  RunOptions opts;
  opts.duration_s = duration_s;
  opts.warmup_s = warmup_s;
  opts.repetitions = 1;
  return run_one(planned.at(0), opts, 0);
}

/// Descriptors open in this process.
inline int open_fds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

}  // namespace ipclab::test
