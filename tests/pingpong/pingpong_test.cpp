// pingpong with guests in other processes (C++ and Go): protocol for every strategy, a guest
// killed or stopped mid-run (reported as a failure within seconds, nothing left behind), and
// clean-up of the run's shared memory and semaphores at exit, on SIGINT and after a crash.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "core/ownership/cleanup.hpp"
#include "core/ownership/journal.hpp"
#include "core/process/process.hpp"
#include "mechanisms/pingpong/wait.hpp"
#include "pingpong_support.hpp"

namespace ipclab {
namespace {

// /dev/shm entries (segments and sem.*) of the run of process `pid`.
std::vector<std::string> shm_entries_of(pid_t pid) {
  std::vector<std::string> out;
  const std::string tag = "ipclab." + std::to_string(pid) + ".";
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name).find(tag) != std::string::npos) out.push_back(e->d_name);
    closedir(d);
  }
  return out;
}

// Children of this process (any thread), from /proc/self/task/*/children.
std::vector<pid_t> children() {
  std::vector<pid_t> out;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/children");
      for (pid_t p; f >> p;) out.push_back(p);
    }
    closedir(d);
  }
  return out;
}

bool alive(pid_t pid) { return kill(pid, 0) == 0; }

struct PingpongCase {
  std::string mechanism, wait;
};

class OtherProcessGuest : public ::testing::TestWithParam<PingpongCase> {};

TEST_P(OtherProcessGuest, EveryRoundTripIsAnsweredAndVerified) {
  const auto& c = GetParam();
  const bool spins = c.wait == "spin" || c.wait == "spin_yield";
  const std::string pairs = spins ? "1" : "2";
  Record r = test::run_pingpong(
      c.mechanism,
      {{"wait", {c.wait}}, {"pairs", {pairs}}, {"round_trips", {"3000"}}, {"spin_limit", {"50"}}});
  if (r.status == Status::Skipped) GTEST_SKIP() << r.error;
  ASSERT_EQ(r.status, Status::Ok) << r.error;
  if (!r.extra["capped_by_duration"].get<bool>()) {
    EXPECT_EQ(r.ops, std::stoull(pairs) * 3000);
  }
  EXPECT_GT(r.ops, 0u);
  EXPECT_EQ(r.integrity.corrupt, 0u);
  EXPECT_EQ(r.extra["guest_cpu_source"].get<std::string>().rfind("RUSAGE_SELF", 0), 0u);
  EXPECT_TRUE(shm_entries_of(getpid()).empty());
  EXPECT_TRUE(children().empty()) << "the guest was not reaped";
}

std::vector<PingpongCase> cases() {
  std::vector<PingpongCase> v;
  for (auto m : {"pingpong/process", "pingpong/go"})
    for (auto& w : pingpong::wait_names()) v.push_back({m, w});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Pingpong, OtherProcessGuest, ::testing::ValuesIn(cases()), [](const auto& info) {
  return info.param.mechanism.substr(9) + "_" + info.param.wait;
});

// Starts a long run in the background, waits for its guest process, sends it `sig`, and
// returns the record and how long the run took after that.
std::pair<Record, double> disturb_guest(const std::string& mechanism, const std::string& wait, int sig) {
  auto run = std::async(std::launch::async, [&] {
    return test::run_pingpong(mechanism, {{"wait", {wait}}, {"round_trips", {"1000000000"}}}, 30.0);
  });
  pid_t guest = -1;
  for (int i = 0; i < 1000 && guest < 0; ++i) {
    if (run.wait_for(std::chrono::milliseconds(10)) == std::future_status::ready) break;
    auto c = children();
    if (!c.empty()) guest = c.front();
  }
  if (guest < 0) return {run.get(), 0.0};
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // mid-run
  auto t0 = std::chrono::steady_clock::now();
  kill(guest, sig);
  Record r = run.get();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(alive(guest)) << "guest left behind";
  return {r, secs};
}

TEST(PingpongFailure, KilledGuestFailsTheRunWithinSeconds) {
  for (auto mech : {"pingpong/process", "pingpong/go"})
    for (auto wait : {"adaptive_sem", "futex", "spin"}) {
      auto [r, secs] = disturb_guest(mech, wait, SIGKILL);
      if (r.status == Status::Skipped) continue;
      EXPECT_EQ(r.status, Status::Failed) << mech << " " << wait;
      // The session's wording: a worker process's death, or a peer's (the Go guest).
      const std::string death = std::string(mech) == "pingpong/process" ? "guest 0: process died of signal 9"
                                                                        : "guest 0 died of signal 9";
      EXPECT_NE(r.error.find(death), std::string::npos) << r.error;
      // Detection is immediate (waitpid every ms); the bound only proves "no hang" on a loaded CI.
      EXPECT_LT(secs, 10.0) << mech << " " << wait;
      EXPECT_TRUE(shm_entries_of(getpid()).empty());
    }
}

TEST(PingpongFailure, StoppedGuestIsReportedAsStalled) {
  auto [r, secs] = disturb_guest("pingpong/process", "adaptive_futex", SIGSTOP);
  EXPECT_EQ(r.status, Status::Failed);
  // The watchdog names the stopped guest as the cause, not the host that waits on it.
  EXPECT_NE(r.error.find("guest 0 (pid"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("is stopped (state T)"), std::string::npos) << r.error;
  EXPECT_LT(secs, 15.0) << "the stall limit is max(duration/4, 1 s); the margin is for loaded machines";
  EXPECT_TRUE(children().empty()) << "the stopped guest was not killed and reaped";
}

// A run that the --duration cap ends, longer than the stall limit (1 s): the guest process shows
// progress through its hosts' round trips, and every pair ran over the whole window, so the sum
// of the pairs' rates is the system's rate.
TEST(PingpongWindow, DurationCapEndsTheWindowForEveryPair) {
  Record r = test::run_pingpong("pingpong/process",
                                {{"wait", {"sem"}}, {"pairs", {"2"}}, {"round_trips", {"1000000000"}}}, 1.5);
  ASSERT_EQ(r.status, Status::Ok) << r.error;
  EXPECT_TRUE(r.extra["capped_by_duration"].get<bool>());
  EXPECT_GE(r.wall_s, 1.5);
  uint64_t done = 0;
  for (auto& d : r.extra["round_trips_done"]) done += d.get<uint64_t>();
  EXPECT_EQ(done, r.ops);
  EXPECT_GT(r.ops, 0u);
  const double total = r.rates["total_ops"].get<double>(),
               system = r.rates["system_effective_ops"].get<double>();
  EXPECT_NEAR(total, system, 1e-9 * system);
}

// By default (round_trips 0) no count ends the window: it lasts --duration, as every window is
// sized to it, and nothing was capped.
TEST(PingpongWindow, ByDefaultTheWindowLastsTheDuration) {
  Record r = test::run_pingpong("pingpong/thread", {{"wait", {"sem"}}}, 0.3);
  ASSERT_EQ(r.status, Status::Ok) << r.error;
  EXPECT_FALSE(r.extra["capped_by_duration"].get<bool>());
  EXPECT_GE(r.wall_s, 0.3);
  EXPECT_EQ(r.extra["round_trips_done"][0].get<uint64_t>(), r.ops);
  EXPECT_GT(r.ops, 0u);
}

// The run of a child process that installs the harness's SIGINT clean-up; SIGINT mid-run must
// leave no /dev/shm entry of that run and no guest behind.
TEST(PingpongCleanup, NothingLeftAfterSigint) {
  Process run = Process::fork(-1, [] {
    ipc::install_signal_cleanup();
    test::run_pingpong("pingpong/process",
                       {{"wait", {"adaptive_sem"}}, {"pairs", {"2"}}, {"round_trips", {"1000000000"}}}, 30.0);
    return 0;
  });
  const pid_t child = run.pid();
  bool seen = false;
  for (int i = 0; i < 500 && !seen; ++i) {
    seen = shm_entries_of(child).size() >= 5;  // the region and four semaphores
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(seen) << "the run never created its objects";
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  run.signal(SIGINT);
  ASSERT_TRUE(run.wait(30.0)) << "the run did not end on SIGINT";
  EXPECT_TRUE(WIFSIGNALED(run.status()) && WTERMSIG(run.status()) == SIGINT) << describe_exit(run.status());
  EXPECT_TRUE(shm_entries_of(child).empty());
  // The guest (a grandchild) dies with its parent thread (PR_SET_PDEATHSIG).
  bool guest_left = false;
  for (int i = 0; i < 100; ++i) {
    guest_left = false;
    if (DIR* d = opendir("/proc")) {
      while (dirent* e = readdir(d)) {
        std::ifstream f(std::string("/proc/") + e->d_name + "/stat");
        std::string line;
        if (!std::getline(f, line)) continue;
        std::istringstream ls(line.substr(line.rfind(')') + 2));
        std::string state;
        pid_t ppid = 0;
        ls >> state >> ppid;
        if (ppid == child) guest_left = true;
      }
      closedir(d);
    }
    if (!guest_left) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(guest_left);
}

TEST(PingpongCleanup, NothingLeftAfterNormalExit) {
  Record r =
      test::run_pingpong("pingpong/process", {{"wait", {"sem"}}, {"pairs", {"2"}}, {"round_trips", {"200"}}});
  ASSERT_EQ(r.status, Status::Ok) << r.error;
  EXPECT_TRUE(shm_entries_of(getpid()).empty());
}

}  // namespace
}  // namespace ipclab
