// The quota antagonist (core/measure/quota.hpp): where the cpu controller is, read from
// /proc/self/cgroup and /proc/self/mountinfo texts (v1, v2, a hybrid, a container's view), cpu.stat,
// the LEVEL's range; and, as root where a cgroup can be made, a real cgroup made, throttling its
// side, removed with its side moved back — and the one a SIGKILLed run leaves swept by the next,
// the one a SIGTERMed run had removed by its signal clean-up, a dead run's cgroup that holds a task
// left alone.
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <map>
#include <string>
#include <thread>

#include "../ownership_support.hpp"
#include "core/base/error.hpp"
#include "core/base/fs.hpp"
#include "core/measure/quota.hpp"
#include "core/ownership/cleanup.hpp"
#include "core/ownership/journal.hpp"
#include "core/ownership/sweep.hpp"
#include "core/process/process.hpp"

namespace ipclab {
namespace {

using test::exists;

// This VM's: cpu alone in a v1 hierarchy, a unified hierarchy without controllers beside it.
constexpr const char* kHybridCgroup =
    "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/bcac\n2:cpuacct:/\n1:cpu:/\n0::/\n";
constexpr const char* kHybridMounts =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

TEST(QuotaPlace, AHybridMachineUsesTheV1HierarchyThatHasCpu) {
  const CpuCgroup cg = find_cpu_cgroup(kHybridCgroup, kHybridMounts);
  EXPECT_EQ(cg.why, "");
  EXPECT_EQ(cg.version, 1);
  EXPECT_EQ(cg.mount, "/sys/fs/cgroup/cpu");
  EXPECT_EQ(cg.own, "/sys/fs/cgroup/cpu");
  EXPECT_FALSE(cg.read_only);
}

TEST(QuotaPlace, CpuSharingAV1HierarchyWithCpuacctIsFoundByItsController) {
  const CpuCgroup cg = find_cpu_cgroup(
      "5:cpuacct,cpu:/user.slice/session-3.scope\n3:cpuset:/\n0::/user.slice/session-3.scope\n",
      "25 20 0:22 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n"
      "26 20 0:23 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct\n");
  EXPECT_EQ(cg.version, 1);
  EXPECT_EQ(cg.own, "/sys/fs/cgroup/cpu,cpuacct/user.slice/session-3.scope");
}

TEST(QuotaPlace, AUnifiedOnlyMachineUsesV2) {
  const CpuCgroup cg = find_cpu_cgroup("0::/user.slice/user-1000.slice/session-2.scope\n",
                                       "30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 "
                                       "- cgroup2 cgroup2 rw,nsdelegate\n");
  EXPECT_EQ(cg.why, "");
  EXPECT_EQ(cg.version, 2);
  EXPECT_EQ(cg.mount, "/sys/fs/cgroup");
  EXPECT_EQ(cg.own, "/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope");
}

TEST(QuotaPlace, AContainersViewIsPlacedByTheMountsRootAndItsReadOnlyFlagKept) {
  const char* mounts =
      "700 690 0:29 /docker/abc /sys/fs/cgroup/cpu ro,nosuid - cgroup cgroup rw,cpu\n"
      "701 690 0:30 /other /sys/fs/cgroup/cpu2 rw - cgroup cgroup rw,cpu\n";
  const CpuCgroup cg = find_cpu_cgroup("3:cpu:/docker/abc/worker\n", mounts);
  EXPECT_EQ(cg.version, 1);
  EXPECT_EQ(cg.root, "/docker/abc");
  EXPECT_EQ(cg.own, "/sys/fs/cgroup/cpu/worker");
  EXPECT_TRUE(cg.read_only);
  // The mount's own top, and a cgroup outside what any mount shows.
  EXPECT_EQ(find_cpu_cgroup("3:cpu:/docker/abc\n", mounts).own, "/sys/fs/cgroup/cpu");
  const CpuCgroup outside = find_cpu_cgroup("3:cpu:/docker/abcdef\n", mounts);
  EXPECT_EQ(outside.version, 0);
  EXPECT_NE(outside.why.find("/docker/abcdef"), std::string::npos) << outside.why;
  EXPECT_EQ(cgroup_folder(cg, "3:cpu:/docker/abc/worker/x\n"), "/sys/fs/cgroup/cpu/worker/x");
  EXPECT_EQ(cgroup_folder(cg, "3:cpu:/elsewhere\n"), "");
}

TEST(QuotaPlace, AnEscapedMountPointIsReadAsThePath) {
  const CpuCgroup cg = find_cpu_cgroup("0::/a\n", "30 24 0:26 / /mnt/cg\\040two rw - cgroup2 cgroup2 rw\n");
  EXPECT_EQ(cg.own, "/mnt/cg two/a");
}

TEST(QuotaPlace, NoCpuAnywhereSaysSo) {
  const CpuCgroup none =
      find_cpu_cgroup("4:memory:/\n", "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
  EXPECT_EQ(none.version, 0);
  EXPECT_NE(none.why.find("no cgroup with cpu"), std::string::npos) << none.why;
  // cpu in a v1 hierarchy that is mounted nowhere here (only the unified one is).
  const CpuCgroup unmounted = find_cpu_cgroup("1:cpu:/\n0::/\n", "41 31 0:38 / /u rw - cgroup2 cgroup2 rw\n");
  EXPECT_EQ(unmounted.version, 0);
  EXPECT_NE(unmounted.why.find("mounted nowhere"), std::string::npos) << unmounted.why;
}

TEST(QuotaPlace, OnV2TheCgroupGoesUnderTheNearestThatEnablesCpuForItsChildren) {
  const std::map<std::string, std::string> files = {
      {"/sys/fs/cgroup/cgroup.subtree_control", "cpuset cpu io memory pids\n"},
      {"/sys/fs/cgroup/user.slice/cgroup.subtree_control", "cpu memory pids\n"},
      {"/sys/fs/cgroup/user.slice/user-1000.slice/cgroup.subtree_control", "memory pids\n"},
      {"/sys/fs/cgroup/user.slice/user-1000.slice/s.scope/cgroup.subtree_control", ""},
  };
  auto read = [&](const std::string& path) {
    auto it = files.find(path);
    return it == files.end() ? std::string() : it->second;
  };
  EXPECT_EQ(v2_parent("/sys/fs/cgroup/user.slice/user-1000.slice/s.scope", "/sys/fs/cgroup", read),
            "/sys/fs/cgroup/user.slice");
  EXPECT_EQ(v2_parent("/sys/fs/cgroup/system.slice/x.service", "/sys/fs/cgroup", read), "/sys/fs/cgroup");
  // cpu enabled nowhere at or above it (a "cpuset" is not "cpu").
  auto none = [](const std::string& path) {
    return path == "/sys/fs/cgroup/cgroup.subtree_control" ? "cpuset io" : "";
  };
  EXPECT_EQ(v2_parent("/sys/fs/cgroup/a/b", "/sys/fs/cgroup", none), "");
}

TEST(QuotaStat, V1GivesNanosecondsAndV2Microseconds) {
  const CpuStat v1 = parse_cpu_stat("nr_periods 40\nnr_throttled 12\nthrottled_time 345678901\n");
  EXPECT_TRUE(v1.ok);
  EXPECT_EQ(v1.nr_periods, 40u);
  EXPECT_EQ(v1.nr_throttled, 12u);
  EXPECT_EQ(v1.throttled_us, 345678u);
  const CpuStat v2 = parse_cpu_stat(
      "usage_usec 9000\nuser_usec 8000\nsystem_usec 1000\nnr_periods 7\nnr_throttled 3\nthrottled_usec 2500\n"
      "nr_bursts 0\nburst_usec 0\n");
  EXPECT_TRUE(v2.ok);
  EXPECT_EQ(v2.nr_periods, 7u);
  EXPECT_EQ(v2.nr_throttled, 3u);
  EXPECT_EQ(v2.throttled_us, 2500u);
  EXPECT_FALSE(parse_cpu_stat("nr_periods 4\n").ok);
  EXPECT_FALSE(parse_cpu_stat("nr_periods x\nnr_throttled 1\nthrottled_usec 1\n").ok);
  EXPECT_FALSE(parse_cpu_stat("").ok);
}

TEST(QuotaLevel, FromOnePercentToEveryCpuThisProcessMayUse) {
  EXPECT_EQ(QuotaSpec::level_problem(1, 2), "");
  EXPECT_EQ(QuotaSpec::level_problem(50, 2), "");
  EXPECT_EQ(QuotaSpec::level_problem(200, 2), "");
  for (double bad : {0.5, 0.0, -5.0, 201.0, std::nan("")}) {
    const std::string why = QuotaSpec::level_problem(bad, 2);
    EXPECT_NE(why.find("from 1 to 200 (2 CPUs here)"), std::string::npos) << why;
  }
  // A LEVEL past the range never reaches the kernel (whose EINVAL would name another cause).
  EXPECT_THROW({ Quota q(QuotaSpec{0.2}, {}); }, UsageError);
  EXPECT_EQ((QuotaSpec{50}).quota_us(), 50'000u);
  EXPECT_EQ((QuotaSpec{2.5}).quota_us(), 2'500u);
  EXPECT_EQ((QuotaSpec{250}).quota_us(), 250'000u);
}

// ---- a real cgroup: root, on a machine with CFS bandwidth control ----

pid_t tid() { return pid_t(syscall(SYS_gettid)); }

std::string own_cgroup_line(pid_t t) {
  return read_regular_file("/proc/" + std::to_string(getpid()) + "/task/" + std::to_string(t) + "/cgroup");
}

// Busy until the cgroup's cpu.stat shows a throttled period (bounded: a loaded machine may give
// the thread less than its quota for a while).
bool spin_until_throttled(const std::string& cgroup) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < until) {
    const auto slice = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
    while (std::chrono::steady_clock::now() < slice) {
    }
    if (parse_cpu_stat(read_regular_file(cgroup + "/cpu.stat")).nr_throttled > 0) return true;
  }
  return false;
}

#define NEED_A_QUOTA()                                                               \
  do {                                                                               \
    if (const std::string why = Quota::problem(); !why.empty()) GTEST_SKIP() << why; \
  } while (0)

TEST(QuotaCgroup, ASideRunsThrottledInItsOwnCgroupAndGoesBackWhenItEnds) {
  NEED_A_QUOTA();
  const std::string before = own_cgroup_line(tid());
  nlohmann::json rec;
  std::string path;
  {
    Quota q(QuotaSpec{5}, {{tid()}, {}});
    path = q.path();
    ASSERT_TRUE(exists(path));
    EXPECT_NE(path.find("/ipclab-" + ipc::run_id() + "-"), std::string::npos) << path;
    const std::string limit =
        read_first_line(path + "/cpu.cfs_quota_us") + read_first_line(path + "/cpu.max");
    EXPECT_NE(limit.find("5000"), std::string::npos) << limit;
    EXPECT_NE(own_cgroup_line(tid()), before);
    q.open_window();
    EXPECT_TRUE(spin_until_throttled(path));
    q.close_window();
    rec = q.stop();
  }
  EXPECT_FALSE(exists(path));
  EXPECT_EQ(own_cgroup_line(tid()), before);
  EXPECT_EQ(rec["path"], path);
  EXPECT_EQ(rec["quota_us"], 5000);
  EXPECT_EQ(rec["period_us"], 100000);
  EXPECT_DOUBLE_EQ(rec["cpus_equiv"].get<double>(), 0.05);
  ASSERT_TRUE(rec["nr_throttled"].is_number()) << rec.dump();
  EXPECT_GE(rec["nr_throttled"].get<int>(), 1) << rec.dump();
  EXPECT_GT(rec["throttled_us"].get<int>(), 0) << rec.dump();
  EXPECT_GE(rec["nr_periods"].get<int>(), rec["nr_throttled"].get<int>()) << rec.dump();
  if (rec["cgroup_version"] == 1)
    EXPECT_EQ(rec["sides"]["threads"], nlohmann::json::array({tid()}));
  else
    EXPECT_TRUE(rec["sides"]["whole_process"].get<bool>());
}

TEST(QuotaCgroup, AUserWhoCannotWriteTheCgroupIsToldWhatWouldAllowIt) {
  NEED_A_QUOTA();
  if (geteuid() != 0) GTEST_SKIP() << "needs root to become another user";
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  Process child = Process::fork(-1, [&] {
    close(out[0]);
    std::string why = setresgid(65534, 65534, 65534) == 0 && setresuid(65534, 65534, 65534) == 0
                          ? Quota::problem()
                          : std::string("setresuid failed");
    why += "\n";
    (void)!write(out[1], why.data(), why.size());
    return 0;
  });
  close(out[1]);
  std::string why;
  char buf[1024];
  for (ssize_t n; (n = read(out[0], buf, sizeof buf)) > 0;) why.append(buf, size_t(n));
  close(out[0]);
  ASSERT_TRUE(child.wait(30));
  EXPECT_NE(why.find("not writable by uid 65534"), std::string::npos) << why;
  EXPECT_NE(why.find("run as root"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), why.size() - 1) << why;  // one line
}

// A child that starts a quota on itself (its own run, as a forked child has), says the cgroup's
// path, and holds until killed.
Process child_under_quota(std::string& path, bool signal_cleanup) {
  int names[2];
  if (pipe(names) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  Process child = Process::fork(-1, [&] {
    close(names[0]);
    std::string out;
    if (signal_cleanup) ipc::install_signal_cleanup();
    try {
      static Quota* q = new Quota(QuotaSpec{50}, {{tid()}, {}});  // never stopped: the kill ends it
      out = q->path() + "\n";
    } catch (const std::exception& e) {
      out = std::string("error ") + e.what() + "\n";
    }
    (void)!write(names[1], out.data(), out.size());
    close(names[1]);
    for (;;) pause();
    return 0;
  });
  close(names[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = read(names[0], buf, sizeof buf)) > 0 && text.find('\n') == std::string::npos;)
    text.append(buf, size_t(n));
  close(names[0]);
  path = text.substr(0, text.find('\n'));
  if (path.rfind("error", 0) == 0) throw std::runtime_error(path);
  return child;
}

TEST(QuotaCgroup, TheCgroupOfARunKilledWithSigkillIsSweptByTheNextRun) {
  NEED_A_QUOTA();
  std::string path;
  Process child = child_under_quota(path, false);
  ASSERT_TRUE(exists(path));
  child.stop(0);              // SIGKILL
  EXPECT_TRUE(exists(path));  // nobody removed it: the dead run's journal still lists it
  std::string said;
  for (auto& l : ipc::sweep_leftovers()) said += l + "\n";
  EXPECT_FALSE(exists(path));
  EXPECT_NE(said.find("cgroup " + path), std::string::npos) << said;
}

TEST(QuotaCgroup, SigtermRemovesTheCgroupAtOnce) {
  NEED_A_QUOTA();
  std::string path;
  Process child = child_under_quota(path, true);
  ASSERT_TRUE(exists(path));
  const pid_t pid = child.pid();
  child.signal(SIGTERM);
  ASSERT_TRUE(child.wait(30));
  EXPECT_TRUE(WIFSIGNALED(child.status()) && WTERMSIG(child.status()) == SIGTERM) << child.status();
  EXPECT_FALSE(exists(path));                      // the signal's clean-up, no sweep
  EXPECT_TRUE(test::run_folders_of(pid).empty());  // and the run's folder with it
}

TEST(QuotaCgroup, ADeadRunsCgroupThatHoldsATaskIsLeftAloneUntilItIsEmpty) {
  NEED_A_QUOTA();
  std::string path;
  Process child = child_under_quota(path, false);
  child.stop(0);
  // A process that is not the run's moves in after its death: the sweep moves nothing out.
  Process squatter = Process::fork(-1, [] {
    for (;;) pause();
    return 0;
  });
  const std::string home = read_regular_file("/proc/" + std::to_string(squatter.pid()) + "/cgroup");
  {
    const int fd = open((path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    const std::string pid = std::to_string(squatter.pid());
    ASSERT_EQ(write(fd, pid.data(), pid.size()), ssize_t(pid.size()));
    close(fd);
  }
  std::string said;
  for (auto& l : ipc::sweep_leftovers()) said += l + "\n";
  EXPECT_TRUE(exists(path)) << said;
  EXPECT_NE(said.find("kept the cgroup " + path), std::string::npos) << said;
  EXPECT_NE(read_regular_file("/proc/" + std::to_string(squatter.pid()) + "/cgroup"), home);
  squatter.stop(0);  // now it is empty: the next sweep removes it
  said.clear();
  for (auto& l : ipc::sweep_leftovers()) said += l + "\n";
  EXPECT_FALSE(exists(path)) << said;
  EXPECT_NE(said.find("cgroup " + path), std::string::npos) << said;
}

}  // namespace
}  // namespace ipclab
