// core/measure/antagonist: --antagonist's parser (kinds, WHERE, LEVEL and their errors) and where
// each WHERE class puts an antagonist on machines of several shapes (a hand-made topology: no
// process is started here).
#include "core/measure/antagonist.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/machine/topology.hpp"

using namespace ipclab;

namespace {

// The message of the UsageError parse_antagonist throws for `text` ("" when it throws none).
std::string refusal(const std::string& text) {
  try {
    parse_antagonist(text);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// A machine of `nodes` NUMA nodes × `llcs` last-level caches a node × `cores` cores a cache ×
// `threads` SMT threads a core, CPUs numbered in that order.
topo::Topology machine(int nodes, int llcs, int cores, int threads) {
  topo::Topology t;
  int id = 0, core = 0;
  for (int n = 0; n < nodes; ++n)
    for (int l = 0; l < llcs; ++l) {
      const int llc = id;
      for (int c = 0; c < cores; ++c, ++core) {
        std::vector<int> siblings;
        for (int k = 0; k < threads; ++k) siblings.push_back(id + k);
        for (int k = 0; k < threads; ++k, ++id) t.cpus.push_back({id, 0, core, n, llc, siblings});
      }
    }
  t.nodes = nodes;
  t.llcs = nodes * llcs;
  t.cores = core;
  t.smt = threads > 1;
  return t;
}

std::vector<int> all(const topo::Topology& t) {
  std::vector<int> v;
  for (auto& c : t.cpus) v.push_back(c.id);
  return v;
}

// The reason resolve_antagonist_cpus skips with ("" when it does not skip).
std::string skip_of(const std::string& where, int a, int b, const topo::Topology& t) {
  try {
    resolve_antagonist_cpus(where, a, b, all(t), t);
  } catch (const Skip& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Antagonist, ParsesKindWhereAndLevel) {
  AntagonistSpec s = parse_antagonist("cpu");
  EXPECT_EQ(s.kind, "cpu");
  EXPECT_EQ(s.where, "others");  // the default WHERE
  EXPECT_FALSE(s.level_given);
  EXPECT_EQ(s.level, 100);  // cpu's default load
  EXPECT_EQ(s.text(), "cpu@others:100");

  s = parse_antagonist("cpu@same:50");
  EXPECT_EQ(s.where, "same");
  EXPECT_TRUE(s.level_given);
  EXPECT_EQ(s.level, 50);
  EXPECT_EQ(s.text(), "cpu@same:50");

  s = parse_antagonist("irq:1000");
  EXPECT_EQ(s.where, "others");
  EXPECT_EQ(s.level, 1000);

  // A kind without a LEVEL says none.
  EXPECT_EQ(parse_antagonist("cache@llc").text(), "cache@llc");
  EXPECT_EQ(parse_antagonist("none").text(), "none@others");
  for (const char* k : {"none", "cpu", "cache", "membw", "irq", "fork", "io"})
    EXPECT_EQ(parse_antagonist(k).kind, k);
}

TEST(Antagonist, RefusesBadInputNamingTheFix) {
  EXPECT_NE(refusal("bogus").find("unknown KIND 'bogus'; use one of none, cpu,"), std::string::npos);
  EXPECT_NE(refusal("").find("unknown KIND ''"), std::string::npos);
  EXPECT_NE(
      refusal("cpu@nowhere").find("unknown WHERE 'nowhere'; use one of same, smt, llc, cross_numa, others"),
      std::string::npos);
  EXPECT_NE(
      refusal("cpu:0").find("LEVEL of cpu is the load of each CPU in percent (--cpu-load), a number from 1 "
                            "to 100; e.g. cpu@others:100"),
      std::string::npos);
  EXPECT_NE(refusal("cpu:101").find("a number from 1 to 100"), std::string::npos);
  EXPECT_NE(refusal("cpu:fast").find("a number from 1 to 100"), std::string::npos);
  EXPECT_NE(refusal("cpu:nan").find("a number from 1 to 100"), std::string::npos);
  EXPECT_NE(refusal("cpu:").find("give a LEVEL after the ':'"), std::string::npos);
  EXPECT_NE(refusal("cache:3").find("cache takes no LEVEL; drop ':3'"), std::string::npos);
  EXPECT_NE(refusal("none:1").find("none takes no LEVEL"), std::string::npos);
  EXPECT_NE(refusal("irq:0").find("timer frequency"), std::string::npos);
  // quota acts on the sides themselves: no WHERE; its LEVEL from 1 % of one CPU.
  EXPECT_NE(refusal("quota@same:20").find("quota acts on the sides themselves and takes no WHERE"),
            std::string::npos);
  EXPECT_NE(
      refusal("quota:0").find("LEVEL of quota is percent of one CPU per 100 ms period, a number from 1 to"),
      std::string::npos);
  EXPECT_EQ(parse_antagonist("quota").text(), "quota:50") << "its default, and no WHERE in its name";
  // A whole LEVEL in full, as stress-ng takes it (it refused "1e+06", irq's default).
  EXPECT_EQ(parse_antagonist("irq").text(), "irq@others:1000000");
  EXPECT_EQ(parse_antagonist("cpu:12.5").text(), "cpu@others:12.5");
  // One line each.
  for (const char* bad : {"bogus", "cpu@nowhere", "cpu:0", "cache:3", "quota", "cpu\n@same"})
    EXPECT_EQ(refusal(bad).find('\n'), std::string::npos) << bad;
}

TEST(Antagonist, ARegisteredKindIsParsed) {
  AntagonistKind k;
  k.name = "test_kind";
  k.what = "a kind of this test";
  k.needs_stress_ng = false;
  k.start = [](const AntagonistSpec&, const AntagonistTarget&) { return std::unique_ptr<Antagonist>(); };
  register_antagonist_kind(k);
  EXPECT_EQ(parse_antagonist("test_kind@same").kind, "test_kind");
}

TEST(Antagonist, WhereClassesOnAManyCoreMachine) {
  // 2 nodes × 2 caches × 2 cores × 2 threads: CPUs 0..15; 0,1 one core; 0..3 one cache; 0..7 node 0.
  const topo::Topology t = machine(2, 2, 2, 2);
  EXPECT_EQ(resolve_antagonist_cpus("same", 0, 4, all(t), t), std::vector<int>{0});
  EXPECT_EQ(resolve_antagonist_cpus("smt", 0, 4, all(t), t), std::vector<int>{1});
  EXPECT_EQ(resolve_antagonist_cpus("llc", 0, 4, all(t), t),
            std::vector<int>{2});  // another core, same cache
  EXPECT_EQ(resolve_antagonist_cpus("cross_numa", 0, 4, all(t), t), std::vector<int>{8});
  std::vector<int> others;
  for (int c = 0; c < 16; ++c)
    if (c != 0 && c != 4) others.push_back(c);
  EXPECT_EQ(resolve_antagonist_cpus("others", 0, 4, all(t), t), others);
  // No class lands on a side: side 1 on the SMT sibling leaves smt nothing; on CPU 2, llc takes 3.
  EXPECT_NE(skip_of("smt", 0, 1, t).find("every CPU of that class relative to CPU 0 (side 0) is a side's"),
            std::string::npos);
  EXPECT_EQ(resolve_antagonist_cpus("llc", 0, 2, all(t), t), std::vector<int>{3});
  // Only allowed CPUs are taken.
  EXPECT_EQ(resolve_antagonist_cpus("others", 0, 4, {0, 4, 9}, t), std::vector<int>{9});
}

TEST(Antagonist, AClassTheMachineLacksIsSkippedWithItsReason) {
  const topo::Topology vm = machine(1, 1, 2, 1);  // two vCPUs: no SMT, one node, one cache
  EXPECT_NE(skip_of("smt", 0, 0, vm).find("CPU 0 (side 0) has no SMT sibling here (no SMT on this machine)"),
            std::string::npos);
  EXPECT_NE(skip_of("cross_numa", 0, 0, vm).find("this machine has one node"), std::string::npos);
  EXPECT_EQ(resolve_antagonist_cpus("llc", 0, 0, all(vm), vm), std::vector<int>{1});
  EXPECT_NE(skip_of("llc", 0, 1, vm).find("every CPU of that class relative to CPU 0 (side 0) is a side's"),
            std::string::npos);
  EXPECT_NE(
      skip_of("llc", 0, 0, machine(1, 2, 1, 1)).find("no other core shares the last-level cache of CPU 0"),
      std::string::npos);
  // Both CPUs the sides': nothing is left for @others.
  EXPECT_NE(skip_of("others", 0, 1, vm).find("every allowed CPU (0-1) is a side's"), std::string::npos);
  EXPECT_EQ(resolve_antagonist_cpus("others", 0, 0, all(vm), vm), std::vector<int>{1});
}

TEST(Antagonist, UnpinnedSidesTakeOnlyOthers) {
  const topo::Topology t = machine(1, 1, 4, 1);
  for (const char* w : {"same", "smt", "llc", "cross_numa"})
    EXPECT_NE(skip_of(w, -1, -1, t).find("the sides are unpinned"), std::string::npos) << w;
  EXPECT_EQ(resolve_antagonist_cpus("others", -1, -1, all(t), t), all(t));
}
