// core/measure/kcounters: the kernel's counts of what threads and child processes created after the
// counters opened do — system calls, page faults, context switches — less the opening thread's
// own where asked, and the figures per op of a record.
#include "core/measure/kcounters.hpp"
#include "core/process/process.hpp"

#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/base/clock.hpp"
#include "core/measure/session.hpp"
#include "core/output/output.hpp"
#include "core/plan/runner.hpp"
#include "core/stats/record.hpp"
#include "core/stats/statistics.hpp"

using namespace ipclab;

namespace {

using K = KernelCounters;

constexpr uint64_t kCalls = 10000;
// What a thread's own start and end cost in system calls (clone's child side, rseq, robust list,
// signal stack, its stack's unmapping, exit; more under the sanitizers), and the reads of a reading.
constexpr uint64_t kSlack = 200;

void getppids(uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) syscall(SYS_getppid);
}

uint64_t total(const K& k, const K::Reading& a, const K::Reading& b, bool less_own, const char* key) {
  nlohmann::json j;
  k.add_window(j, a, b, less_own, "test");
  return j["totals"].value(key, uint64_t(0));
}

// The counters, or the machine's reason they cannot be had (then the test skips with it). System
// calls are counted through a tracepoint whose id tracefs shows: where tracefs is not mounted and
// this process may mount it, it is mounted in a mount namespace of this test's own, which nothing
// else sees.
std::unique_ptr<K> counters(K::Counter need, std::string& why) {
  auto k = std::make_unique<K>();
  if (!k->available(need) && need == K::kSyscalls && geteuid() == 0 &&
      k->unavailable(need).find("tracefs is not mounted") != std::string::npos) {
    k.reset();
    if (unshare(CLONE_NEWNS) != 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        mount("nodev", "/sys/kernel/tracing", "tracefs", 0, nullptr) != 0) {
      why = std::string("tracefs is not mounted and a private mount of it failed: ") + std::strerror(errno);
      return nullptr;
    }
    k = std::make_unique<K>();
  }
  if (!k->available(need)) {
    why = k->unavailable(need);
    return nullptr;
  }
  return k;
}

}  // namespace

TEST(KernelCounters, CountsTheSystemCallsOfAThreadCreatedAfterThem) {
  std::string why;
  auto k = counters(K::kSyscalls, why);
  if (!k) GTEST_SKIP() << why;
  const K::Reading a = k->read();
  std::thread(getppids, kCalls).join();
  const K::Reading b = k->read();
  const uint64_t n = total(*k, a, b, true, "syscalls");
  EXPECT_GE(n, kCalls);
  EXPECT_LE(n, kCalls + kSlack);
}

TEST(KernelCounters, TakesTheOpeningThreadsOwnCallsOutOnlyWhenAsked) {
  std::string why;
  auto k = counters(K::kSyscalls, why);
  if (!k) GTEST_SKIP() << why;
  const K::Reading a = k->read();
  getppids(kCalls);  // on this thread: the coordinator's own
  const K::Reading b = k->read();
  EXPECT_LE(total(*k, a, b, true, "syscalls"), kSlack);
  EXPECT_GE(total(*k, a, b, false, "syscalls"), kCalls);
  // A reading without the coordinator's set (a body run on the coordinator's thread).
  const K::Reading c = k->read(false);
  getppids(kCalls);
  const K::Reading d = k->read(false);
  const uint64_t n = total(*k, c, d, false, "syscalls");
  EXPECT_GE(n, kCalls);
  EXPECT_LE(n, kCalls + kSlack);
}

TEST(KernelCounters, CountsAnExitedChildProcess) {
  std::string why;
  auto k = counters(K::kSyscalls, why);
  if (!k) GTEST_SKIP() << why;
  const K::Reading a = k->read();
  Process child = Process::fork(-1, [] {
    getppids(kCalls);
    return 0;
  });
  ASSERT_TRUE(child.wait(30)) << "the child did not exit";
  ASSERT_TRUE(child.clean()) << child.death();
  const K::Reading b = k->read();
  // Its count is folded into the counter it inherited from as it exits.
  const uint64_t n = total(*k, a, b, true, "syscalls");
  EXPECT_GE(n, kCalls);
  EXPECT_LE(n, kCalls + kSlack);
}

TEST(KernelCounters, CountsThePageFaultsOfFreshPages) {
  std::string why;
  auto k = counters(K::kPageFaults, why);
  if (!k) GTEST_SKIP() << why;
  constexpr size_t kPages = 512;
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const K::Reading a = k->read();
  std::thread([&] {
    auto* p = static_cast<char*>(
        mmap(nullptr, kPages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(p, MAP_FAILED);
    madvise(p, kPages * page, MADV_NOHUGEPAGE);  // a page a fault: no huge page fills 512 at once
    for (size_t i = 0; i < kPages; ++i) p[i * page] = 1;
    munmap(p, kPages * page);
  }).join();
  const K::Reading b = k->read();
  EXPECT_GE(total(*k, a, b, true, "page_faults"), kPages);
}

TEST(KernelCounters, CountsTheContextSwitchesOfASleepingThread) {
  std::string why;
  auto k = counters(K::kContextSwitches, why);
  if (!k) GTEST_SKIP() << why;
  constexpr uint64_t kSleeps = 20;
  const K::Reading a = k->read();
  std::thread([] {
    for (uint64_t i = 0; i < kSleeps; ++i) sleep_ns(1'000'000);
  }).join();
  const K::Reading b = k->read();
  EXPECT_GE(total(*k, a, b, true, "context_switches"), kSleeps);
}

TEST(KernelCounters, ANamedReasonForEveryCounterNotOpened) {
  K k;
  for (int c = 0; c < K::kCount; ++c) {
    const auto counter = K::Counter(c);
    EXPECT_EQ(k.available(counter), k.unavailable(counter).empty()) << K::name(counter);
  }
  nlohmann::json j;
  const K::Reading a = k.read();
  k.add_window(j, a, k.read(), true, "test");
  // Hardware counters: figures or the reason there are none, never both.
  EXPECT_NE(k.available(K::kCycles), j.contains("hardware_unavailable"));
  for (int c = 0; c < K::kCycles; ++c)
    EXPECT_EQ(j.contains("unavailable") && j["unavailable"].contains(K::name(K::Counter(c))),
              !k.available(K::Counter(c)));
}

TEST(KernelCounters, FiguresPerOpFromTheTotals) {
  nlohmann::json j = {{"scope", "test"},
                      {"totals",
                       {{"syscalls", 4000},
                        {"context_switches", 10},
                        {"cpu_migrations", 0},
                        {"page_faults", 5},
                        {"cycles", 3000},
                        {"instructions", 6000}}}};
  finish_kernel(j, 1000);
  EXPECT_DOUBLE_EQ(j["per_op"]["syscalls"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(j["per_op"]["context_switches"].get<double>(), 0.01);
  EXPECT_DOUBLE_EQ(j["per_op"]["page_faults"].get<double>(), 0.005);
  EXPECT_DOUBLE_EQ(j["hardware"]["cycles"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(j["hardware"]["ipc"].get<double>(), 2.0);
  EXPECT_FALSE(j["totals"].contains("cycles"));  // totals hold the software counters only
  nlohmann::json none = nlohmann::json::object();
  finish_kernel(none, 1000);
  EXPECT_TRUE(none.empty());
}

TEST(KernelCounters, AnAggregateHoldsTheMedianPerOpOfItsOkRepetitions) {
  std::vector<Record> reps(4);
  const double sys[] = {4.0, 6.0, 5.0, 100.0};
  for (size_t i = 0; i < reps.size(); ++i) {
    reps[i].name = "x";
    reps[i].ops = 1000;
    reps[i].wall_s = 1;
    reps[i].kernel = {{"scope", "window"}, {"per_op", {{"syscalls", sys[i]}}}};
  }
  reps[3].fail("a failed repetition's counts are not the benchmark's");
  const Record a = aggregate_median(reps);
  EXPECT_DOUBLE_EQ(a.kernel["per_op"]["syscalls"].get<double>(), 5.0);
  EXPECT_EQ(a.kernel["scope"], "window");
  for (auto& r : reps) r.kernel = nlohmann::json::object();
  EXPECT_TRUE(aggregate_median(reps).kernel.empty());
}

TEST(KernelCounters, TheRecordCarriesThemThroughJsonAndCsv) {
  Record r;
  r.name = "anchors/null";
  r.suite = "anchors";
  r.mechanism = "null";
  r.ops = 1000;
  r.wall_s = 1;
  r.kernel = {{"scope", "window"}, {"per_op", {{"syscalls", 4.0}, {"page_faults", 0.5}}}};
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["kernel"], r.kernel);
  EXPECT_EQ(record_from_json(j).kernel, r.kernel);
  r.kernel = nlohmann::json::object();
  EXPECT_FALSE(to_json(r).contains("kernel"));  // none taken: no field

  r.kernel = {{"per_op", {{"syscalls", 4.0}}}};
  const auto header = output::csv_header({r});
  const auto at = std::find(header.begin(), header.end(), "syscalls_per_op");
  ASSERT_NE(at, header.end());
  const std::string row = output::csv_rows(header, {r});
  std::vector<std::string> cells;
  for (size_t from = 0, comma;; from = comma + 1) {
    comma = row.find_first_of(",\n", from);
    cells.push_back(row.substr(from, comma - from));
    if (comma == std::string::npos || row[comma] == '\n') break;
  }
  ASSERT_EQ(cells.size(), header.size());
  EXPECT_EQ(cells[size_t(at - header.begin())], "4");
  EXPECT_EQ(cells[size_t(at - header.begin()) + 3], "");  // page faults not counted
}

namespace {

// A benchmark of one system call per operation, run by run_one as the harness runs any: on a
// worker thread the session starts (run_workers), or on the coordinator's own (Session::measure).
Record run_getppid(bool on_coordinator, bool counters = true) {
  Mechanism m{.suite = "harness", .name = "getppid"};
  m.workload = [on_coordinator](Session& s) {
    if (on_coordinator) {
      // The harness repeats the body (a pass) until the window holds --duration.
      s.record().ops = kCalls * s.measure([] { getppids(kCalls); });
      return;
    }
    s.run_workers({{.role = "worker",
                    .index = 0,
                    .cpu = -1,
                    .body =
                        [](Worker& w) {
                          w.ready();
                          while (w.running())
                            if (w.measuring()) {
                              syscall(SYS_getppid);
                              ++w.out().ops;
                            }
                        }}},
                  false, "");
  };
  RunOptions o;
  o.duration_s = 0.2;
  o.warmup_s = 0.05;
  o.kernel_counters = counters;
  return run_one({&m, Params{}, "harness/getppid"}, o, 0);
}

}  // namespace

TEST(KernelCounters, EveryRecordOfRunOneCountsItsWorkersOnly) {
  std::string why;
  if (!counters(K::kSyscalls, why)) GTEST_SKIP() << why;
  const Record r = run_getppid(false);
  ASSERT_EQ(r.status, Status::Ok) << r.error;
  EXPECT_NE(r.kernel["scope"].get<std::string>().find("coordinator excluded"), std::string::npos);
  // One call per op: the coordinator's polls (every 5 ms, with its reads of the counters) are not
  // in it, and the worker sees the window open and close a few operations apart from the readings.
  EXPECT_NEAR(r.kernel["per_op"]["syscalls"].get<double>(), 1.0, 0.02) << r.kernel.dump();
}

TEST(KernelCounters, ABodyOnTheCoordinatorsThreadIsCounted) {
  std::string why;
  if (!counters(K::kSyscalls, why)) GTEST_SKIP() << why;
  const Record r = run_getppid(true);
  ASSERT_EQ(r.status, Status::Ok) << r.error;
  const double per_op = r.kernel["per_op"]["syscalls"].get<double>();
  EXPECT_GE(per_op, 1.0);
  EXPECT_LE(per_op, 1.0 + double(kSlack) / double(kCalls)) << r.kernel.dump();
}

TEST(KernelCounters, NoneWithoutTheRunsOption) {
  const Record r = run_getppid(false, false);
  ASSERT_EQ(r.status, Status::Ok) << r.error;
  EXPECT_TRUE(r.kernel.empty()) << r.kernel.dump();
}
