#include "core/runner.hpp"

#include <fnmatch.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.hpp"
#include "core/patterns.hpp"
#include "core/placement.hpp"

namespace ipclab {

namespace {

bool filter_matches(const std::string& filter, const Mechanism& m) {
  const std::string full = m.full_name();
  if (filter.find_first_of("*?[") != std::string::npos)
    return fnmatch(filter.c_str(), full.c_str(), 0) == 0 ||
           fnmatch(filter.c_str(), m.name.c_str(), 0) == 0;
  if (filter == m.suite || filter == full) return true;
  // A bare mechanism name selects mechanisms in every suite, unless it names a suite itself
  // (`runtime` is the runtime suite, not fileio/runtime and cachecalc/runtime too).
  if (filter == m.name) {
    for (auto& other : Registry::get().mechanisms())
      if (other.suite == filter) return false;
    return true;
  }
  return full.rfind(filter, 0) == 0 && (full.size() == filter.size() || full[filter.size()] == '/');
}

}  // namespace

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

std::vector<const Mechanism*> select_mechanisms(const std::vector<std::string>& filters) {
  std::vector<const Mechanism*> out;
  auto& all = Registry::get().mechanisms();
  for (auto& f : filters) {
    if (f.empty())
      throw UsageError("empty filter; give a suite, suite/mechanism or glob (see `ipclab list`), or none for all");
    if (printable(f) != f)
      throw UsageError(fmt::format("filter '{}' has control characters or bytes that are not UTF-8; "
                                   "filters are suite and mechanism names (see `ipclab list`)", f));
    bool any = false;
    for (auto& m : all)
      if (filter_matches(f, m)) any = true;
    if (!any)
      throw UsageError(fmt::format("no benchmark matches '{}'; see `ipclab list` for suites and mechanisms", f));
  }
  for (auto& m : all) {
    bool take = filters.empty();
    for (auto& f : filters) take = take || filter_matches(f, m);
    if (take) out.push_back(&m);
  }
  return out;
}

std::vector<PlannedBenchmark> plan(const std::vector<const Mechanism*>& mechs, Preset preset,
                                   const Overrides& overrides, const std::vector<int>& cpus) {
  std::set<std::string> known;
  for (auto* m : mechs)
    for (auto& p : m->params) known.insert(p.name);
  for (auto& [name, _] : overrides)
    if (!known.count(name))
      throw UsageError(fmt::format("unknown parameter '{}' for the selected benchmarks; see `ipclab list`", name));

  std::vector<PlannedBenchmark> out;
  std::string dropped;  // why the first impossible point was left out
  for (auto* m : mechs) {
    bool asked = false;
    for (auto& p : m->params) asked = asked || overrides.count(p.name);
    for (auto& point : expand_grid(m->params, preset, overrides)) {
      // A layout needs as many distinct CPUs as it places sides on; then the mechanism's own rules.
      std::string why = placement_problem(point.str_or("placement", "unpinned"), cpus);
      if (why.empty() && m->check) why = m->check(point);
      if (!why.empty()) {
        if (asked)
          throw UsageError(fmt::format("{}/{}: {}", m->full_name(), point.path(), why));
        if (dropped.empty()) dropped = fmt::format("{}/{}: {}", m->full_name(), point.path(), why);
        continue;
      }
      std::string name = m->full_name();
      if (!point.items().empty()) name += "/" + point.path();
      out.push_back({m, point, name});
    }
  }
  if (out.empty())
    throw UsageError(fmt::format("nothing to run: every combination is impossible here, e.g. {}", dropped));
  return out;
}

Record run_one(const PlannedBenchmark& b, const RunOptions& opts, int repetition) {
  Record rec;
  rec.name = b.name;
  rec.suite = b.mech->suite;
  rec.mechanism = b.mech->name;
  rec.params = b.params;
  rec.repetition = repetition;
  Session s(*b.mech, b.params, opts, rec);
  try {
    if (b.mech->transport) run_transport(s);
    else if (b.mech->loop) run_loop(s);
    else b.mech->workload(s);
  } catch (const UsageError&) {
    throw;
  } catch (const Skip& e) {
    rec.status = Status::Skipped;
    rec.error = e.what();
  } catch (const std::exception& e) {
    rec.fail(e.what());
  }
  if (rec.status == Status::Ok && !rec.integrity.clean())
    rec.fail(fmt::format("integrity: {} lost, {} duplicated, {} corrupt", rec.integrity.lost,
                         rec.integrity.duplicated, rec.integrity.corrupt));
  if (rec.status == Status::Ok && rec.ops == 0) rec.fail("no operation completed in the measured window");
  return rec;
}

Record aggregate_median(const std::vector<Record>& reps) {
  Record a = reps.front();
  a.run_type = "aggregate";
  a.aggregate_name = "median";
  a.repetition = int(reps.size());
  a.integrity = {};
  a.error.clear();
  a.status = Status::Ok;
  std::vector<const Record*> ok;
  for (auto& r : reps) {
    a.integrity += r.integrity;
    if (r.status == Status::Ok) ok.push_back(&r);
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
  a.cpu.ctx_vol = int64_t(std::llround(med([](const Record& r) { return r.ops ? double(r.cpu.ctx_vol) / r.ops : 0; }) * a.ops));
  a.cpu.ctx_invol = int64_t(std::llround(med([](const Record& r) { return r.ops ? double(r.cpu.ctx_invol) / r.ops : 0; }) * a.ops));
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
