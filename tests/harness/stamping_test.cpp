// Which operations a loop stamps for its latency histogram (Stamping): the stride asked, or with
// latency_sample=0 one chosen from the warm-up's time per operation against this machine's clock
// read, so that stamps cost at most Stamping::kShare of an operation.
#include <gtest/gtest.h>

#include <ctime>

#include "core/base/clock.hpp"
#include "core/measure/session.hpp"

namespace ipclab {
namespace {

TEST(Stamping, TheStrideKeepsTwoClockReadsWithinTheShareOfAnOperation) {
  // 2 x 25 ns against 2% of 200 ns (4 ns): every 13th; against 2% of 10 us (200 ns): every one.
  EXPECT_EQ(Stamping::every_for(200, 25), 13u);
  EXPECT_EQ(Stamping::every_for(10'000, 25), 1u);
  EXPECT_EQ(Stamping::every_for(2'500, 25), 1u);  // exactly the share
  EXPECT_EQ(Stamping::every_for(2'499, 25), 2u);
  EXPECT_EQ(Stamping::every_for(0, 25), 1u);  // no warm-up to judge by
  EXPECT_EQ(Stamping::every_for(1, 1000), Stamping::kMaxEvery);
}

TEST(Stamping, AStrideAskedForIsKeptAndNothingIsStampedBeforeTheWindow) {
  WorkerResult out;
  Stamping s(4, out);
  EXPECT_EQ(out.latency_sample, 4u);
  EXPECT_FALSE(s.timed(false, 0));
  EXPECT_TRUE(s.timed(true, 8));
  EXPECT_FALSE(s.timed(true, 9));
  EXPECT_EQ(out.latency_sample, 4u);
}

TEST(Stamping, TheMachinesClockReadIsMeasured) {
  const double c = clock_read_ns();
  EXPECT_GT(c, 0.0);
  EXPECT_LT(c, 100'000.0);
  EXPECT_EQ(c, clock_read_ns());  // once per process
}

// A session of one worker whose operations take about `op_ns` (a busy wait), stamping with
// latency_sample=0: the stride it chose is in the record, and it stamped every stride-th operation.
Record run_auto(uint64_t op_ns) {
  Mechanism m{.suite = "harness", .name = "stamping"};
  Params p;
  RunOptions o;
  o.duration_s = 0.1;
  o.warmup_s = 0.05;
  Record rec;
  Session s(m, p, o, rec);
  std::vector<WorkerSpec> ws;
  ws.push_back({.role = "worker", .index = 0, .cpu = -1, .body = [op_ns](Worker& w) {
                  Stamping stamping(0, w.out());
                  w.ready();
                  for (uint64_t k = 0; w.running(); ++k) {
                    const bool measuring = w.measuring();
                    const bool timed = stamping.timed(measuring, k);
                    const uint64_t t0 = timed ? now_ns() : 0;
                    if (op_ns)
                      for (const uint64_t end = now_ns() + op_ns; now_ns() < end;) {
                      }
                    if (timed) w.out().record_latency(now_ns() - t0 + 1);
                    if (measuring) ++w.out().ops;
                  }
                }});
  s.run_workers(std::move(ws), false, "op");
  return rec;
}

TEST(Stamping, AnOperationOfMicrosecondsIsStampedEveryTime) {
  // 2 clock reads within 2% of 20 us for any clock read under 200 ns.
  const Record r = run_auto(20'000);
  ASSERT_EQ(r.status, Status::Ok) << r.error;
  ASSERT_TRUE(r.extra.contains("latency_sample"));
  EXPECT_EQ(r.extra["latency_sample"].get<uint64_t>(), 1u);
  ASSERT_TRUE(r.latency.has_value());
  EXPECT_EQ(r.latency->count, r.ops);
}

TEST(Stamping, AnEmptyOperationIsStampedEveryNthAndOnlyThen) {
  // An empty turn of the loop costs a few ns, far under 50 clock reads: a stride above 1.
  const Record r = run_auto(0);
  ASSERT_EQ(r.status, Status::Ok) << r.error;
  const uint64_t n = r.extra["latency_sample"].get<uint64_t>();
  EXPECT_GT(n, 1u);
  EXPECT_LE(n, Stamping::kMaxEvery);
  ASSERT_TRUE(r.latency.has_value());
  // The operations numbered k % n == 0 among the measured ones (their numbers continue the warm-up's).
  EXPECT_NEAR(double(r.latency->count), double(r.ops) / double(n), 1.0);
}

}  // namespace
}  // namespace ipclab
