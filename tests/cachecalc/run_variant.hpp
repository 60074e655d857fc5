#pragma once
// Runs one cachecalc mechanism the way the harness does, for a single verified iteration.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "../workload_support.hpp"

namespace ipclab::cachecalc::testing {

inline const Mechanism* find_variant(const std::string& name) {
  return test::find_mechanism("cachecalc", name);
}

/// duration 0 and no warm-up: at least one whole iteration measured (WorkerSpec::whole_ops).
/// `more` sets other parameters (calc, delay_kind, ...); the rest keep their defaults.
inline Record run_variant(const Mechanism& m, const std::string& delay_us = "8",
                          std::map<std::string, std::string> more = {}) {
  more["delay_us"] = delay_us;
  return test::run_workload(m, test::params_of(m, more));
}

inline void expect_verified(const std::string& name, const std::string& delay_us = "8",
                            const std::map<std::string, std::string>& more = {}) {
  const Mechanism* m = find_variant(name);
  if (!m) GTEST_SKIP() << "cachecalc/" << name << " is not built here";
  for (const auto& [k, v] : more) {
    bool declared = false;
    for (const auto& spec : m->params) declared |= spec.name == k;
    ASSERT_TRUE(declared) << "cachecalc/" << name << " has no parameter " << k;
  }
  Record rec = run_variant(*m, delay_us, more);
  EXPECT_EQ(rec.status, Status::Ok) << rec.error;
  EXPECT_TRUE(rec.integrity.clean());
  EXPECT_GE(rec.ops, 1u);
  EXPECT_GT(rec.wall_s, 0.0);
}

}  // namespace ipclab::cachecalc::testing
