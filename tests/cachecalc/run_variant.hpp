#pragma once
// Runs one cachecalc mechanism the way the harness does, for a single verified iteration.
#include <gtest/gtest.h>

#include <string>

#include "../workload_support.hpp"

namespace ipclab::cachecalc::testing {

inline const Mechanism* find_variant(const std::string& name) {
  return test::find_mechanism("cachecalc", name);
}

/// duration 0 and no warm-up: at least one whole iteration measured (WorkerSpec::whole_ops).
inline Record run_variant(const Mechanism& m, const std::string& delay_us = "8") {
  return test::run_workload(m, test::params_of(m, {{"delay_us", delay_us}}));
}

inline void expect_verified(const std::string& name, const std::string& delay_us = "8") {
  const Mechanism* m = find_variant(name);
  if (!m) GTEST_SKIP() << "cachecalc/" << name << " is not built here";
  Record rec = run_variant(*m, delay_us);
  EXPECT_EQ(rec.status, Status::Ok) << rec.error;
  EXPECT_TRUE(rec.integrity.clean());
  EXPECT_GE(rec.ops, 1u);
  EXPECT_GT(rec.wall_s, 0.0);
}

}  // namespace ipclab::cachecalc::testing
