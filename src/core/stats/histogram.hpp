#pragma once
// Log-linear latency histogram (HdrHistogram's layout, written here because Debian has no
// HdrHistogram C++ package and this one must be a plain struct that lives in shared memory so
// that forked workers record into it directly).
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <vector>

namespace ipclab {

/// The log-linear bucket layout: values below 2^(SubBits+1) have a bucket each, then every power
/// of two is cut into 2^SubBits buckets of equal width.
template <int SubBits>
struct LogBuckets {
  static constexpr uint64_t kSub = uint64_t(1) << SubBits;
  static constexpr int index_of(uint64_t v) {
    if (v < 2 * kSub) return int(v);
    int e = 63 - std::countl_zero(v);  // v in [2^e, 2^(e+1)), e >= SubBits+1
    uint64_t sub = (v >> (e - SubBits)) - kSub;
    return int(2 * kSub + uint64_t(e - SubBits - 1) * kSub + sub);
  }
  static constexpr uint64_t lowest_of(int i) {
    if (uint64_t(i) < 2 * kSub) return uint64_t(i);
    uint64_t k = uint64_t(i) - 2 * kSub;
    int e = int(k / kSub) + SubBits + 1;
    return (kSub + k % kSub) << (e - SubBits);
  }
  static constexpr uint64_t width_of(int i) {
    if (uint64_t(i) < 2 * kSub) return 1;
    int e = int((uint64_t(i) - 2 * kSub) / kSub) + SubBits + 1;
    return uint64_t(1) << (e - SubBits);
  }
};

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
  /// Calls f(lowest value, count) for every non-empty bucket, in order of value. Scans only the
  /// buckets from the smallest value to the largest: a worker takes an image of its histogram at
  /// every slice boundary, inside the measured window.
  template <class F>
  void for_each_bucket(F&& f) const {
    if (!count_) return;
    for (int i = index_of(min_), last = index_of(max_); i <= last; ++i)
      if (counts_[i]) f(lowest_of(i), counts_[i]);
  }
  void reset();

  uint64_t count() const { return count_; }
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ ? double(sum_) / double(count_) : 0.0; }
  /// Value at quantile q in [0,1]: the midpoint of the bucket holding it, clamped to [min,max].
  uint64_t quantile(double q) const;

  /// Bucket index of a value; values below 2*kSub have a bucket of their own.
  static int index_of(uint64_t v) { return LogBuckets<kSubBits>::index_of(v); }
  /// Lowest value that falls into bucket `i`.
  static uint64_t lowest_of(int i) { return LogBuckets<kSubBits>::lowest_of(i); }
  /// Width of bucket `i` (1 for the exact buckets).
  static uint64_t width_of(int i) { return LogBuckets<kSubBits>::width_of(i); }

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

/// A small histogram for one time slice of one worker (Session's series): four buckets per power of
/// two (a bucket spans 25% of its lowest value, so a quantile read at its midpoint is within
/// ±12.5%), values from 2^40 ns (18 minutes) on in the last bucket. 1.3 KB, where a Histogram is
/// 59 KB: twenty per worker slot fit in the shared control block. Merged exactly by adding counts.
class CoarseHistogram {
 public:
  using Layout = LogBuckets<2>;
  static constexpr int kBuckets = Layout::index_of(uint64_t(1) << 40);

  void record(uint64_t v) {
    ++counts_[std::min(Layout::index_of(v), kBuckets - 1)];
    ++count_;
  }
  void merge(const CoarseHistogram& o) {
    for (int i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
    count_ += o.count_;
  }
  /// This histogram less `o`, which must hold a subset of its samples (an earlier image of it).
  void subtract(const CoarseHistogram& o) {
    for (int i = 0; i < kBuckets; ++i) counts_[i] -= o.counts_[i];
    count_ -= o.count_;
  }
  /// The coarse image of a full histogram: each of its buckets counted where its lowest value
  /// falls (the full buckets nest in the coarse ones: both are log-linear, the coarse one with
  /// fewer sub-buckets).
  static CoarseHistogram of(const Histogram& h);
  uint64_t count() const { return count_; }
  /// Value at quantile q in [0,1]: the midpoint of the bucket holding it (0 when empty).
  uint64_t quantile(double q) const;

 private:
  std::array<uint64_t, kBuckets> counts_{};
  uint64_t count_ = 0;
};

}  // namespace ipclab
