// Open-loop arrivals and pacing (core/load/arrivals): the schedule's arithmetic and statistics, and that
// a paced wait never returns before its time. (How close to the time it returns is a figure for
// the benchmarks, not a unit test.)
#include "core/load/arrivals.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "core/base/clock.hpp"
#include "core/base/error.hpp"

namespace ipclab {
namespace {

TEST(Arrivals, FixedTimesComeFromTheirIndexWithoutDrift) {
  // 3 per second: a gap of 333,333,333.3 ns. Summing rounded gaps would drift by 1 ns every
  // three messages; from the index, every third lands on a whole second.
  Arrivals a(ArrivalKind::Fixed, 3, 1, 1000);
  std::vector<uint64_t> t;
  for (int i = 0; i < 3001; ++i) t.push_back(a.next());
  EXPECT_EQ(t[0], 1000u);
  EXPECT_EQ(t[1], 1000u + 333'333'333u);
  EXPECT_EQ(t[3], 1000u + 1'000'000'000u);
  EXPECT_EQ(t[3000], 1000u + 1'000'000'000'000u);
  EXPECT_EQ(a.count(), 3001u);
}

TEST(Arrivals, PoissonGapsAreExponentialWithTheRatesMean) {
  const double rate = 50'000;  // mean gap 20 us
  Arrivals a(ArrivalKind::Poisson, rate, 42, 0);
  const int n = 200'000;
  uint64_t prev = a.next();
  EXPECT_EQ(prev, 0u);  // the first message is due at the start
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    const uint64_t t = a.next();
    ASSERT_GE(t, prev);
    const double gap = double(t - prev);
    sum += gap;
    sum2 += gap * gap;
    prev = t;
  }
  const double mean = sum / n, sd = std::sqrt(sum2 / n - mean * mean);
  EXPECT_NEAR(mean, 1e9 / rate, 0.01 * 1e9 / rate);  // standard error ~0.22%
  EXPECT_NEAR(sd / mean, 1.0, 0.02);                 // an exponential's coefficient of variation
}

TEST(Arrivals, APoissonScheduleRepeatsForItsSeed) {
  Arrivals a(ArrivalKind::Poisson, 1000, 7, 5), b(ArrivalKind::Poisson, 1000, 7, 5),
      c(ArrivalKind::Poisson, 1000, 8, 5);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const uint64_t ta = a.next(), tc = c.next();
    EXPECT_EQ(ta, b.next());
    differs = differs || ta != tc;
  }
  EXPECT_TRUE(differs);
}

TEST(Arrivals, ARateMustBePositiveAndFinite) {
  for (double bad :
       {0.0, -1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()})
    EXPECT_THROW(Arrivals(ArrivalKind::Fixed, bad, 1, 0), UsageError) << bad;
}

TEST(Arrivals, KindsAndPacesByName) {
  EXPECT_EQ(arrival_kind_of("fixed"), ArrivalKind::Fixed);
  EXPECT_EQ(arrival_kind_of("poisson"), ArrivalKind::Poisson);
  EXPECT_THROW(arrival_kind_of("uniform"), UsageError);
  EXPECT_EQ(pace_of("spin"), Pace::Spin);
  EXPECT_EQ(pace_of("sleep"), Pace::Sleep);
  EXPECT_EQ(pace_of("busy"), Pace::Busy);
  EXPECT_THROW(pace_of("yield"), UsageError);
}

TEST(PaceUntil, NeverReturnsBeforeItsTime) {
  for (Pace pace : {Pace::Spin, Pace::Sleep, Pace::Busy}) {
    for (uint64_t ahead : {0u, 1'000u, 100'000u, 2'000'000u}) {
      const uint64_t due = now_ns() + ahead;
      const uint64_t got = pace_until(due, pace, 50'000);
      EXPECT_GE(got, due) << int(pace) << " " << ahead;
      EXPECT_LE(got, now_ns());
    }
  }
}

TEST(PaceUntil, APastTimeReturnsTheCurrentTime) {
  const uint64_t before = now_ns();
  const uint64_t got = pace_until(before - 1'000'000, Pace::Spin, 50'000);
  EXPECT_GE(got, before);  // the lateness is got - due, for the caller to record
}

TEST(PaceAlone, RecordsOneLatenessPerSendTimeDueBeforeItsEnd) {
  // 20k/s for 20 ms: 400 send times (the first due at the start), each waited for and recorded;
  // none returns before its time, so every lateness is a real wait's.
  for (Pace pace : {Pace::Spin, Pace::Sleep, Pace::Busy}) {
    const uint64_t start = now_ns();
    Arrivals a(ArrivalKind::Fixed, 20'000, 1, start);
    auto late = std::make_unique<Histogram>();
    pace_alone(a, pace, 10'000, start + 20'000'000, *late);
    EXPECT_EQ(late->count(), 400u) << name_of(pace);
    EXPECT_GE(now_ns(), start + 19'950'000) << name_of(pace);
    EXPECT_LE(late->quantile(0.5), late->quantile(0.99));
    EXPECT_LE(late->quantile(0.99), late->max());
  }
}

TEST(WakeupLateness, MeasuresEachSleepUpToItsBounds) {
  auto late = std::make_unique<Histogram>();
  wakeup_lateness(100'000, now_ns() + 1'000'000'000, 20, *late);  // 20 sleeps of 100 us: the count bounds it
  EXPECT_EQ(late->count(), 20u);
  late->reset();
  const uint64_t t0 = now_ns();
  wakeup_lateness(1'000'000, t0 + 10'000'000, 1000, *late);  // 10 ms of 1 ms sleeps: the time bounds it
  EXPECT_GE(late->count(), 1u);
  EXPECT_LE(late->count(), 10u);
}

}  // namespace
}  // namespace ipclab
