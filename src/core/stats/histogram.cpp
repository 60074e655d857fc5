#include "core/stats/histogram.hpp"

#include <algorithm>
#include <cmath>

namespace ipclab {

void Histogram::merge(const Histogram& o) {
  for (int i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
  count_ += o.count_;
  sum_ += o.sum_;
  min_ = std::min(min_, o.min_);
  max_ = std::max(max_, o.max_);
}

void Histogram::reset() { *this = Histogram{}; }

uint64_t Histogram::quantile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // Rank of the wanted value, 1-based: the smallest value with at least q*count values at or below.
  uint64_t rank = std::max<uint64_t>(1, uint64_t(std::ceil(q * double(count_))));
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      uint64_t mid = lowest_of(i) + (width_of(i) - 1) / 2;
      return std::clamp(mid, min(), max_);
    }
  }
  return max_;
}

void Histogram::sparse(std::vector<uint64_t>& values, std::vector<uint64_t>& counts) const {
  values.clear();
  counts.clear();
  for_each_bucket([&](uint64_t lowest, uint64_t n) {
    values.push_back(lowest);
    counts.push_back(n);
  });
}

void Histogram::add_sparse(const std::vector<uint64_t>& values, const std::vector<uint64_t>& counts) {
  for (size_t i = 0; i < values.size() && i < counts.size(); ++i) {
    // A bucket's lowest value stands for the bucket; its midpoint keeps the mean unbiased.
    int b = index_of(values[i]);
    record_n(lowest_of(b) + (width_of(b) - 1) / 2, counts[i]);
  }
}

CoarseHistogram CoarseHistogram::of(const Histogram& h) {
  CoarseHistogram c;
  h.for_each_bucket([&c](uint64_t lowest, uint64_t n) {
    c.counts_[std::min(Layout::index_of(lowest), kBuckets - 1)] += n;
    c.count_ += n;
  });
  return c;
}

uint64_t CoarseHistogram::quantile(double q) const {
  if (count_ == 0) return 0;
  const uint64_t rank = std::max<uint64_t>(1, uint64_t(std::ceil(std::clamp(q, 0.0, 1.0) * double(count_))));
  uint64_t seen = 0;
  int i = 0;
  for (; i < kBuckets - 1; ++i)
    if ((seen += counts_[i]) >= rank) break;
  return Layout::lowest_of(i) + (Layout::width_of(i) - 1) / 2;
}

}  // namespace ipclab
