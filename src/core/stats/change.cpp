#include "core/stats/change.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "core/stats/statistics.hpp"

namespace ipclab {

namespace {

// The exact null distribution of U for sizes n1, n2 without ties: counts of each U value over
// every assignment of ranks (the recurrence of Mann and Whitney, 1947), normalised.
std::vector<double> exact_u_distribution(size_t n1, size_t n2) {
  // f[i][j][u]: ways for sizes i, j; f(i, j, u) = f(i-1, j, u-j) + f(i, j-1, u).
  const size_t top = n1 * n2;
  std::vector<std::vector<std::vector<double>>> f(n1 + 1, std::vector<std::vector<double>>(n2 + 1));
  for (size_t i = 0; i <= n1; ++i)
    for (size_t j = 0; j <= n2; ++j) {
      f[i][j].assign(i * j + 1, 0.0);
      if (i == 0 || j == 0) {
        f[i][j][0] = 1;
        continue;
      }
      for (size_t u = 0; u <= i * j; ++u)
        f[i][j][u] = (u >= j && u - j <= (i - 1) * j ? f[i - 1][j][u - j] : 0.0) +
                     (u <= i * (j - 1) ? f[i][j - 1][u] : 0.0);
    }
  std::vector<double> p = f[n1][n2];
  double all = 0;
  for (double c : p) all += c;
  for (double& c : p) c /= all;
  p.resize(top + 1);
  return p;
}

}  // namespace

double min_mann_whitney_p(size_t n1, size_t n2) {
  if (!n1 || !n2) return 1;
  double comb = 1;  // C(n1+n2, n1)
  for (size_t k = 1; k <= n1; ++k) comb = comb * double(n2 + k) / double(k);
  return std::min(1.0, 2.0 / comb);
}

double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b) {
  const size_t n1 = a.size(), n2 = b.size();
  if (!n1 || !n2) return 1;
  // Midranks over the pooled values, and the tie groups' sizes.
  std::vector<std::pair<double, int>> all;
  for (double v : a) all.emplace_back(v, 0);
  for (double v : b) all.emplace_back(v, 1);
  std::sort(all.begin(), all.end(), [](auto& x, auto& y) { return x.first < y.first; });
  const size_t n = all.size();
  double r1 = 0, ties = 0;
  bool tied = false;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && all[j].first == all[i].first) ++j;
    const double t = double(j - i), rank = (double(i + 1) + double(j)) / 2;
    for (size_t k = i; k < j; ++k)
      if (all[k].second == 0) r1 += rank;
    if (t > 1) tied = true, ties += t * t * t - t;
    i = j;
  }
  if (ties == double(n) * double(n) * double(n) - double(n)) return 1;  // every value equal
  const double u1 = r1 - double(n1) * double(n1 + 1) / 2, u2 = double(n1) * double(n2) - u1;
  const double u = std::max(u1, u2);
  if (n1 < 8 && n2 < 8 && !tied) {
    const auto dist = exact_u_distribution(n1, n2);
    double sf = 0;  // P(U >= u)
    for (size_t k = size_t(std::llround(u)); k < dist.size(); ++k) sf += dist[k];
    return std::min(1.0, 2 * sf);
  }
  const double mu = double(n1) * double(n2) / 2;
  const double var = double(n1) * double(n2) / 12 * ((double(n) + 1) - ties / (double(n) * double(n - 1)));
  if (var <= 0) return 1;
  const double z = (u - mu - 0.5) / std::sqrt(var);
  return std::min(1.0, std::erfc(z / std::sqrt(2.0)));
}

namespace {

// One run's spread as |ln ratio|: a robust standard deviation of its repetitions about their
// median (1.4826 × the median absolute deviation of their logarithms). Not compare.py's farthest
// repetition: one cold repetition of five would widen the band to whatever it missed by.
double side_spread(const std::vector<double>& v) {
  const double mid = median_of(v);
  if (mid <= 0) return 0;
  std::vector<double> dev;
  for (double x : v)
    if (x > 0) dev.push_back(std::abs(std::log(x / mid)));
  return 1.4826 * median_of(dev);
}

// The ratio of the medians' 95% percentile bootstrap interval: each side resampled on its own.
std::array<double, 2> ratio_ci(const std::vector<double>& base, const std::vector<double>& now,
                               uint64_t seed) {
  constexpr int kResamples = 2000;
  std::mt19937_64 rng(seed);
  std::vector<double> ratios, db(base.size()), dn(now.size());
  ratios.reserve(kResamples);
  for (int k = 0; k < kResamples; ++k) {
    for (auto& x : db) x = base[rng() % base.size()];
    for (auto& x : dn) x = now[rng() % now.size()];
    const double mb = median_of(db);
    if (mb > 0) ratios.push_back(median_of(dn) / mb);
  }
  if (ratios.empty()) return {0, 0};
  return {quantile_of(ratios, 0.025), quantile_of(ratios, 0.975)};
}

}  // namespace

MachineMove machine_move(const std::vector<std::pair<std::string, double>>& anchors,
                         const std::vector<double>& others, const std::string& placement, double threshold) {
  MachineMove m;
  for (auto& [name, r] : anchors)
    if (const double b = std::abs(r) + std::log1p(threshold); b > m.log)
      m = {b, fmt::format("{} moved ×{:.2f}", name, std::exp(std::abs(r)))};
  // 2.5 × the 75th percentile of |r - median r| over five or more other mechanisms (compare.py).
  if (others.size() >= 5) {
    const double centre = median_of(others);
    std::vector<double> dev;
    for (double r : others) dev.push_back(std::abs(r - centre));
    if (const double b = 2.5 * quantile_of(dev, 0.75); b > m.log)
      m = {b,
           placement == "same" || placement == "cross" ? placement + "-CPU spread" : placement + " spread"};
  }
  return m;
}

Change judge_change(const std::vector<double>& base, const std::vector<double>& now, bool higher_better,
                    const std::vector<double>& history, uint64_t seed, const MachineMove& moved,
                    double threshold, double alpha) {
  Change c;
  const double mb = median_of(base), mn = median_of(now);
  if (base.empty() || now.empty() || mb <= 0 || mn <= 0) {
    c.verdict = "no change";
    c.why = "no figure to compare";
    return c;
  }
  c.ratio = mn / mb;
  c.ci = ratio_ci(base, now, seed);
  c.p = mann_whitney_p(base, now);
  // The band: the benchmark's own history when it has enough runs, else the two runs' spread.
  double band = std::log1p(threshold);
  c.band_source = "threshold";
  if (history.size() >= kHistoryMinRuns) {
    std::vector<double> steps;
    for (size_t i = 1; i < history.size(); ++i)
      if (history[i] > 0 && history[i - 1] > 0)
        steps.push_back(std::abs(std::log(history[i] / history[i - 1])));
    if (!steps.empty() && 2.5 * quantile_of(steps, 0.75) > band) {
      band = 2.5 * quantile_of(steps, 0.75);
      c.band_source = fmt::format("its history over {} runs", history.size());
    }
  } else if (const double floor = 3 * std::max(side_spread(base), side_spread(now)); floor > band) {
    band = floor;
    c.band_source = "the runs' spread";
  }
  if (moved.log > band) {
    band = moved.log;
    c.band_source = moved.source;
  }
  c.band = std::expm1(band);
  const double r = std::abs(std::log(c.ratio));
  const std::string direction = (c.ratio > 1) != higher_better ? "slower" : "faster";
  if (r <= band + 1e-12) {
    c.verdict = "no change";
    c.why = fmt::format("within ±{:.1f}% ({})", c.band * 100, c.band_source);
  } else if (min_mann_whitney_p(base.size(), now.size()) >= alpha) {
    c.verdict = direction + "?";
    c.why = fmt::format("{} and {} repetitions cannot reach p < {:g}", base.size(), now.size(), alpha);
  } else if (c.p < alpha) {
    c.verdict = direction;
  } else {
    c.verdict = "no change";
    c.why = fmt::format("not significant, p = {:.2g}", c.p);
  }
  return c;
}

}  // namespace ipclab
