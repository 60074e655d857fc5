#include "core/run/openloop.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>

#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/machine/placement.hpp"
#include "core/measure/session.hpp"
#include "core/stats/record.hpp"

namespace ipclab {

namespace {

// The capacity search's bounds and steps.
constexpr int64_t kSearchStart = 1000, kSearchFloor = 10, kSearchCeiling = 100'000'000;
constexpr double kSearchPrecision = 1.05;  // bisection ends when hi / lo is within this
constexpr int kMaxTrials = 40;
constexpr int kConfirmAttempts = 3;
constexpr double kTrialDuration_s = 0.5, kTrialWarmup_s = 0.1;

// The pacing floor's measurement: the floor loop runs for 1000 of the schedule's gaps, within
// [100, 200] ms; the wake-up calibration (pace=spin) for up to 100 ms or 2000 sleeps of the gap,
// each at most 1 ms (a sender's sleeps are shorter than its gap; longer ones only make the
// calibration slow).
constexpr uint64_t kFloorMinNs = 100'000'000, kFloorMaxNs = 200'000'000, kFloorGaps = 1000;
constexpr uint64_t kWakeNs = 100'000'000, kWakeMaxSleeps = 2000, kWakeLongestSleepNs = 1'000'000;

nlohmann::json late_json(const LateStats& l) {
  return {{"count", l.count}, {"p50", l.p50}, {"p99", l.p99},
          {"p999", l.p999},   {"max", l.max}, {"mean", l.mean}};
}

PacingFloor measure_pacing_floor(const RateSpec& spec, double rate_per_sender, int cpu) {
  ScopedPin pin(cpu);
  PacingFloor f;
  f.cpu = cpu;
  f.rate_per_s = rate_per_sender;
  const double gap_ns = 1e9 / rate_per_sender;
  if (spec.pace == Pace::Spin) {
    auto wake = std::make_unique<Histogram>();
    const auto sleep_ns = uint64_t(std::min(gap_ns, double(kWakeLongestSleepNs)));
    wakeup_lateness(std::max<uint64_t>(1, sleep_ns), now_ns() + kWakeNs, kWakeMaxSleeps, *wake);
    f.wakeup = LateStats::of(*wake);
    f.margin_ns = f.wakeup.p999;
  }
  const auto floor_ns = std::clamp(uint64_t(gap_ns * double(kFloorGaps)), kFloorMinNs, kFloorMaxNs);
  auto late = std::make_unique<Histogram>();
  const uint64_t start = now_ns();
  Arrivals arrivals(spec.arrivals, rate_per_sender, spec.seed, start);
  pace_alone(arrivals, spec.pace, f.margin_ns, start + floor_ns, *late);
  f.duration_s = double(floor_ns) / 1e9;
  f.lateness = LateStats::of(*late);
  return f;
}

}  // namespace

nlohmann::json to_json(const PacingFloor& f, Pace pace) {
  nlohmann::json pf = {{"cpu", f.cpu},
                       {"rate_per_s", f.rate_per_s},
                       {"duration_s", f.duration_s},
                       {"pace", name_of(pace)},
                       {"lateness_ns", late_json(f.lateness)}};
  if (pace == Pace::Spin) {
    pf["margin_ns"] = f.margin_ns;
    pf["wakeup_ns"] = late_json(f.wakeup);
  }
  return pf;
}

LateStats LateStats::of(const Histogram& h) {
  return {.count = h.count(),
          .p50 = h.quantile(0.5),
          .p99 = h.quantile(0.99),
          .p999 = h.quantile(0.999),
          .max = h.max(),
          .mean = h.mean()};
}

PacingFloor pacing_floor(const RateSpec& spec, double rate_per_sender, int cpu) {
  using Key = std::tuple<double, Pace, ArrivalKind, uint64_t, int>;
  static std::mutex mu;
  static std::map<Key, PacingFloor> cache;
  const Key key{rate_per_sender, spec.pace, spec.arrivals, spec.seed, cpu};
  std::lock_guard lock(mu);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  return cache[key] = measure_pacing_floor(spec, rate_per_sender, cpu);
}

bool sched_error_over_floor(const LateStats& achieved, const LateStats& floor) {
  if (!achieved.count || !floor.count) return false;
  return double(achieved.p99) > 2.0 * double(floor.p999) && achieved.p99 > floor.p99 + 1000;
}

void RateSpec::measure_floor(int64_t rate, int senders, int cpu) {
  floor = pacing_floor(*this, double(rate) / double(std::max(1, senders)), cpu);
}

RateSpec RateSpec::of(const Params& p) {
  RateSpec r;
  const std::string& rate = p.str("rate");
  r.search = rate == "auto";
  if (r.search) {
    if (p.str("slo_p99_us") != "unloaded") r.slo_p99_us = p.f64("slo_p99_us");
  } else {
    auto v = parse_rate(rate);
    if (!v) throw UsageError(fmt::format("rate '{}': give a rate per second such as 10k, or auto", rate));
    r.rate = *v;
  }
  r.arrivals = arrival_kind_of(p.str("arrivals"));
  r.pace = pace_of(p.str("pace"));
  r.seed = uint64_t(p.i64("seed"));
  return r;
}

Arrivals RateSpec::arrivals_for(int64_t rate, int index, int senders, uint64_t start_ns) const {
  return Arrivals(arrivals, double(rate) / double(std::max(1, senders)), seed + uint64_t(index), start_ns);
}

RatePoint fold_rate(Record& rec, const RateSpec& spec, int64_t rate, WorkerResults slots, int n,
                    const std::string& cause, const RateTrace* far) {
  // Its histograms are large (tens of KiB): on the heap, not the stack.
  auto all = std::make_unique<RateTrace>();
  for (int i = 0; i < n; ++i) all->merge(slots[i].rate);
  if (far) all->merge(*far);
  const Histogram &raw = all->raw, &late = all->lateness;
  const uint64_t sent = all->sent, overdue = all->overdue;
  RatePoint pt;
  pt.requested = double(rate);
  pt.achieved = rec.wall_s > 0 ? double(sent) / rec.wall_s : 0.0;

  // Backlog: the mean corrected latency of the window's quarters (of the messages by their
  // intended times). A queue that keeps up returns to its mean; one that does not grows by
  // (offered − served) × time, quarter after quarter. Growing: each quarter's mean above the one
  // before, the last more than double the first and by more than 1 ms — so that the noise of a few
  // sessions per quarter, or one stall late in the window, is no backlog.
  double q_sum[4] = {}, q_n[4] = {};
  for (int k = 0; k < RateTrace::kSlices; ++k) {
    q_sum[k * 4 / RateTrace::kSlices] += double(all->slice_sum[k]);
    q_n[k * 4 / RateTrace::kSlices] += double(all->slice_n[k]);
  }
  double q_mean[4];
  for (int k = 0; k < 4; ++k) q_mean[k] = q_n[k] > 0 ? q_sum[k] / q_n[k] : 0.0;
  const bool quarters = q_n[0] > 0 && q_n[1] > 0 && q_n[2] > 0 && q_n[3] > 0;
  const double growth_ns = quarters ? q_mean[3] - q_mean[0] : 0.0;
  const bool growing = quarters && growth_ns > std::max(1e6, q_mean[0]) && q_mean[1] > q_mean[0] &&
                       q_mean[2] > q_mean[1] && q_mean[3] > q_mean[2];

  // The caller's cause, known to it alone, comes first. Short: by more than 1% of what was due,
  // and by more than the one message a window's edge can cost.
  const uint64_t due = sent + overdue;
  const bool short_of_due = !(rec.wall_s > 0) || !sent || double(overdue) > 0.01 * double(due) + 1;
  std::string why = cause;
  if (why.empty() && short_of_due)
    why = fmt::format("achieved {:.0f}/s of {}/s: {} of {} due not sent", pt.achieved, rate, overdue, due);
  else if (why.empty() && growing)
    why = fmt::format("backlog grew: corrected latency +{:.2f} ms over the window", growth_ns / 1e6);
  pt.saturated = !why.empty();

  nlohmann::json r = {{"requested_per_s", pt.requested},
                      {"achieved_per_s", pt.achieved},
                      {"due", due},
                      {"sent", sent},
                      {"arrivals", name_of(spec.arrivals)},
                      {"pace", name_of(spec.pace)},
                      {"seed", spec.seed},
                      {"saturated", pt.saturated},
                      {"saturation", why},
                      {"backlog_growth_us", growth_ns / 1e3}};
  const std::string kind = rec.latency ? rec.latency->kind : "one_way";
  r["raw_ns"] = pt.saturated || !raw.count() ? nlohmann::json(nullptr) : to_json(Latency::from(kind, raw));
  r["sched_error_ns"] = to_json(Latency::from("sched_error", late));
  // Beside it, what pacing alone allowed on the sender's CPU just before (absent when no floor was
  // measured: a point whose senders are not paced by the harness).
  if (spec.floor.lateness.count) {
    const PacingFloor& f = spec.floor;
    r["pacing_floor"] = to_json(f, spec.pace);
    r["sched_error_over_floor"] = sched_error_over_floor(LateStats::of(late), f.lateness);
  }
  rec.extra["rate"] = r;
  if (pt.saturated) {
    rec.latency.reset();  // a saturated point is never a latency figure
  } else if (rec.latency) {
    pt.p50_us = double(rec.latency->p50) / 1e3;
    pt.p99_us = double(rec.latency->p99) / 1e3;
    pt.p999_us = double(rec.latency->p999) / 1e3;
  }
  return pt;
}

namespace {

// pattern=rate with rate=auto, in its named steps: short trials, each a session of its own with a
// record of its own; the bound (given, or from the unloaded trial); the bracket, doubling or
// halving from kSearchStart; the bisection; the confirming run on the session's own record.
class CapacitySearch {
 public:
  CapacitySearch(Session& s, const RatePointFn& point, const RateSpec& spec)
      : s_(s), point_(point), trial_opts_(s.options()), slo_us_(spec.slo_p99_us) {
    trial_opts_.duration_s = std::min(trial_opts_.duration_s, kTrialDuration_s);
    trial_opts_.warmup_s = std::min(trial_opts_.warmup_s, kTrialWarmup_s);
  }

  void run() {
    if (!(slo_us_ > 0) && !unloaded_bound()) return;
    const auto [lo, hi] = bracket();
    const int64_t capacity = bisect(lo, hi);
    if (failed_) return;
    confirm(capacity);
  }

 private:
  bool meets(const RatePoint& p) const { return !p.saturated && p.p99_us <= slo_us_; }
  // A trial (or the confirming run) in extra.capacity.trials.
  void entry(const RatePoint& p, double duration_s) {
    auto us = [&](double v) { return p.saturated ? nlohmann::json(nullptr) : nlohmann::json(v); };
    trials_.push_back({{"requested_per_s", p.requested},
                       {"achieved_per_s", p.achieved},
                       {"p50_us", us(p.p50_us)},
                       {"p99_us", us(p.p99_us)},
                       {"p999_us", us(p.p999_us)},
                       {"saturated", p.saturated},
                       {"meets_slo", meets(p)},
                       {"duration_s", duration_s}});
  }
  // One trial at `rate`, in a session of its own. Each rate is tried once: the unloaded trial is
  // also the search's first. A failed trial fails the record; nothing then.
  std::optional<RatePoint> run_trial(int64_t rate) {
    if (auto it = tried_.find(rate); it != tried_.end()) return it->second;
    Record rec;
    rec.name = s_.record().name;
    rec.suite = s_.record().suite;
    rec.mechanism = s_.record().mechanism;
    rec.params = s_.record().params;
    RatePoint p;
    {
      Session t(s_.mechanism(), s_.params(), trial_opts_, rec);
      p = point_(t, rate);
    }
    if (rec.status == Status::Failed) {
      s_.record().fail(fmt::format("capacity search, trial at {}/s: {}", rate, rec.error));
      failed_ = true;
      return std::nullopt;
    }
    return tried_[rate] = p;
  }
  // A trial of the search: recorded; whether it met the bound.
  bool trial(int64_t rate) {
    const auto p = run_trial(rate);
    if (!p) return false;
    entry(*p, trial_opts_.duration_s);
    return meets(*p);
  }
  // The transport's own p99 when nothing queues: the first trial, at the search's start or the
  // first rate below it that is not saturated. The bound is kSloFactor times it: a capacity is
  // then the load at which queueing has tripled the tail, whatever the transport's (and the
  // machine's) unloaded tail is. False when the search ends here: a trial failed, or every rate is
  // saturated (the record is then the full-length run at the lowest rate).
  bool unloaded_bound() {
    for (int64_t r = kSearchStart; !failed_ && r >= kSearchFloor; r /= 2) {
      const auto p = run_trial(r);
      if (p && !p->saturated && p->p99_us > 0) {
        slo_us_ = kSloFactor * p->p99_us;
        slo_basis_ = fmt::format("{:g} x unloaded p99 ({:.2f} us at {}/s)", kSloFactor, p->p99_us, r);
        unloaded_ = {{"rate_per_s", r}, {"p50_us", p->p50_us}, {"p99_us", p->p99_us}};
        break;
      }
    }
    if (failed_) return false;
    if (slo_us_ > 0) return true;
    for (auto it = tried_.rbegin(); it != tried_.rend(); ++it) entry(it->second, trial_opts_.duration_s);
    s_.record().extra["capacity"] = {
        {"slo_p99_us", nullptr},
        {"slo_basis",
         fmt::format("none: saturated at every rate from {}/s down to {}/s", kSearchStart, kSearchFloor)},
        {"unloaded", nullptr},
        {"capacity_per_s", 0.0},
        {"confirmed", false},
        {"trials", trials_}};
    // The record itself: the full-length run at the lowest rate, saturated as its trial was.
    point_(s_, kSearchFloor);
    return false;
  }
  // The bracket [lo, hi): lo met the bound (0: none yet), hi did not (0: none yet) — doubling from
  // kSearchStart while it meets it, else halving until it does.
  std::pair<int64_t, int64_t> bracket() {
    int64_t lo = 0, hi = 0;
    if (trial(kSearchStart)) {
      lo = kSearchStart;
      while (!failed_ && ++walked_ < kMaxTrials && lo * 2 <= kSearchCeiling) {
        if (trial(lo * 2)) {
          lo *= 2;
        } else {
          hi = lo * 2;
          break;
        }
      }
    } else {
      hi = kSearchStart;
      while (!failed_ && ++walked_ < kMaxTrials && hi / 2 >= kSearchFloor) {
        if (trial(hi / 2)) {
          lo = hi / 2;
          break;
        }
        hi /= 2;
      }
    }
    return {lo, hi};
  }
  // Bisection of the bracket, geometric, to within kSearchPrecision: the highest rate met (0: none).
  int64_t bisect(int64_t lo, int64_t hi) {
    while (!failed_ && lo > 0 && hi > 0 && double(hi) > double(lo) * kSearchPrecision &&
           ++walked_ < kMaxTrials) {
      const auto mid = int64_t(std::llround(std::sqrt(double(lo) * double(hi))));
      if (trial(mid))
        lo = mid;
      else
        hi = mid;
    }
    return lo;
  }
  // The confirming run: full length on the session's own record; when it misses, step down
  // (each attempt on a fresh copy of the record, so that nothing of a missed one remains).
  void confirm(int64_t lo) {
    const Record pristine = s_.record();
    bool confirmed = false;
    int64_t rate = lo > 0 ? lo : kSearchFloor;
    for (int attempt = 0; attempt < kConfirmAttempts; ++attempt) {
      if (attempt > 0) s_.record() = pristine;
      const RatePoint p = point_(s_, rate);
      entry(p, s_.options().duration_s);
      if (s_.record().status == Status::Failed) break;
      confirmed = lo > 0 && meets(p);
      if (confirmed || lo == 0 || attempt + 1 == kConfirmAttempts) break;
      rate = std::max<int64_t>(kSearchFloor, int64_t(double(rate) * 0.9));
    }
    s_.record().extra["capacity"] = {
        {"slo_p99_us", slo_us_},  {"slo_basis", slo_basis_},
        {"unloaded", unloaded_},  {"capacity_per_s", confirmed ? double(rate) : double(lo)},
        {"confirmed", confirmed}, {"trials", trials_}};
  }

  Session& s_;
  const RatePointFn& point_;
  RunOptions trial_opts_;
  double slo_us_;  // the bound: given, or derived from the first trial (unloaded_bound)
  std::string slo_basis_ = "given";
  nlohmann::json unloaded_ = nullptr;
  nlohmann::json trials_ = nlohmann::json::array();
  std::map<int64_t, RatePoint> tried_;
  bool failed_ = false;
  int walked_ = 0;
};

}  // namespace

void run_rate(Session& s, const RatePointFn& point) {
  const RateSpec spec = RateSpec::of(s.params());
  if (!spec.search) {
    point(s, spec.rate);
    return;
  }
  CapacitySearch(s, point, spec).run();
}

}  // namespace ipclab
