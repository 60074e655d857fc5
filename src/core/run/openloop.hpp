#pragma once
// Open-loop load (pattern=rate), written once for every suite that offers it (messaging, echo,
// servers): the parameters read once, what senders and receivers keep in their worker slots, the
// saturation rule, the rate record (docs/json-schema.md, `extra.rate`) and the capacity search
// (rate=auto, `extra.capacity`).
//
// A sender draws each message's intended send time from Arrivals and waits for it (pace_until);
// the message carries that time. Latency is then measured from the intended time — the delay a
// user sending on that schedule would see, coordinated omission corrected — into the worker's own
// histogram (the record's latency), from the actual send time (raw), and the sender's lateness
// (actual − intended) as the scheduling error.
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "core/base/params.hpp"
#include "core/load/arrivals.hpp"
#include "core/load/rate_trace.hpp"
#include "core/stats/histogram.hpp"

namespace ipclab {

class Session;
struct Record;
struct WorkerResult;  // core/measure/session.hpp
struct RateSpec;

/// A lateness distribution's summary (ns), for the record.
struct LateStats {
  uint64_t count = 0, p50 = 0, p99 = 0, p999 = 0, max = 0;
  double mean = 0;
  static LateStats of(const Histogram& h);
};

/// What the machine allows a sender's pacing, measured before an open-loop run on the sender's CPU
/// (pacing_floor): the pacing loop alone (pace_alone) — the same Arrivals and pace_until, pace,
/// schedule (per sender) and seed as the senders, nothing sent — for a short fixed time. With
/// pace=spin it first measures the wake-up lateness of absolute sleeps of the schedule's gap
/// (wakeup_lateness), and the spin margin is its p99.9: the sleep ends before the send time in all
/// but ~1 wait in 1000, and the spin meets the time. Plain data, copied into the senders.
struct PacingFloor {
  int cpu = -1;            // where it was measured (-1: unpinned)
  double rate_per_s = 0;   // per sender
  double duration_s = 0;   // of the floor loop
  uint64_t margin_ns = 0;  // spin: the calibrated margin (the wake-up p99.9); 0 for sleep and busy
  LateStats wakeup;        // spin: the wake-up calibration (empty for sleep and busy)
  LateStats lateness;      // the floor loop's lateness (actual − intended)
};

/// Measures the floor for `spec`'s pace and arrivals at `rate_per_sender` on `cpu` (the calling
/// thread pinned there meanwhile), once per process for each (rate per sender, pace, arrivals,
/// seed, CPU): later calls return the first measurement.
PacingFloor pacing_floor(const RateSpec& spec, double rate_per_sender, int cpu);

/// The floor as the record states it (`extra.rate.pacing_floor`): cpu, rate_per_s, duration_s,
/// pace, lateness_ns {count, p50, p99, p999, max, mean}; with pace=spin margin_ns and wakeup_ns.
nlohmann::json to_json(const PacingFloor& floor, Pace pace);

/// The rule that flags a point's scheduling error as beyond what pacing alone allows: its p99
/// above twice the floor's p99.9 and above the floor's p99 by more than 1 us (the target of a
/// sender's pacing). True: the sender lost time to something besides its pacing — its transport,
/// its own work between sends, or the machine while the point ran.
bool sched_error_over_floor(const LateStats& achieved, const LateStats& floor);

struct RateSpec {
  int64_t rate = 0;  // per second, all senders together; 0 when searching
  bool search = false;
  double slo_p99_us = 0;  // search only: the bound given, or 0 to derive it (slo_p99_us=unloaded)
  ArrivalKind arrivals = ArrivalKind::Fixed;
  Pace pace = Pace::Spin;
  uint64_t seed = 1;

  /// The open-loop parameters of a pattern=rate point (std_params::rate_params).
  static RateSpec of(const Params& p);
  /// The pacing floor of this point (measure_floor); its margin_ns is the senders' spin margin.
  PacingFloor floor;

  /// Sender `index` of `senders`: an equal share of `rate`, its own seed (seed + index).
  Arrivals arrivals_for(int64_t rate, int index, int senders, uint64_t start_ns) const;
  /// Before a point's run: the floor of one sender of `senders` at `rate`, on the senders' `cpu`.
  void measure_floor(int64_t rate, int senders, int cpu);
  /// Waits for `due_ns` as this point's senders do (pace_until with the calibrated margin).
  uint64_t pace_until(uint64_t due_ns) const { return ipclab::pace_until(due_ns, pace, floor.margin_ns); }
};

/// One point's outcome, as the capacity search reads it.
struct RatePoint {
  double requested = 0, achieved = 0;
  bool saturated = false;
  double p50_us = 0, p99_us = 0, p999_us = 0;  // corrected; 0 when saturated
};

/// After Session::run_workers of an open-loop run at `rate`: folds the workers' traces (slots
/// 0..n-1) into `rec` as `extra.rate`, and applies the saturation rule — a point whose senders
/// sent more than 1% fewer messages than their schedules made due inside the window (the achieved
/// rate short of the request; counted against the schedule itself, so that a Poisson window's
/// own spread is no shortfall), or whose backlog grew through the window, is saturated: its
/// latency is removed from the record (never a latency figure). `cause`: a reason the caller
/// knows the point is saturated (e.g. sessions due beyond a suite's cap were not started), which
/// comes before the rule's own; empty: the rule alone. `far`: the receivers' trace when they ran on
/// another host (--remote), folded as one more slot's.
RatePoint fold_rate(Record& rec, const RateSpec& spec, int64_t rate, std::span<const WorkerResult> slots,
                    int n, const std::string& cause = {}, const RateTrace* far = nullptr);

/// Runs one open-loop point at `rate` on a session (run_workers and fold_rate included).
using RatePointFn = std::function<RatePoint(Session&, int64_t rate)>;

/// pattern=rate: one point at the requested rate on `s`, or with rate=auto the capacity search —
/// the highest rate whose corrected p99 stays within the SLO and that is not saturated: doubling
/// from 1000/s (halving below it) over short trials, bisection to within 5%, then a full-length
/// confirming run on `s` (stepping down when it misses); every trial is recorded in
/// `extra.capacity`. The SLO is slo_p99_us when given; by default (slo_p99_us=unloaded)
/// kSloFactor × the transport's own unloaded p99 — that of the first trial, at 1000/s (or the first
/// below it that is not saturated) — stated in `extra.capacity.slo_basis`.
constexpr double kSloFactor = 3;
void run_rate(Session& s, const RatePointFn& point);

}  // namespace ipclab
