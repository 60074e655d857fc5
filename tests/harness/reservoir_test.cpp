#include "core/stats/reservoir.hpp"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace ipclab {
namespace {

std::vector<uint64_t> fill(uint64_t cap, uint64_t n, uint64_t seed) {
  std::vector<uint64_t> block(Reservoir::block_words(cap), 0);
  Reservoir r(block.data(), cap, seed);
  for (uint64_t v = 0; v < n; ++v) r.offer(v);
  return block;
}

TEST(Reservoir, KeepsExactlyNAndCountsAllSeen) {
  auto b = fill(100, 100000, 1);
  EXPECT_EQ(Reservoir::seen(b.data()), 100000u);
  EXPECT_EQ(Reservoir::kept(b.data(), 100).size(), 100u);
  auto few = fill(100, 7, 1);
  EXPECT_EQ(Reservoir::kept(few.data(), 100).size(), 7u);
}

TEST(Reservoir, SampleIsUniformEnough) {
  // Values 0..99999 (mean 49999.5, sd ~28868): the mean of 100 uniform picks has sd ~2887;
  // averaged over 20 seeds, ~645. 4000 is over six of those.
  double total = 0;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    auto b = fill(100, 100000, seed);
    auto k = Reservoir::kept(b.data(), 100);
    total += std::accumulate(k.begin(), k.end(), 0.0) / double(k.size());
  }
  EXPECT_NEAR(total / 20, 49999.5, 4000);
  // Not just the first N: a plain prefix would have mean 49.5.
  auto b = fill(100, 100000, 3);
  auto k = Reservoir::kept(b.data(), 100);
  EXPECT_GT(*std::max_element(k.begin(), k.end()), 1000u);
}

TEST(Reservoir, DeterministicForASeed) {
  EXPECT_EQ(fill(50, 10000, 42), fill(50, 10000, 42));
  EXPECT_NE(fill(50, 10000, 42), fill(50, 10000, 43));
}

TEST(Reservoir, MergeIsAUniformSampleOfTheUnion) {
  // Two streams, one 9x longer: about 90% of the merged sample comes from it.
  std::vector<uint64_t> a(Reservoir::block_words(100), 0), b(Reservoir::block_words(100), 0);
  Reservoir ra(a.data(), 100, 1), rb(b.data(), 100, 2);
  for (int i = 0; i < 1000; ++i) ra.offer(1);
  for (int i = 0; i < 9000; ++i) rb.offer(2);
  auto m = Reservoir::merge({a.data(), b.data()}, 100, 7);
  ASSERT_EQ(m.size(), 100u);
  auto from_b = std::count(m.begin(), m.end(), 2u);
  EXPECT_GT(from_b, 75);
  EXPECT_LT(from_b, 100);
  // Fewer seen than the capacity: all of them.
  std::vector<uint64_t> c(Reservoir::block_words(100), 0);
  Reservoir rc(c.data(), 100, 3);
  for (int i = 0; i < 5; ++i) rc.offer(9);
  EXPECT_EQ(Reservoir::merge({c.data()}, 100, 7).size(), 5u);
}

TEST(Reservoir, QuantileInterpolatesLikeTheReference) {
  std::vector<uint64_t> v = {40, 10, 30, 20};           // sorted: 10 20 30 40
  EXPECT_DOUBLE_EQ(Reservoir::quantile(v, 0.5), 25.0);  // position 1.5
  EXPECT_DOUBLE_EQ(Reservoir::quantile(v, 0.0), 10.0);
  EXPECT_DOUBLE_EQ(Reservoir::quantile(v, 1.0), 40.0);
  EXPECT_NEAR(Reservoir::quantile(v, 0.9), 37.0, 1e-9);  // position 2.7
}

}  // namespace
}  // namespace ipclab
