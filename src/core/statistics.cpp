#include "core/statistics.hpp"

#include <algorithm>
#include <cmath>

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

}  // namespace

Record aggregate_median(const std::vector<Record>& reps) {
  Record a = reps.front();
  a.run_type = "aggregate";
  a.aggregate_name = "median";
  a.repetition = int(reps.size());
  a.integrity = {};
  a.error.clear();
  a.status = Status::Ok;
  // Kernel counters per op: medians of their own (aggregate_kernel).
  a.kernel = aggregate_kernel(reps);
  std::vector<const Record*> ok;
  for (auto& r : reps) {
    a.integrity += r.integrity;
    if (r.status == Status::Ok)
      ok.push_back(&r);
    else if (a.status == Status::Ok || r.status == Status::Failed) {
      a.status = r.status;
      a.error = r.error;
    }
  }
  if (ok.empty()) return a;
  auto med = [&](auto f) {
    std::vector<double> v;
    for (auto* r : ok) v.push_back(double(f(*r)));
    return median_of(v);
  };
  std::vector<double> tpo;
  for (auto* r : ok) tpo.push_back(r->time_per_op_ns());
  // Median time per op, expressed through wall and ops so every derived figure stays consistent.
  a.ops = uint64_t(med([](const Record& r) { return r.ops; }));
  a.bytes = uint64_t(med([](const Record& r) { return r.bytes; }));
  a.wall_s = median_of(tpo) * double(a.ops) * 1e-9;
  a.cpu.user_s = med([](const Record& r) { return r.ops ? r.cpu.user_s / r.ops : 0; }) * a.ops;
  a.cpu.sys_s = med([](const Record& r) { return r.ops ? r.cpu.sys_s / r.ops : 0; }) * a.ops;
  a.cpu.ctx_vol = int64_t(
      std::llround(med([](const Record& r) { return r.ops ? double(r.cpu.ctx_vol) / r.ops : 0; }) * a.ops));
  a.cpu.ctx_invol = int64_t(
      std::llround(med([](const Record& r) { return r.ops ? double(r.cpu.ctx_invol) / r.ops : 0; }) * a.ops));
  a.rates = nlohmann::json::object();
  for (auto& [k, v] : ok.front()->rates.items())
    if (v.is_number()) a.rates[k] = med([&](const Record& r) { return r.rates.value(k, 0.0); });
  // Latency and placement of the repetition whose time per op is the median one.
  const Record* mid = ok.front();
  double target = median_of(tpo);
  for (auto* r : ok)
    if (std::abs(r->time_per_op_ns() - target) < std::abs(mid->time_per_op_ns() - target)) mid = r;
  a.latency = mid->latency;
  a.placement = mid->placement;
  a.extra = mid->extra;
  double mean = 0, sq = 0;
  for (double v : tpo) mean += v;
  mean /= double(tpo.size());
  for (double v : tpo) sq += (v - mean) * (v - mean);
  double sd = tpo.size() > 1 ? std::sqrt(sq / double(tpo.size() - 1)) : 0.0;
  a.spread = {{"metric", "time_per_op_ns"},
              {"min", *std::min_element(tpo.begin(), tpo.end())},
              {"max", *std::max_element(tpo.begin(), tpo.end())},
              {"stddev", sd},
              {"cv", mean > 0 ? sd / mean : 0.0},
              {"values", tpo}};
  return a;
}

}  // namespace ipclab
