#pragma once
// Open-loop load (pattern=rate): when each message of a sender is due, and the wait until then.
// A sender draws its intended send times from Arrivals — fixed gaps of 1/rate, or Poisson
// arrivals (exponential gaps of mean 1/rate from a seeded generator, so a run can be repeated) —
// and waits for each with pace_until. What it does with a late send time is its caller's: the
// message is sent at once and carries its intended time, so the receiver measures the latency a
// user would see from the intended time (coordinated omission corrected) as well as from the
// actual one, and the lateness is the scheduling error.
#include <cstdint>
#include <random>
#include <string>

#include "core/stats/histogram.hpp"

namespace ipclab {

enum class ArrivalKind { Fixed, Poisson };
enum class Pace { Spin, Sleep, Busy };

/// "fixed" / "poisson" and "spin" / "sleep"; anything else is a UsageError naming the choices.
ArrivalKind arrival_kind_of(const std::string& name);
Pace pace_of(const std::string& name);
/// The names those read, for the record.
const char* name_of(ArrivalKind kind);
const char* name_of(Pace pace);

/// The intended send times of one sender at `rate_per_s` messages per second, from `start_ns`
/// (now_ns's clock). Fixed times are computed from their index, so they do not drift; Poisson
/// times accumulate exponential gaps drawn from `seed`.
class Arrivals {
 public:
  Arrivals(ArrivalKind kind, double rate_per_s, uint64_t seed, uint64_t start_ns);
  /// The intended time of the next message.
  uint64_t next();
  /// Messages whose times next() has given.
  uint64_t count() const { return n_; }

 private:
  ArrivalKind kind_;
  double gap_ns_;
  uint64_t start_ns_;
  double t_ns_;  // Poisson: the last time, as a real number so that sub-ns gaps add up
  uint64_t n_ = 0;
  std::mt19937_64 rng_;
  std::exponential_distribution<double> exp_{1.0};
};

/// Sets the calling thread's timer slack to the least (1 ns), once per thread: a normal thread's
/// timers may fire up to its slack late (50 us by default), which would be every paced send's
/// lateness. pace_until calls it; an event loop that paces with its own timed waits calls it too.
void least_timer_slack();

/// Waits until `due_ns` and returns now_ns() once there (or at once, if it has passed: the caller
/// is late by the difference). Sleep: one absolute clock_nanosleep (the calling thread's timer
/// slack set to 1 ns on its first sleep), the wake-up's own delay included in the lateness. Spin:
/// an absolute sleep until `margin_ns` before the time, then a spin on the clock with pause; the
/// margin is the machine's wake-up lateness, measured (open loop: PacingFloor::margin_ns, from
/// wakeup_lateness), so that the sleep ends before the time and the spin meets it; the last
/// `margin_ns` of every gap costs CPU, which the sender's CPU shows. Busy: the spin over the whole
/// gap — no sleep, so no wake-up delay, at the cost of a whole CPU. `margin_ns` is read by Spin only.
uint64_t pace_until(uint64_t due_ns, Pace pace, uint64_t margin_ns);

/// The pacing loop alone — a sender's wait for each send time, with nothing sent: from the next
/// time of `arrivals` until `until_ns` (now_ns's clock), waits with pace_until and records each
/// lateness (the time it returned − the intended time) into `late`. What pacing costs on this CPU
/// at this schedule, with no transport beside it: the floor under a sender's scheduling error.
void pace_alone(Arrivals& arrivals, Pace pace, uint64_t margin_ns, uint64_t until_ns, Histogram& late);

/// The wake-up lateness of the absolute sleeps pace_until does: sleeps of `sleep_ns` each, one
/// after another, until `until_ns` or `max_n` of them, each one's lateness (woken − asked) into
/// `late`.
void wakeup_lateness(uint64_t sleep_ns, uint64_t until_ns, uint64_t max_n, Histogram& late);

}  // namespace ipclab
