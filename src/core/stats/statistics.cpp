#include "core/stats/statistics.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

namespace ipclab {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double quantile_of(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[size_t(q * double(v.size() - 1))];
}

uint64_t seed_of(const std::string& name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

std::vector<std::array<double, 2>> bootstrap_median_ci(const std::vector<std::vector<double>>& columns,
                                                       uint64_t seed, int resamples, double level) {
  std::vector<std::array<double, 2>> out;
  if (columns.empty() || columns[0].empty() || resamples < 1) return out;
  const size_t n = columns[0].size();
  std::mt19937_64 rng(seed);
  std::vector<std::vector<double>> medians(columns.size());
  std::vector<size_t> rows(n);
  std::vector<double> draw(n);
  for (int b = 0; b < resamples; ++b) {
    // A plain modulo, as the runner's shuffle: one seed gives one interval everywhere.
    for (auto& r : rows) r = size_t(rng() % n);
    for (size_t c = 0; c < columns.size(); ++c) {
      for (size_t i = 0; i < n; ++i) draw[i] = columns[c][rows[i]];
      medians[c].push_back(median_of(draw));
    }
  }
  const double tail = (1 - level) / 2;
  for (auto& m : medians) out.push_back({quantile_of(m, tail), quantile_of(m, 1 - tail)});
  return out;
}

namespace {

/// The kernel counters of an aggregate: each figure per op (and each hardware figure) the median
/// over the ok repetitions that have it; scope and what was unavailable from the first of them.
nlohmann::json aggregate_kernel(const std::vector<Record>& reps) {
  std::vector<const nlohmann::json*> ks;
  for (auto& r : reps)
    if (r.status == Status::Ok && r.kernel.contains("per_op")) ks.push_back(&r.kernel);
  if (ks.empty()) return nlohmann::json::object();
  const nlohmann::json& first = *ks.front();
  nlohmann::json k = nlohmann::json::object();
  for (const char* key : {"scope", "unavailable", "hardware_unavailable"})
    if (first.contains(key)) k[key] = first[key];
  for (const char* section : {"per_op", "hardware"}) {
    if (!first.contains(section)) continue;
    k[section] = nlohmann::json::object();
    for (auto& [name, _] : first[section].items()) {
      std::vector<double> v;
      for (auto* r : ks)
        if (r->contains(section) && (*r)[section].value(name, nlohmann::json()).is_number())
          v.push_back((*r)[section][name].get<double>());
      if (!v.empty()) k[section][name] = median_of(v);
    }
  }
  return k;
}

// The aggregate before its figures: the first repetition's identity, none of one repetition's own
// (series, ci, flags, warnings, steal), the integrity counts of all, the kernel counters' medians
// (aggregate_kernel), and the status and error of the worst repetition that did not end ok.
// `ok`: the repetitions that did.
Record aggregate_frame(const std::vector<Record>& reps, std::vector<const Record*>& ok) {
  Record a = reps.front();
  a.run_type = "aggregate";
  a.aggregate_name = "median";
  a.repetition = int(reps.size());
  a.integrity = {};
  a.error.clear();
  a.status = Status::Ok;
  a.series = nullptr;  // a repetition's own
  a.ci = nullptr;
  a.flags = nlohmann::json::array();
  a.warnings = nlohmann::json::array();  // the repetitions' own
  a.steal.reset();
  // Kernel counters per op: medians of their own (aggregate_kernel).
  a.kernel = aggregate_kernel(reps);
  for (auto& r : reps) {
    a.integrity += r.integrity;
    if (r.status == Status::Ok)
      ok.push_back(&r);
    else if (a.status == Status::Ok || r.status == Status::Failed) {
      a.status = r.status;
      a.error = r.error;
    }
  }
  return a;
}

// The median over the ok repetitions of `f` of each.
template <class F>
double median_over(const std::vector<const Record*>& ok, F f) {
  std::vector<double> v;
  for (auto* r : ok) v.push_back(double(f(*r)));
  return median_of(v);
}

// Median time per op (`tpo`: each ok repetition's), expressed through wall and ops so every
// derived figure stays consistent; the CPU's figures as medians per op.
void median_counts(Record& a, const std::vector<const Record*>& ok, const std::vector<double>& tpo) {
  a.ops = uint64_t(median_over(ok, [](const Record& r) { return r.ops; }));
  a.bytes = uint64_t(median_over(ok, [](const Record& r) { return r.bytes; }));
  a.wall_s = median_of(tpo) * double(a.ops) * 1e-9;
  auto per_op = [&](auto f) {
    return median_over(ok, [&](const Record& r) { return r.ops ? f(r) / r.ops : 0; });
  };
  a.cpu.user_s = per_op([](const Record& r) { return r.cpu.user_s; }) * a.ops;
  a.cpu.sys_s = per_op([](const Record& r) { return r.cpu.sys_s; }) * a.ops;
  a.cpu.ctx_vol =
      int64_t(std::llround(per_op([](const Record& r) { return double(r.cpu.ctx_vol); }) * a.ops));
  a.cpu.ctx_invol =
      int64_t(std::llround(per_op([](const Record& r) { return double(r.cpu.ctx_invol); }) * a.ops));
  a.cpu.faults = int64_t(std::llround(per_op([](const Record& r) { return double(r.cpu.faults); }) * a.ops));
}

// Steal: the medians per op of the steal and of the windows' capacity (wall x CPUs), over the
// repetitions that measured it; steal_share is their ratio.
// The interrupts' time and the run-queue wait likewise: medians per op.
void median_interference(Record& a, const std::vector<const Record*>& ok) {
  std::vector<double> steal, capacity, resolution, irq, softirq, wait;
  for (auto* r : ok) {
    if (r->steal && r->ops) {
      steal.push_back(r->steal->steal_s / double(r->ops));
      capacity.push_back(r->steal->capacity_s / double(r->ops));
      resolution.push_back(r->steal->resolution_s / double(r->ops));
      irq.push_back(r->steal->irq_s / double(r->ops));
      softirq.push_back(r->steal->softirq_s / double(r->ops));
    }
    if (r->run_queue_wait_s && r->ops) wait.push_back(*r->run_queue_wait_s / double(r->ops));
  }
  a.run_queue_wait_s.reset();
  if (!wait.empty()) a.run_queue_wait_s = median_of(wait) * double(a.ops);
  if (!steal.empty()) {
    Steal s;
    s.steal_s = median_of(steal) * double(a.ops);
    s.irq_s = median_of(irq) * double(a.ops);
    s.softirq_s = median_of(softirq) * double(a.ops);
    s.capacity_s = median_of(capacity) * double(a.ops);
    s.resolution_s = median_of(resolution) * double(a.ops);
    for (auto* r : ok)
      if (r->steal) s.cpus = r->steal->cpus;
    a.steal = s;
  }
}

// Placement, extra and the latency histogram of the repetition whose time per op is the median
// one; every latency figure, as every other column, the median of the repetitions' (those that
// measured it), so that no row sets one repetition's p50 beside the medians of the rest.
void median_latency(Record& a, const std::vector<const Record*>& ok, const std::vector<double>& tpo) {
  const Record* mid = ok.front();
  double target = median_of(tpo);
  for (auto* r : ok)
    if (std::abs(r->time_per_op_ns() - target) < std::abs(mid->time_per_op_ns() - target)) mid = r;
  a.latency = mid->latency;
  if (a.latency) {
    std::vector<const Latency*> ls;
    for (auto* r : ok)
      if (r->latency && r->latency->count && r->latency->kind == a.latency->kind) ls.push_back(&*r->latency);
    auto lmed = [&](uint64_t Latency::*f) {
      std::vector<double> v;
      for (auto* l : ls) v.push_back(double(l->*f));
      return uint64_t(std::llround(median_of(v)));
    };
    if (!ls.empty()) {
      for (auto f : {&Latency::count, &Latency::min, &Latency::max, &Latency::p50, &Latency::p90,
                     &Latency::p95, &Latency::p99, &Latency::p999})
        (*a.latency).*f = lmed(f);
      std::vector<double> means;
      for (auto* l : ls) means.push_back(l->mean);
      a.latency->mean = median_of(means);
    }
  }
  a.placement = mid->placement;
  a.extra = mid->extra;
}

// The spread of the repetitions' times per op.
nlohmann::json time_per_op_spread(const std::vector<double>& tpo) {
  double mean = 0, sq = 0;
  for (double v : tpo) mean += v;
  mean /= double(tpo.size());
  for (double v : tpo) sq += (v - mean) * (v - mean);
  double sd = tpo.size() > 1 ? std::sqrt(sq / double(tpo.size() - 1)) : 0.0;
  return {{"metric", "time_per_op_ns"},
          {"min", *std::min_element(tpo.begin(), tpo.end())},
          {"max", *std::max_element(tpo.begin(), tpo.end())},
          {"stddev", sd},
          {"cv", mean > 0 ? sd / mean : 0.0},
          {"values", tpo}};
}

// Confidence intervals of the medians over 3 or more ok repetitions (null below); the latency
// quantiles' only when every ok repetition measured latency.
nlohmann::json median_ci(const std::vector<const Record*>& ok, const std::vector<double>& tpo,
                         const std::string& name) {
  if (ok.size() < 3) return nullptr;
  std::vector<std::vector<double>> cols{tpo, {}, {}};
  for (auto* r : ok)
    if (r->latency && r->latency->count) {
      cols[1].push_back(double(r->latency->p50));
      cols[2].push_back(double(r->latency->p99));
    }
  const bool lat = cols[1].size() == ok.size();
  if (!lat) cols.resize(1);
  constexpr int kResamples = 2000;
  const auto ci = bootstrap_median_ci(cols, seed_of(name), kResamples, 0.95);
  return {{"level", 0.95},
          {"method", "bootstrap-percentile"},
          {"resamples", kResamples},
          {"time_per_op_ns", ci[0]},
          {"p50_ns", lat ? nlohmann::json(ci[1]) : nlohmann::json(nullptr)},
          {"p99_ns", lat ? nlohmann::json(ci[2]) : nlohmann::json(nullptr)}};
}

// Flags: the record's own of every repetition (steal, short_window: facts of a window, which
// the median may be); the slice tests' (non_steady, bimodal) only where most ok repetitions
// carry them. Each test holds a false-alarm rate per window (p < 0.01 and the size rules), and
// a point's repetitions are three or more windows: their union flagged 9 of 146 medians on each
// of two runs of the default preset on one VM, only one of them on both, where a majority
// flags 1 and 2 — a drift or a second level seen in most windows is the point's, one seen once
// is that window's (the repetition keeps its flag: --verbose, results.json).
nlohmann::json aggregate_flags(const std::vector<const Record*>& ok, const std::vector<double>& tpo) {
  std::set<std::string> flags;
  std::map<std::string, size_t> slice_flags;
  for (auto* r : ok) {
    if (r->series.is_object())
      for (auto& f : r->series.value("flags", nlohmann::json::array())) ++slice_flags[f.get<std::string>()];
    if (r->flags.is_array())
      for (auto& f : r->flags)
        if (f.is_string()) flags.insert(f.get<std::string>());
  }
  for (auto& [f, n] : slice_flags)
    if (2 * n > ok.size()) flags.insert(f);
  std::vector<double> log_tpo;
  for (double v : tpo)
    if (v > 0) log_tpo.push_back(std::log(v));
  if (log_tpo.size() >= 6 && is_bimodal(best_split(log_tpo))) flags.insert(flag_id(Flag::BimodalRepetitions));
  nlohmann::json out = nlohmann::json::array();
  for (auto& f : flags) out.push_back(f);
  return out;
}

}  // namespace

Record aggregate_median(const std::vector<Record>& reps) {
  std::vector<const Record*> ok;
  Record a = aggregate_frame(reps, ok);
  if (ok.empty()) return a;
  std::vector<double> tpo;
  for (auto* r : ok) tpo.push_back(r->time_per_op_ns());
  median_counts(a, ok, tpo);
  median_interference(a, ok);
  a.rates = nlohmann::json::object();
  for (auto& [k, v] : ok.front()->rates.items())
    if (v.is_number()) a.rates[k] = median_over(ok, [&](const Record& r) { return r.rates.value(k, 0.0); });
  median_latency(a, ok, tpo);
  a.spread = time_per_op_spread(tpo);
  a.ci = median_ci(ok, tpo, a.name);
  a.flags = aggregate_flags(ok, tpo);
  return a;
}

Split best_split(std::vector<double> v, size_t min_side) {
  Split best;
  const size_t n = v.size();
  if (min_side < 1 || n < 2 * min_side) return best;
  std::sort(v.begin(), v.end());
  // Sums of squares within each side from prefix sums: SS = sum(x^2) - sum(x)^2 / k.
  std::vector<double> sum(n + 1, 0.0), sq(n + 1, 0.0);
  for (size_t i = 0; i < n; ++i) {
    sum[i + 1] = sum[i] + v[i];
    sq[i + 1] = sq[i] + v[i] * v[i];
  }
  auto ss = [&](size_t a, size_t b) {  // over v[a, b)
    const double k = double(b - a), s = sum[b] - sum[a];
    return std::max(0.0, sq[b] - sq[a] - s * s / k);
  };
  double least = INFINITY;
  size_t cut = 0;
  for (size_t i = min_side; i + min_side <= n; ++i) {
    const double within = ss(0, i) + ss(i, n);
    if (within < least) {
      least = within;
      cut = i;
    }
  }
  best.found = true;
  best.low_n = cut;
  best.high_n = n - cut;
  best.low_median = median_of({v.begin(), v.begin() + long(cut)});
  best.high_median = median_of({v.begin() + long(cut), v.end()});
  best.gap = v[cut] - v[cut - 1];
  best.pooled_sd = n > 2 ? std::sqrt(least / double(n - 2)) : 0.0;
  return best;
}

bool is_bimodal(const Split& s) {
  return s.found && std::exp(s.high_median - s.low_median) > 1 + kClustersMinApart && s.gap > 3 * s.pooled_sd;
}

}  // namespace ipclab
