#pragma once
// A latency reservoir: a uniform random sample of at most N values of a stream of unknown length
// (Algorithm R), as the POSIX mq benchmark (reference 002) keeps its latencies, with its
// percentiles (linear interpolation between the two nearest ranks). The values live in a block the
// caller owns, so that a forked consumer can fill one in shared memory; the coordinator then merges
// the consumers' reservoirs into one uniform sample of the union, as the reference's single
// reservoir shared by all its consumers is.
#include <algorithm>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace ipclab {

class Reservoir {
 public:
  /// Words a block for a reservoir of `capacity` values takes: the count seen, then the values.
  static constexpr size_t block_words(uint64_t capacity) { return size_t(capacity) + 1; }

  /// Fills `block` (block_words(capacity) words, zeroed); `seed` makes the sample reproducible.
  Reservoir(uint64_t* block, uint64_t capacity, uint64_t seed) : block_(block), cap_(capacity), rng_(seed) {}

  /// Offers one value: the i-th value offered (from 0) is kept with probability N/(i+1), in
  /// place of a kept value chosen uniformly.
  void offer(uint64_t v) {
    const uint64_t i = block_[0]++;
    if (i < cap_) {
      block_[1 + i] = v;
      return;
    }
    const uint64_t j = std::uniform_int_distribution<uint64_t>(0, i)(rng_);
    if (j < cap_) block_[1 + j] = v;
  }

  /// Values offered so far to the reservoir in `block`.
  static uint64_t seen(const uint64_t* block) { return block[0]; }
  /// The values kept in `block`.
  static std::span<const uint64_t> kept(const uint64_t* block, uint64_t capacity) {
    return {block + 1, size_t(std::min(block[0], capacity))};
  }

  /// One uniform sample of at most `capacity` values of the union of the streams the reservoirs in
  /// `blocks` saw: how many come from each stream is drawn without replacement in proportion to
  /// the values each saw (a multivariate hypergeometric draw), then that many of its kept values
  /// uniformly.
  static std::vector<uint64_t> merge(const std::vector<const uint64_t*>& blocks, uint64_t capacity,
                                     uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<uint64_t> left(blocks.size()), take(blocks.size(), 0);
    uint64_t total = 0;
    for (size_t b = 0; b < blocks.size(); ++b) total += left[b] = seen(blocks[b]);
    for (uint64_t n = std::min(total, capacity); n > 0; --n, --total) {
      uint64_t r = std::uniform_int_distribution<uint64_t>(0, total - 1)(rng);
      size_t b = 0;
      while (r >= left[b]) r -= left[b++];
      --left[b];
      ++take[b];
    }
    std::vector<uint64_t> out;
    for (size_t b = 0; b < blocks.size(); ++b) {
      auto k = kept(blocks[b], capacity);
      std::vector<uint64_t> v(k.begin(), k.end());
      // take[b] <= min(seen, capacity) = v.size(): a partial shuffle picks them uniformly.
      for (uint64_t i = 0; i < take[b]; ++i) {
        std::swap(v[i], v[std::uniform_int_distribution<uint64_t>(i, v.size() - 1)(rng)]);
        out.push_back(v[i]);
      }
    }
    return out;
  }

  /// Quantile q in [0,1] of `values` (sorted here) the reference's way: linear interpolation at
  /// position q*(n-1). Empty: 0 (the caller reports no value).
  static double quantile(std::vector<uint64_t>& values, double q) {
    if (values.empty()) return 0.0;
    std::sort(values.begin(), values.end());
    const double pos = q * double(values.size() - 1);
    const size_t lo = size_t(pos), hi = std::min(lo + 1, values.size() - 1);
    const double frac = pos - double(lo);
    return double(values[lo]) * (1.0 - frac) + double(values[hi]) * frac;
  }

 private:
  uint64_t* block_;
  uint64_t cap_;
  std::mt19937_64 rng_;
};

}  // namespace ipclab
