// Protocol of the pingpong suite with the thread guest, every wait strategy: every answer is
// verified by the host, the counts add up, the figures are consistent. Also built under TSan.
#include <gtest/gtest.h>

#include <algorithm>

#include "mechanisms/pingpong/wait.hpp"
#include "pingpong_support.hpp"

namespace ipclab {
namespace {

class ThreadGuest : public ::testing::TestWithParam<std::string> {};

TEST_P(ThreadGuest, EveryRoundTripIsAnsweredAndVerified) {
  // Spinning with more threads than cores is slow by design: one pair there.
  const bool spins = GetParam() == "spin" || GetParam() == "spin_yield";
  const std::string pairs = spins ? "1" : "3";
  Record r = test::run_pingpong(
      "pingpong/thread",
      {{"wait", {GetParam()}}, {"pairs", {pairs}}, {"round_trips", {"3000"}}, {"spin_limit", {"50"}}});
  ASSERT_EQ(r.status, Status::Ok) << r.error;
  const uint64_t n = std::stoull(pairs);
  // Each pair's count adds up to the record's, and the cap is reported exactly when a pair fell short.
  uint64_t done = 0;
  bool short_pair = false;
  for (auto& d : r.extra["round_trips_done"]) {
    done += d.get<uint64_t>();
    short_pair = short_pair || d.get<uint64_t>() < 3000;
  }
  EXPECT_EQ(done, r.ops);
  EXPECT_EQ(r.extra["capped_by_duration"].get<bool>(), short_pair);
  if (!short_pair) {
    EXPECT_EQ(r.ops, n * 3000);
  }
  EXPECT_GT(r.ops, 0u);
  EXPECT_EQ(r.integrity.corrupt, 0u);
  EXPECT_EQ(r.integrity.sent, r.ops);
  ASSERT_EQ(r.extra["per_pair_ops"].size(), n);
  // Fairness: the slowest pair's rate over the fastest's, as the per-pair rates (rounded) state them.
  const double fairness = r.extra["fairness"].get<double>();
  double lo = 0, hi = 0;
  for (size_t i = 0; i < n; ++i) {
    const double rate = r.extra["per_pair_ops"][i].get<double>();
    lo = i ? std::min(lo, rate) : rate;
    hi = std::max(hi, rate);
  }
  ASSERT_GT(hi, 0.0);
  EXPECT_NEAR(fairness, lo / hi, 2.0 / hi + 1e-9);  // the rates in the record are rounded to whole ops/s
  // Sum of per-pair rates >= all round trips over the whole window (pairs overlap in time).
  EXPECT_GE(r.rates["total_ops"].get<double>() * 1.0001, r.rates["system_effective_ops"].get<double>());
  ASSERT_TRUE(r.latency.has_value());
  EXPECT_EQ(r.latency->kind, "rtt");
  // getrusage of a thread advances in scheduler-accounting steps: a 1 ms spin run may read as 0,
  // so only bound it: no more CPU than the workers could have used in the window.
  EXPECT_GE(r.cpu.user_s + r.cpu.sys_s, 0.0);
  EXPECT_LE(r.cpu.user_s + r.cpu.sys_s, 2.0 * double(n + 1) * r.wall_s + 0.02);
}

INSTANTIATE_TEST_SUITE_P(Pingpong, ThreadGuest, ::testing::ValuesIn(pingpong::wait_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace ipclab
