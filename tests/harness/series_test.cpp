// The time series of a repetition and the statistics of its aggregate: the trend and cluster tests
// against reference values, the flags they raise, the slices of a real session, and the bootstrap
// confidence intervals of the aggregate.
#include "core/stats/series.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/base/clock.hpp"
#include "core/measure/session.hpp"
#include "core/stats/statistics.hpp"

namespace ipclab {
namespace {

// A rising series with ties, and one without a trend (ties too).
const std::vector<double> kUp{10, 12, 11, 13, 15, 14, 16, 18, 17, 19, 21, 20, 22, 21, 23, 25, 24, 26, 27, 26};
const std::vector<double> kFlat{5, 3, 6, 2, 7, 4, 5, 3, 6, 4, 5, 7, 3, 4, 6, 5, 2, 6, 4, 5};

TEST(Series, MannKendallMatchesScipy) {
  // Computed once with SciPy 1.17.1:
  //   scipy.stats.kendalltau(range(20), y, method="asymptotic").pvalue
  EXPECT_NEAR(mann_kendall_p(kUp), 1.5927847758500418e-08, 1e-15);
  EXPECT_NEAR(mann_kendall_p(kFlat), 0.8683788504405425, 1e-12);
  EXPECT_EQ(mann_kendall_p(std::vector<double>(20, 3.0)), 1.0);  // all tied: no trend
  EXPECT_EQ(mann_kendall_p({1, 2}), 1.0);
}

TEST(Series, TheilSenMatchesScipy) {
  // scipy.stats.theilslopes(y)[0] (SciPy 1.17.1): 89/99 for kUp, 0 for kFlat.
  EXPECT_NEAR(theil_sen_slope(kUp), 0.898989898989899, 1e-12);
  EXPECT_EQ(theil_sen_slope(kFlat), 0.0);
  EXPECT_EQ(theil_sen_slope({4, 7, 10, 13}), 3.0);
}

TEST(Series, BestSplitFindsTwoClusters) {
  std::vector<double> v;
  for (int i = 0; i < 10; ++i) v.push_back(std::log(100.0 + i));  // 100..109
  for (int i = 0; i < 8; ++i) v.push_back(std::log(200.0 + i));   // 200..207
  const Split s = best_split(v);
  ASSERT_TRUE(s.found);
  EXPECT_EQ(s.low_n, 10u);
  EXPECT_EQ(s.high_n, 8u);
  EXPECT_NEAR(std::exp(s.low_median), std::sqrt(104.0 * 105.0), 1e-9);
  EXPECT_NEAR(s.gap, std::log(200.0 / 109.0), 1e-12);
  EXPECT_TRUE(is_bimodal(s));
}

TEST(Series, BestSplitRefusesSmallOrCloseClusters) {
  // Two outliers are not a cluster: the split must leave three a side, and then the gap is small.
  std::vector<double> v;
  for (int i = 0; i < 18; ++i) v.push_back(std::log(100.0 + i));
  v.push_back(std::log(300.0));
  v.push_back(std::log(310.0));
  EXPECT_FALSE(is_bimodal(best_split(v)));
  // Clusters 10% apart: well separated, but not far enough to matter.
  std::vector<double> close;
  for (int i = 0; i < 10; ++i) close.push_back(std::log(100.0 + 0.1 * i));
  for (int i = 0; i < 10; ++i) close.push_back(std::log(110.0 + 0.1 * i));
  const Split c = best_split(close);
  EXPECT_GT(c.gap, 3 * c.pooled_sd);
  EXPECT_FALSE(is_bimodal(c));
  EXPECT_FALSE(best_split({1, 2, 3, 4, 5}).found);  // fewer than three a side
}

// The series of 20 slices of 10 ms whose ops are `ops`.
nlohmann::json series_of(const std::vector<uint64_t>& ops) {
  std::vector<uint64_t> t;
  for (size_t k = 0; k <= ops.size(); ++k) t.push_back(k * 10'000'000);
  return make_series(t, ops, {});
}

TEST(Series, FlagsATrendAsNonSteady) {
  std::vector<uint64_t> ramp;
  for (uint64_t k = 0; k < 20; ++k) ramp.push_back(10'000 - 200 * k);  // -38% over the run
  const auto s = series_of(ramp);
  EXPECT_EQ(s["flags"], nlohmann::json::array({"non_steady"}));
  EXPECT_LT(s["trend"]["p"].get<double>(), 0.01);
  EXPECT_NEAR(s["trend"]["slope_pct"].get<double>(), -100.0 * 200 * 19 / 8100, 1e-9);  // median 8100
  EXPECT_DOUBLE_EQ(s["rate_per_s"][0].get<double>(), 1e6);
  EXPECT_EQ(s["p50_ns"][0], nullptr);  // no latency measured
}

TEST(Series, ASmallSignificantTrendIsNotFlagged) {
  std::vector<uint64_t> drift;
  for (uint64_t k = 0; k < 20; ++k) drift.push_back(10'000 + 20 * k);  // +3.8%: significant, small
  const auto s = series_of(drift);
  EXPECT_LT(s["trend"]["p"].get<double>(), 0.01);
  EXPECT_EQ(s["flags"], nlohmann::json::array());
}

TEST(Series, FlagsAlternatingRatesAsBimodal) {
  std::vector<uint64_t> ops;
  for (uint64_t k = 0; k < 20; ++k) ops.push_back(k % 2 ? 5'000 + k : 10'000 - k);
  const auto s = series_of(ops);
  EXPECT_EQ(s["flags"], nlohmann::json::array({"bimodal"}));
  EXPECT_EQ(s["clusters"]["low"]["slices"], 10);
  EXPECT_NEAR(s["clusters"]["apart_pct"].get<double>(), 100.0, 1.0);
}

TEST(Series, SlicesOfTooFewOpsAreNotJudged) {
  EXPECT_EQ(min_ops_per_slice(), 10u);  // one op in 10 is the 10% trend the flag reports
  // The same shapes at 0-3 ops a slice (a 16 MiB bulk move in a 0.25 s window) and at a hundred
  // times that: two levels, and a ramp. Counting alone makes the sparse ones look like either.
  std::vector<uint64_t> levels, ramp;
  for (uint64_t k = 0; k < 20; ++k) levels.push_back(k % 2);
  for (uint64_t k = 0; k < 20; ++k) ramp.push_back(3 - k / 7);  // 3 3 ... 2 2 ... 1 1 ...
  for (const auto& sparse : {levels, ramp}) {
    const auto s = series_of(sparse);
    EXPECT_EQ(s["flags"], nlohmann::json::array()) << s.dump();
    EXPECT_LT(median_ops_per_slice(sparse), 10);
  }
  std::vector<uint64_t> levels_dense, ramp_dense;
  for (uint64_t k = 0; k < 20; ++k) levels_dense.push_back(100 + 100 * (k % 2));
  for (uint64_t v : ramp) ramp_dense.push_back(100 * v);
  EXPECT_EQ(series_of(levels_dense)["flags"], nlohmann::json::array({"bimodal"}));
  EXPECT_EQ(series_of(ramp_dense)["flags"], nlohmann::json::array({"non_steady", "bimodal"}));
  // At the bound: a median slice of 10 ops is judged, one of 9 is not.
  std::vector<uint64_t> at(20, 10), below(20, 9);
  for (uint64_t k = 10; k < 20; ++k) at[k] = below[k] = 30;
  at[9] = at[10] = 10;
  below[9] = below[10] = 9;
  EXPECT_EQ(series_of(at)["flags"], nlohmann::json::array({"non_steady", "bimodal"}));
  EXPECT_EQ(series_of(below)["flags"], nlohmann::json::array());
}

TEST(Series, CoarseHistogramQuantilesAreWithinTheBucketWidth) {
  CoarseHistogram h;
  for (uint64_t v = 1000; v < 2000; ++v) h.record(v);
  for (double q : {0.5, 0.99}) {
    const double exact = 1000 + q * 1000;
    EXPECT_NEAR(double(h.quantile(q)), exact, 0.125 * exact) << q;
  }
  h.record(uint64_t(1) << 50);  // past the last bucket's start: counted there
  EXPECT_EQ(h.count(), 1001u);
}

// Two thread workers counting ops and latencies as run_workers' workers do.
Record run_session(double duration_s) {
  Mechanism m{.suite = "harness", .name = "series"};
  Params p;
  RunOptions o;
  o.duration_s = duration_s;
  o.warmup_s = 0.01;
  Record rec;
  Session s(m, p, o, rec);
  std::vector<WorkerSpec> ws;
  for (int i = 0; i < 2; ++i)
    ws.push_back({.role = "worker", .index = i, .cpu = -1, .body = [](Worker& w) {
                    w.ready();
                    while (w.running()) {
                      const uint64_t t0 = now_ns();
                      sleep_ns(200'000);
                      if (w.measuring()) {
                        ++w.out().ops;
                        w.out().record_latency(now_ns() - t0);
                      }
                    }
                  }});
  s.run_workers(std::move(ws), false, "op");
  return rec;
}

TEST(Series, SlicesOfASessionSumToItsOps) {
  const Record r = run_session(0.2);
  ASSERT_EQ(r.status, Status::Ok) << r.error;
  ASSERT_TRUE(r.series.is_object());
  const auto& s = r.series;
  EXPECT_EQ(s["slices"], kSlices);
  ASSERT_EQ(s["t_ns"].size(), size_t(kSlices + 1));
  ASSERT_EQ(s["ops"].size(), size_t(kSlices));
  uint64_t sum = 0;
  for (auto& v : s["ops"]) sum += v.get<uint64_t>();
  EXPECT_EQ(sum, r.ops);
  for (size_t k = 0; k < size_t(kSlices); ++k)
    EXPECT_LT(s["t_ns"][k].get<uint64_t>(), s["t_ns"][k + 1].get<uint64_t>()) << k;
  EXPECT_EQ(s["t_ns"][0], 0);
  EXPECT_NEAR(double(s["t_ns"][kSlices].get<uint64_t>()), r.wall_s * 1e9, 1.0);
  // Each slice is 10 ms: two workers of 0.2 ms operations do some in every one of them.
  for (size_t k = 0; k < size_t(kSlices); ++k) {
    EXPECT_GT(s["ops"][k].get<uint64_t>(), 0u) << k;
    EXPECT_TRUE(s["p50_ns"][k].is_number()) << k;
  }
  EXPECT_TRUE(s["flags"].is_array());
}

// Iteration records whose times per op are `tpo` (and p50 = p99 = the time per op).
std::vector<Record> reps_of(const std::vector<double>& tpo, const std::string& name = "harness/x") {
  std::vector<Record> reps;
  for (size_t i = 0; i < tpo.size(); ++i) {
    Record r;
    r.name = name;
    r.repetition = int(i);
    r.ops = 1'000'000;
    r.wall_s = tpo[i] * 1e-3;
    Latency l;
    l.count = 10;
    l.p50 = uint64_t(tpo[i]);
    l.p99 = uint64_t(2 * tpo[i]);
    r.latency = l;
    reps.push_back(r);
  }
  return reps;
}

std::vector<double> noisy(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(1000.0, 50.0);
  std::vector<double> v;
  for (size_t i = 0; i < n; ++i) v.push_back(d(rng));
  return v;
}

TEST(Aggregate, ConfidenceIntervalsNeedThreeRepetitions) {
  EXPECT_TRUE(aggregate_median(reps_of({100, 110})).ci.is_null());
  const Record a = aggregate_median(reps_of({100, 110, 105}));
  ASSERT_TRUE(a.ci.is_object());
  EXPECT_EQ(a.ci["level"], 0.95);
  EXPECT_EQ(a.ci["method"], "bootstrap-percentile");
  EXPECT_EQ(a.ci["resamples"], 2000);
  EXPECT_TRUE(a.ci["p50_ns"].is_array());
  EXPECT_EQ(to_json(a)["ci"], a.ci);
}

TEST(Aggregate, TheIntervalHoldsTheMedianAndIsTheSameForTheSameName) {
  const auto v = noisy(9, 1);
  const Record a = aggregate_median(reps_of(v));
  const double med = median_of(v);
  const auto ci = a.ci["time_per_op_ns"];
  EXPECT_LE(ci[0].get<double>(), med);
  EXPECT_GE(ci[1].get<double>(), med);
  EXPECT_LT(ci[0].get<double>(), ci[1].get<double>());
  EXPECT_LE(a.ci["p50_ns"][0].get<double>(), a.ci["p50_ns"][1].get<double>());
  EXPECT_EQ(aggregate_median(reps_of(v)).ci, a.ci);  // deterministic
  // Another name draws other resamples.
  EXPECT_NE(seed_of("harness/x"), seed_of("harness/y"));
  EXPECT_NE(bootstrap_median_ci({v}, seed_of("harness/x")), bootstrap_median_ci({v}, seed_of("harness/y")));
}

TEST(Aggregate, TheIntervalNarrowsWithMoreRepetitions) {
  auto width = [](const std::vector<double>& v) {
    const auto ci = bootstrap_median_ci({v}, 7);
    return ci[0][1] - ci[0][0];
  };
  EXPECT_LT(width(noisy(100, 3)), width(noisy(5, 3)) / 2);
}

TEST(Aggregate, FlagsAreMostRepetitionsSliceFlagsEveryOnesOwnAndTheirSplit) {
  auto reps = reps_of({100, 101, 102, 200, 201, 202});
  reps[1].series = {{"flags", {"non_steady"}}};
  reps[4].series = {{"flags", {"bimodal", "non_steady"}}};
  reps[2].flags = nlohmann::json::array({"steal"});
  // non_steady in 2 of 6 and bimodal in 1 of 6: a window's, not the point's; steal in one: kept.
  EXPECT_EQ(aggregate_median(reps).flags, nlohmann::json::array({"bimodal_repetitions", "steal"}));
  reps[0].series = {{"flags", {"non_steady"}}};
  reps[5].series = {{"flags", {"non_steady"}}};
  const Record a = aggregate_median(reps);  // non_steady in 4 of 6: most
  EXPECT_EQ(a.flags, nlohmann::json::array({"bimodal_repetitions", "non_steady", "steal"}));
  EXPECT_TRUE(a.series.is_null());  // a repetition's series is its own
  EXPECT_EQ(aggregate_median(reps_of({100, 101, 102, 103, 104, 105})).flags, nlohmann::json::array());
}

}  // namespace
}  // namespace ipclab
