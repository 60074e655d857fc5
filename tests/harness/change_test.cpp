// The statistics of what moved between two runs (core/stats/change.hpp): the U test against
// scipy.stats.mannwhitneyu's figures, and the verdicts on known steps, noise and too few repetitions.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/stats/change.hpp"

namespace ipclab {
namespace {

TEST(MannWhitney, MatchesScipyExactAndAsymptotic) {
  // scipy.stats.mannwhitneyu(a, b).pvalue (method "auto", two-sided), scipy 1.10.
  EXPECT_NEAR(mann_whitney_p({1, 2, 3}, {4, 5, 6}), 0.1, 1e-12);
  EXPECT_NEAR(mann_whitney_p({1, 2, 3, 4, 5}, {3.5, 6, 7, 8, 9}), 0.031746031746031744, 1e-12);
  std::vector<double> a, b;
  for (int i = 0; i < 10; ++i) a.push_back(i), b.push_back(i + 2.5);
  EXPECT_NEAR(mann_whitney_p(a, b), 0.10410988966022681, 1e-9);                       // 10 and 10: normal
  EXPECT_NEAR(mann_whitney_p({1, 2, 2, 3}, {2, 3, 4, 5}), 0.1366582477381475, 1e-9);  // ties: normal
  EXPECT_EQ(mann_whitney_p({2, 2}, {2, 2, 2}), 1.0);                                  // all equal
  EXPECT_EQ(mann_whitney_p({}, {1}), 1.0);
  EXPECT_NEAR(min_mann_whitney_p(3, 3), 0.1, 1e-12);
  EXPECT_NEAR(min_mann_whitney_p(4, 4), 2.0 / 70, 1e-12);
}

std::vector<double> around(double mid, std::vector<double> rel) {
  for (auto& r : rel) r = mid * (1 + r);
  return rel;
}

TEST(JudgeChange, AKnownStepIsSlowerWithItsSize) {
  const auto base = around(412, {-0.01, 0.004, 0, 0.008, -0.006});
  const auto now = around(455, {0.003, -0.008, 0.01, 0, -0.004});
  const Change c = judge_change(base, now, false, {}, 1);
  EXPECT_EQ(c.verdict, "slower") << c.why;
  EXPECT_TRUE(c.regression());
  EXPECT_NEAR(c.ratio, 455.0 / 412, 1e-9);
  EXPECT_LT(c.ci[0], c.ratio);
  EXPECT_GT(c.ci[1], c.ratio);
  EXPECT_GT(c.ci[0], 1.05);  // the whole interval above the threshold
  EXPECT_LT(c.p, 0.05);
  // The same step the other way round is faster, and a capacity that drops is slower.
  EXPECT_EQ(judge_change(now, base, false, {}, 1).verdict, "faster");
  EXPECT_EQ(judge_change(now, base, true, {}, 1).verdict, "slower");
}

TEST(JudgeChange, NoiseWithinTheBandIsNoChange) {
  const auto base = around(412, {-0.02, 0.01, 0, 0.015, -0.01});
  const auto now = around(414, {0.02, -0.015, 0.01, 0, -0.02});
  const Change c = judge_change(base, now, false, {}, 1);
  EXPECT_EQ(c.verdict, "no change");
  EXPECT_FALSE(c.regression());
}

TEST(JudgeChange, TooFewRepetitionsSayMaybe) {
  const Change c = judge_change(around(100, {0, 0.01, -0.01}), around(130, {0, 0.01, -0.01}), false, {}, 1);
  EXPECT_EQ(c.verdict, "slower?");
  EXPECT_FALSE(c.regression());
  EXPECT_NE(c.why.find("3 and 3 repetitions"), std::string::npos) << c.why;
}

TEST(JudgeChange, TheBandIsLearnedFromTheHistory) {
  // A benchmark whose earlier runs moved ±8-12% from one to the next: a +10% move is within its
  // band, though the two runs' own repetitions are tight.
  const std::vector<double> history{100, 110, 99, 108, 97, 109, 100};
  const auto base = around(100, {0, 0.002, -0.002, 0.001, -0.001});
  const auto now = around(110, {0, 0.002, -0.002, 0.001, -0.001});
  const Change c = judge_change(base, now, false, history, 1);
  EXPECT_EQ(c.verdict, "no change");
  EXPECT_EQ(c.band_source, "its history over 7 runs");
  EXPECT_GT(c.band, 0.10);
  // A steady history leaves the threshold as the band: the same +10% is slower.
  const std::vector<double> steady{100, 100.5, 99.8, 100.2, 100.1, 99.9, 100};
  const Change s = judge_change(base, now, false, steady, 1);
  EXPECT_EQ(s.verdict, "slower");
  EXPECT_EQ(s.band_source, "threshold");
}

TEST(JudgeChange, AMachineThatMovedWidensTheBandByItsAnchorsAndClass) {
  // The host moved the vCPUs between the runs: c2c 6x faster, every cross-CPU figure with it. A
  // benchmark 3x faster beside it is the machine's move, not the benchmark's.
  const MachineMove anchor = machine_move({{"anchors/c2c", std::log(62.0 / 397)}}, {}, "cross");
  EXPECT_NEAR(anchor.log, std::abs(std::log(62.0 / 397)) + std::log(1.05), 1e-12);
  EXPECT_EQ(anchor.source, "anchors/c2c moved ×6.40");
  const auto base = around(510, {0, 0.002, -0.002, 0.001, -0.001});
  const auto now = around(131, {0, 0.002, -0.002, 0.001, -0.001});
  EXPECT_EQ(judge_change(base, now, false, {}, 1).verdict, "faster");
  const Change c = judge_change(base, now, false, {}, 1, anchor);
  EXPECT_EQ(c.verdict, "no change");
  EXPECT_EQ(c.band_source, "anchors/c2c moved ×6.40");
  // The class's other mechanisms scattered ±30% around no move: 2.5 × their q75 deviation.
  const MachineMove spread = machine_move({}, {0.3, -0.3, 0.25, -0.25, 0.3, -0.28}, "cross");
  EXPECT_EQ(spread.source, "cross-CPU spread");
  EXPECT_NEAR(spread.log, 2.5 * 0.3, 1e-9);
  // Fewer than five others and no anchor: no move known.
  EXPECT_EQ(machine_move({}, {0.3, -0.3}, "same").log, 0);
}

}  // namespace
}  // namespace ipclab
