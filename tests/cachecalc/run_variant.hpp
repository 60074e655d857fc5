#pragma once
// Runs one cachecalc mechanism the way the harness does, for a single verified iteration.
#include <gtest/gtest.h>

#include <string>

#include "core/mechanism.hpp"
#include "core/placement.hpp"
#include "core/record.hpp"
#include "core/session.hpp"

namespace ipclab::cachecalc::testing {

inline const Mechanism* find_variant(const std::string& name) {
  for (const auto& m : Registry::get().mechanisms())
    if (m.suite == "cachecalc" && m.name == name) return &m;
  return nullptr;
}

/// duration 0 and no warm-up: exactly one iteration.
inline Record run_variant(const Mechanism& m, const std::string& delay_us = "8") {
  Params p;
  for (const auto& spec : m.params) p.set(spec.name, spec.name == "delay_us" ? delay_us : spec.def);
  RunOptions o;
  o.duration_s = 0;
  o.warmup_s = 0;
  o.cpus = allowed_cpus();
  Record rec;
  Session s(m, p, o, rec);
  m.workload(s);
  return rec;
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
