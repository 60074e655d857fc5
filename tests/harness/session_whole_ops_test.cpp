// Session workers of whole operations (WorkerSpec::whole_ops) and thread workers charged with the
// whole process's CPU (WorkerSpec::process_cpu), the way cachecalc runs: the window holds whole
// operations only, at least one, and the CPU of threads the worker starts is counted.
#include <gtest/gtest.h>

#include <ctime>
#include <thread>

#include "core/base/clock.hpp"
#include "core/measure/session.hpp"

namespace ipclab {
namespace {

constexpr uint64_t kOpNs = 30'000'000;  // 30 ms: longer than the window of the first tests

// Runs one worker whose every operation is `op` (timed into the slot, counted when measured).
Record run_session(double duration_s, bool whole_ops, bool process_cpu, const std::function<void()>& op) {
  Mechanism m{.suite = "harness", .name = "whole_ops"};
  Params p;
  RunOptions o;
  o.duration_s = duration_s;
  o.warmup_s = 0;
  Record rec;
  Session s(m, p, o, rec);
  std::vector<WorkerSpec> ws;
  ws.push_back({.role = "worker",
                .index = 0,
                .cpu = -1,
                .body =
                    [&op](Worker& w) {
                      w.ready();
                      while (w.running()) {
                        const bool measuring = w.measuring();
                        const uint64_t t0 = now_ns();
                        op();
                        if (measuring) {
                          ++w.out().ops;
                          w.out().hist.record(now_ns() - t0);
                        }
                      }
                    },
                .process_cpu = process_cpu,
                .whole_ops = whole_ops});
  s.run_workers(std::move(ws), false, "op");
  return rec;
}

// Burns `ns` of this thread's own CPU time.
void burn(uint64_t ns) {
  auto cpu_ns = [] {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
  };
  const uint64_t end = cpu_ns() + ns;
  while (cpu_ns() < end) {
  }
}

TEST(SessionWholeOps, AWindowShorterThanAnOperationMeasuresOneWholeOperation) {
  const Record r = run_session(0.001, true, false, [] { sleep_ns(kOpNs); });
  ASSERT_EQ(r.status, Status::Ok) << r.error;
  ASSERT_GE(r.ops, 1u);
  // The window is the worker's own: every operation it counted lies inside it.
  EXPECT_GE(r.wall_s * 1e9, double(r.ops * kOpNs));
  ASSERT_TRUE(r.latency.has_value());
  EXPECT_EQ(r.latency->count, r.ops);
  EXPECT_LE(r.latency->mean * double(r.ops), r.wall_s * 1e9);
}

TEST(SessionWholeOps, TheWindowEndsWithTheOperationRunningAtTheStop) {
  // 50 ms of --duration over 30 ms operations: the second one runs past the stop and is counted,
  // so the window is at least two whole operations long, not 50 ms. (The worker sees the window
  // open between two of its operations, up to a wake-up late: with 40 ms, a wake-up 10 ms late —
  // two vCPUs busy with another test beside this one — left room for one operation only.)
  const Record r = run_session(0.05, true, false, [] { sleep_ns(kOpNs); });
  ASSERT_EQ(r.status, Status::Ok) << r.error;
  ASSERT_GE(r.ops, 2u);
  EXPECT_GE(r.wall_s * 1e9, double(r.ops * kOpNs));
  EXPECT_LE(r.latency->mean * double(r.ops), r.wall_s * 1e9);
  // However late the worker saw the window open, its window holds --duration: it measures on
  // until it does (Control::min_window_ns).
  EXPECT_GE(r.wall_s, 0.05);
}

TEST(SessionWholeOps, WithoutItTheWindowIsTheSessionsOwn) {
  // The contrast: a plain worker's window closes at the stop, with its operation unfinished (a
  // long one, so that a descheduled coordinator cannot blur the difference).
  constexpr uint64_t kLongNs = 300'000'000;
  const Record r = run_session(0.04, false, false, [] { sleep_ns(kLongNs); });
  ASSERT_EQ(r.status, Status::Ok) << r.error;
  EXPECT_LT(r.wall_s * 1e9, double(kLongNs));
}

TEST(SessionWholeOps, ProcessCpuCountsTheThreadsTheWorkerStarts) {
  // Each operation hands 10 ms of CPU work to a thread of its own and waits for it.
  constexpr uint64_t kBurnNs = 10'000'000;
  auto op = [] { std::thread([] { burn(kBurnNs); }).join(); };
  const Record whole = run_session(0.05, true, true, op);
  ASSERT_EQ(whole.status, Status::Ok) << whole.error;
  ASSERT_GE(whole.ops, 1u);
  const double per_op = (whole.cpu.user_s + whole.cpu.sys_s) / double(whole.ops);
  EXPECT_GE(per_op, 0.9 * double(kBurnNs) * 1e-9) << "the helper threads' CPU is missing";
  // A thread worker's own CPU (RUSAGE_THREAD) leaves them out.
  const Record own = run_session(0.05, true, false, op);
  ASSERT_EQ(own.status, Status::Ok) << own.error;
  EXPECT_LT((own.cpu.user_s + own.cpu.sys_s) / double(own.ops), 0.5 * double(kBurnNs) * 1e-9);
}

TEST(SessionWholeOps, AtMostOneProcessCpuWorkerPerRun) {
  Mechanism m{.suite = "harness", .name = "two"};
  Params p;
  RunOptions o;
  Record rec;
  Session s(m, p, o, rec);
  std::vector<WorkerSpec> ws;
  for (int i = 0; i < 2; ++i)
    ws.push_back(
        {.role = "worker", .index = i, .cpu = -1, .body = [](Worker& w) { w.ready(); }, .process_cpu = true});
  EXPECT_THROW(s.run_workers(std::move(ws), false, ""), std::logic_error);
}

}  // namespace
}  // namespace ipclab
