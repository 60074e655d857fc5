#include "core/load/arrivals.hpp"

#include <immintrin.h>
#include <sys/prctl.h>

#include <cerrno>
#include <cmath>
#include <ctime>

#include "core/base/clock.hpp"
#include "core/base/error.hpp"

namespace ipclab {

ArrivalKind arrival_kind_of(const std::string& name) {
  if (name == "fixed") return ArrivalKind::Fixed;
  if (name == "poisson") return ArrivalKind::Poisson;
  throw UsageError("arrivals '" + name + "': use fixed or poisson");
}

Pace pace_of(const std::string& name) {
  if (name == "spin") return Pace::Spin;
  if (name == "sleep") return Pace::Sleep;
  if (name == "busy") return Pace::Busy;
  throw UsageError("pace '" + name + "': use spin, sleep or busy");
}

const char* name_of(ArrivalKind kind) { return kind == ArrivalKind::Fixed ? "fixed" : "poisson"; }

const char* name_of(Pace pace) {
  switch (pace) {
    case Pace::Spin:
      return "spin";
    case Pace::Sleep:
      return "sleep";
    case Pace::Busy:
      return "busy";
  }
  return "?";
}

Arrivals::Arrivals(ArrivalKind kind, double rate_per_s, uint64_t seed, uint64_t start_ns)
    : kind_(kind), gap_ns_(1e9 / rate_per_s), start_ns_(start_ns), t_ns_(double(start_ns)), rng_(seed) {
  if (!(rate_per_s > 0) || !std::isfinite(rate_per_s))
    throw UsageError("a rate must be a positive number of messages per second");
}

uint64_t Arrivals::next() {
  const uint64_t k = n_++;
  if (kind_ == ArrivalKind::Fixed) return start_ns_ + uint64_t(std::llround(double(k) * gap_ns_));
  // The first message is due at the start, as with fixed gaps; the gaps follow it.
  if (k > 0) t_ns_ += exp_(rng_) * gap_ns_;
  return uint64_t(t_ns_);
}

void least_timer_slack() {
  thread_local const bool slack_set = prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0) == 0;
  (void)slack_set;
}

namespace {
void sleep_until(uint64_t t_ns) {
  least_timer_slack();
  const timespec ts{.tv_sec = time_t(t_ns / 1'000'000'000u), .tv_nsec = long(t_ns % 1'000'000'000u)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}
}  // namespace

uint64_t pace_until(uint64_t due_ns, Pace pace, uint64_t margin_ns) {
  uint64_t now = now_ns();
  if (now >= due_ns) return now;
  if (pace == Pace::Sleep) {
    sleep_until(due_ns);
    return now_ns();
  }
  if (pace == Pace::Spin && due_ns - now > margin_ns) sleep_until(due_ns - margin_ns);
  while ((now = now_ns()) < due_ns) _mm_pause();
  return now;
}

void pace_alone(Arrivals& arrivals, Pace pace, uint64_t margin_ns, uint64_t until_ns, Histogram& late) {
  for (uint64_t due = arrivals.next(); due < until_ns; due = arrivals.next()) {
    const uint64_t at = pace_until(due, pace, margin_ns);
    late.record(at - due);
  }
}

void wakeup_lateness(uint64_t sleep_ns, uint64_t until_ns, uint64_t max_n, Histogram& late) {
  for (uint64_t n = 0; n < max_n; ++n) {
    const uint64_t asked = now_ns() + sleep_ns;
    if (asked > until_ns) break;
    sleep_until(asked);
    const uint64_t woke = now_ns();
    late.record(woke > asked ? woke - asked : 0);
  }
}

}  // namespace ipclab
