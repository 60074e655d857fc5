#pragma once
// What the tests of workload suites (servers, echo, cachecalc) share: find a registered
// mechanism, give it parameters, run it in a Session the way the harness does, count our fds.
#include <dirent.h>

#include <functional>
#include <map>
#include <string>

#include "core/mechanism.hpp"
#include "core/placement.hpp"
#include "core/record.hpp"
#include "core/session.hpp"

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

/// Descriptors open in this process.
inline int open_fds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

}  // namespace ipclab::test
