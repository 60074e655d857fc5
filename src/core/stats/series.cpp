#include "core/stats/series.hpp"

#include <algorithm>
#include <cmath>

#include "core/stats/flags.hpp"
#include "core/stats/statistics.hpp"

namespace ipclab {

double mann_kendall_p(const std::vector<double>& y) {
  const size_t n = y.size();
  if (n < 3) return 1.0;
  double s = 0;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) s += (y[j] > y[i]) - (y[j] < y[i]);
  // Ties among the values shrink the variance of S: each group of t equal values takes
  // t(t-1)(2t+5) off n(n-1)(2n+5).
  std::vector<double> sorted = y;
  std::sort(sorted.begin(), sorted.end());
  double var = double(n) * double(n - 1) * double(2 * n + 5);
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && sorted[j] == sorted[i]) ++j;
    const double t = double(j - i);
    var -= t * (t - 1) * (2 * t + 5);
    i = j;
  }
  var /= 18.0;
  if (var <= 0) return 1.0;  // every value equal: no trend
  return std::erfc(std::abs(s) / std::sqrt(var) / std::sqrt(2.0));
}

double theil_sen_slope(const std::vector<double>& y) {
  std::vector<double> slopes;
  for (size_t i = 0; i < y.size(); ++i)
    for (size_t j = i + 1; j < y.size(); ++j) slopes.push_back((y[j] - y[i]) / double(j - i));
  return median_of(std::move(slopes));
}

uint64_t min_ops_per_slice() {
  return uint64_t(std::ceil(1.0 / std::min(kTrendMinChange, kClustersMinApart)));
}

double median_ops_per_slice(const std::vector<uint64_t>& ops) {
  return median_of(std::vector<double>(ops.begin(), ops.end()));
}

nlohmann::json make_series(const std::vector<uint64_t>& t_ns, const std::vector<uint64_t>& ops,
                           const std::vector<CoarseHistogram>& lat) {
  using nlohmann::json;
  const size_t n = ops.size();
  std::vector<double> rate(n), log_rate(n);
  json p50 = json::array(), p99 = json::array();
  for (size_t k = 0; k < n; ++k) {
    const double len_s = double(t_ns[k + 1] - t_ns[k]) * 1e-9;
    rate[k] = len_s > 0 ? double(ops[k]) / len_s : 0.0;
    // A slice with no op at all (a frozen side) counts as one op per second, so that its
    // logarithm stays finite and far below the others.
    log_rate[k] = std::log(std::max(rate[k], 1.0));
    const bool has = k < lat.size() && lat[k].count();
    p50.push_back(has ? json(lat[k].quantile(0.50)) : json(nullptr));
    p99.push_back(has ? json(lat[k].quantile(0.99)) : json(nullptr));
  }
  json flags = json::array();
  // The tests judge only slices that hold enough operations: a slice's count is a whole number,
  // so its rate is known to one op in ops[k], and below min_ops_per_slice() one op more or
  // fewer is already as large as the smallest change a flag reports.
  const bool judged = median_ops_per_slice(ops) >= double(min_ops_per_slice());
  // Trend: significant (p < 0.01) and large (the fitted change over the run above 10% of the
  // median rate) — a significant trend of a few percent is the machine's drift, not the run's.
  const double med = median_of(rate);
  const double p = mann_kendall_p(rate);
  const double slope_pct = med > 0 && n > 1 ? 100.0 * theil_sen_slope(rate) * double(n - 1) / med : 0.0;
  if (judged && p < 0.01 && std::abs(slope_pct) > 100.0 * kTrendMinChange)
    flags.push_back(flag_id(Flag::NonSteady));
  // Clusters, on the logarithms of the slice rates (a rate twice another is as far from it
  // whatever the scale; latency-bound runs included, whose rate is the inverse of their latency).
  json clusters = nullptr;
  const Split s = best_split(log_rate);
  if (s.found) {
    if (judged && is_bimodal(s)) flags.push_back(flag_id(Flag::Bimodal));
    clusters = {{"metric", "log_rate"},
                {"low", {{"slices", s.low_n}, {"median_rate_per_s", std::exp(s.low_median)}}},
                {"high", {{"slices", s.high_n}, {"median_rate_per_s", std::exp(s.high_median)}}},
                {"apart_pct", 100.0 * (std::exp(s.high_median - s.low_median) - 1)},
                {"gap_sd", s.pooled_sd > 0 ? json(s.gap / s.pooled_sd) : json(nullptr)}};
  }
  return {{"slices", n},         {"t_ns", t_ns},
          {"ops", ops},          {"rate_per_s", rate},
          {"p50_ns", p50},       {"p99_ns", p99},
          {"flags", flags},      {"trend", {{"slope_pct", slope_pct}, {"p", p}}},
          {"clusters", clusters}};
}

}  // namespace ipclab
