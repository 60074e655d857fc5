#pragma once
// Log-linear latency histogram (HdrHistogram's layout, written here because Debian has no
// HdrHistogram C++ package and this one must be a plain struct that lives in shared memory so
// that forked workers record into it directly).
#include <array>
#include <bit>
#include <cstdint>
#include <vector>

namespace ipclab {

class Histogram {
 public:
  static constexpr int kSubBits = 7;
  static constexpr uint64_t kSub = uint64_t(1) << kSubBits;  // buckets per power of two
  static constexpr int kBuckets = int(2 * kSub + (63 - kSubBits) * kSub);

  /// Records one value (nanoseconds).
  void record(uint64_t v) { record_n(v, 1); }
  /// Records `n` occurrences of the value `v`.
  void record_n(uint64_t v, uint64_t n) {
    counts_[index_of(v)] += n;
    count_ += n;
    sum_ += v * n;
    if (v < min_) min_ = v;
    if (v > max_) max_ = v;
  }
  /// Adds every count of `o` (histograms of different threads or processes).
  void merge(const Histogram& o);
  void reset();

  uint64_t count() const { return count_; }
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ ? double(sum_) / double(count_) : 0.0; }
  /// Value at quantile q in [0,1]: the midpoint of the bucket holding it, clamped to [min,max].
  uint64_t quantile(double q) const;

  /// Bucket index of a value; values below 2*kSub have a bucket of their own.
  static int index_of(uint64_t v) {
    if (v < 2 * kSub) return int(v);
    int e = 63 - std::countl_zero(v);  // v in [2^e, 2^(e+1)), e >= kSubBits+1
    uint64_t sub = (v >> (e - kSubBits)) - kSub;
    return int(2 * kSub + uint64_t(e - kSubBits - 1) * kSub + sub);
  }
  /// Lowest value that falls into bucket `i`.
  static uint64_t lowest_of(int i) {
    if (uint64_t(i) < 2 * kSub) return uint64_t(i);
    uint64_t k = uint64_t(i) - 2 * kSub;
    int e = int(k / kSub) + kSubBits + 1;
    return (kSub + k % kSub) << (e - kSubBits);
  }
  /// Width of bucket `i` (1 for the exact buckets).
  static uint64_t width_of(int i) {
    if (uint64_t(i) < 2 * kSub) return 1;
    int e = int((uint64_t(i) - 2 * kSub) / kSub) + kSubBits + 1;
    return uint64_t(1) << (e - kSubBits);
  }

  /// Non-empty buckets as (lowest value, count) pairs, for export.
  void sparse(std::vector<uint64_t>& values, std::vector<uint64_t>& counts) const;
  /// Adds counts given in exported form (used when folding in peers' records).
  void add_sparse(const std::vector<uint64_t>& values, const std::vector<uint64_t>& counts);
  uint64_t bucket_count(int i) const { return counts_[i]; }

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t min_ = UINT64_MAX;
  uint64_t max_ = 0;
};

}  // namespace ipclab
