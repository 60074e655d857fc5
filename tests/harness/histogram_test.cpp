#include "core/stats/histogram.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

using ipclab::Histogram;

TEST(Histogram, SmallValuesAreExact) {
  auto h = std::make_unique<Histogram>();
  for (uint64_t v = 0; v < 256; ++v) h->record(v);
  EXPECT_EQ(h->count(), 256u);
  EXPECT_EQ(h->min(), 0u);
  EXPECT_EQ(h->max(), 255u);
  EXPECT_EQ(h->quantile(0.5), 127u);
  EXPECT_EQ(h->quantile(1.0), 255u);
}

TEST(Histogram, BucketsCoverEveryValueWithinOnePercent) {
  // Every bucket boundary is consistent: lowest_of(index_of(v)) <= v < lowest + width, and the
  // width is at most 1/128 of the lowest value (relative error < 1%).
  std::mt19937_64 rng(42);
  for (int i = 0; i < 200000; ++i) {
    uint64_t v = rng() >> (rng() % 64);
    int b = Histogram::index_of(v);
    ASSERT_GE(b, 0);
    ASSERT_LT(b, Histogram::kBuckets);
    uint64_t lo = Histogram::lowest_of(b), w = Histogram::width_of(b);
    ASSERT_LE(lo, v);
    ASSERT_LT(v - lo, w);
    if (lo >= 256) {
      ASSERT_LE(double(w) / double(lo), 1.0 / 128 + 1e-12);
    }
  }
  EXPECT_EQ(Histogram::index_of(UINT64_MAX), Histogram::kBuckets - 1);
}

TEST(Histogram, QuantilesWithinOnePercentOfExact) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> dist(9.0, 1.5);  // ~8 us median, long tail
  std::vector<uint64_t> values;
  auto h = std::make_unique<Histogram>();
  for (int i = 0; i < 100000; ++i) {
    uint64_t v = uint64_t(dist(rng));
    values.push_back(v);
    h->record(v);
  }
  std::sort(values.begin(), values.end());
  for (double q : {0.5, 0.9, 0.99, 0.999}) {
    uint64_t exact = values[size_t(std::ceil(q * values.size())) - 1];
    double got = double(h->quantile(q));
    EXPECT_NEAR(got, double(exact), 0.01 * double(exact)) << "q=" << q;
  }
  double sum = 0;
  for (auto v : values) sum += double(v);
  EXPECT_DOUBLE_EQ(h->mean(), sum / double(values.size()));
}

TEST(Histogram, MergeEqualsRecordingEverythingInOne) {
  auto a = std::make_unique<Histogram>(), b = std::make_unique<Histogram>(),
       all = std::make_unique<Histogram>();
  for (uint64_t v = 1; v < 100000; v += 37) {
    (v % 2 ? a : b)->record(v);
    all->record(v);
  }
  a->merge(*b);
  EXPECT_EQ(a->count(), all->count());
  EXPECT_EQ(a->min(), all->min());
  EXPECT_EQ(a->max(), all->max());
  for (double q : {0.1, 0.5, 0.99}) EXPECT_EQ(a->quantile(q), all->quantile(q));
}

TEST(Histogram, SparseExportRoundTrips) {
  auto h = std::make_unique<Histogram>();
  for (uint64_t v : {5u, 5u, 300u, 70000u, 1000000u}) h->record(v);
  std::vector<uint64_t> values, counts;
  h->sparse(values, counts);
  ASSERT_EQ(values.size(), 4u);
  EXPECT_EQ(counts[0], 2u);
  auto back = std::make_unique<Histogram>();
  back->add_sparse(values, counts);
  EXPECT_EQ(back->count(), h->count());
  for (double q : {0.2, 0.5, 0.9, 1.0})
    EXPECT_NEAR(double(back->quantile(q)), double(h->quantile(q)), 0.01 * double(h->quantile(q)));
}

TEST(Histogram, EmptyIsZero) {
  auto h = std::make_unique<Histogram>();
  EXPECT_EQ(h->count(), 0u);
  EXPECT_EQ(h->quantile(0.5), 0u);
  EXPECT_EQ(h->min(), 0u);
  EXPECT_EQ(h->mean(), 0.0);
}
