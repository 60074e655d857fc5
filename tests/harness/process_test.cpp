// core/process: start, readiness, wait, time-out, stop (a stopped child too), reaping on every
// path, the death wording, and CPU accounting.
#include "core/process/process.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <stdexcept>

#include "core/base/clock.hpp"
#include "core/machine/placement.hpp"
#include "core/measure/watchdog.hpp"

using namespace ipclab;

namespace {

// True when `pid` is no child of ours any more: reaped, no zombie left.
bool gone(pid_t pid) {
  int st = 0;
  return waitpid(pid, &st, WNOHANG) == -1 && errno == ECHILD;
}

// Waits (at most 5 s) until `pid` shows scheduler state `want`.
bool reaches_state(pid_t pid, char want) {
  const uint64_t until = now_ns() + 5'000'000'000ull;
  while (now_ns() < until) {
    if (task_state(pid, -1) == want) return true;
    sleep_ns(1'000'000);
  }
  return false;
}

int sleep_forever() {
  for (;;) pause();
}

}  // namespace

TEST(Process, DeathWording) {
  EXPECT_EQ(describe_exit(0), "exited with 0");
  // Real statuses, not hand-built ones: a child that exits 3, one killed by SIGKILL.
  Process a = Process::fork(-1, [] { return 3; });
  ASSERT_TRUE(a.wait(30));
  EXPECT_EQ(describe_exit(a.status()), "exited with 3");
  Process b = Process::fork(-1, [] { return sleep_forever(); });
  b.signal(SIGKILL);
  ASSERT_TRUE(b.wait(30));
  EXPECT_EQ(describe_exit(b.status()), "died of signal 9 (Killed)");
}

TEST(Process, ForkRunsBodyAndReportsItsExit) {
  Process p = Process::fork(-1, [] { return 3; });
  const pid_t pid = p.pid();
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(p.wait(10));
  EXPECT_TRUE(p.reaped());
  EXPECT_FALSE(p.running());
  EXPECT_FALSE(p.clean());
  EXPECT_EQ(p.death(), "exited with 3");
  EXPECT_TRUE(gone(pid));

  Process ok = Process::fork(-1, [] { return 0; });
  EXPECT_TRUE(ok.wait(10));
  EXPECT_TRUE(ok.clean());
  EXPECT_EQ(ok.death(), "exited with 0");
}

TEST(Process, BodyThatThrowsExits127) {
  Process p = Process::fork(-1, []() -> int { throw std::runtime_error("boom"); });
  ASSERT_TRUE(p.wait(10));
  EXPECT_EQ(p.death(), "exited with 127");
}

TEST(Process, PinsTheChild) {
  // The child reports the CPU it runs on through its exit code.
  const int cpu = allowed_cpus().back();
  ASSERT_LT(cpu, 126);
  Process p = Process::fork(cpu, [] { return sched_getcpu(); });
  ASSERT_TRUE(p.wait(10));
  EXPECT_EQ(p.death(), "exited with " + std::to_string(cpu));
}

TEST(Process, WaitTimesOutOnALiveChildAndAliveSaysSo) {
  Process p = Process::fork(-1, sleep_forever);
  EXPECT_FALSE(p.wait(0.1));
  EXPECT_TRUE(p.alive());
  EXPECT_TRUE(p.running());
  EXPECT_EQ(p.death(), "");
  const pid_t pid = p.pid();
  p.stop();
  EXPECT_TRUE(p.reaped());
  EXPECT_FALSE(p.alive());
  EXPECT_EQ(p.death(), "") << "ended by stop(): not a death";
  EXPECT_TRUE(WIFSIGNALED(p.status()) && WTERMSIG(p.status()) == SIGKILL);
  EXPECT_TRUE(gone(pid));
}

TEST(Process, AliveNoticesADeathAndKeepsItsWording) {
  Process p = Process::fork(-1, sleep_forever);
  // SIGUSR2, not SIGSEGV: a sanitizer build catches the latter in the child.
  kill(p.pid(), SIGUSR2);
  ASSERT_TRUE(p.wait(10));
  EXPECT_FALSE(p.alive());
  EXPECT_EQ(p.death(), "died of signal 12 (User defined signal 2)");
  p.stop();  // ended by itself before: its own status stands
  EXPECT_EQ(p.death(), "died of signal 12 (User defined signal 2)");
}

TEST(Process, StopEndsAStoppedChildWithSigterm) {
  Process p = Process::fork(-1, sleep_forever);
  kill(p.pid(), SIGSTOP);
  ASSERT_TRUE(reaches_state(p.pid(), 'T'));
  const pid_t pid = p.pid();
  p.stop(5);  // SIGTERM + SIGCONT: it ends long before the grace is over
  ASSERT_TRUE(p.reaped());
  EXPECT_TRUE(WIFSIGNALED(p.status()) && WTERMSIG(p.status()) == SIGTERM) << describe_exit(p.status());
  EXPECT_TRUE(gone(pid));
}

TEST(Process, StopKillsAStoppedChildThatIgnoresSigterm) {
  Process p = Process::fork(-1, [] {
    signal(SIGTERM, SIG_IGN);
    sleep_forever();
    return 0;
  });
  // Let it install its SIG_IGN before it is stopped.
  ASSERT_TRUE(reaches_state(p.pid(), 'S'));
  kill(p.pid(), SIGSTOP);
  ASSERT_TRUE(reaches_state(p.pid(), 'T'));
  const pid_t pid = p.pid();
  p.stop(0.2);
  ASSERT_TRUE(p.reaped());
  EXPECT_TRUE(WIFSIGNALED(p.status()) && WTERMSIG(p.status()) == SIGKILL) << describe_exit(p.status());
  EXPECT_TRUE(gone(pid));
}

TEST(Process, NoZombieWhenAnExceptionUnwinds) {
  pid_t pid = -1;
  try {
    Process p = Process::fork(-1, sleep_forever);
    pid = p.pid();
    throw std::runtime_error("caller failed");
  } catch (const std::runtime_error&) {
  }
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(gone(pid));
}

TEST(Process, MoveHandsTheChildOver) {
  Process a = Process::fork(-1, sleep_forever);
  const pid_t pid = a.pid();
  Process b = std::move(a);
  EXPECT_EQ(a.pid(), -1);
  EXPECT_FALSE(a.running());
  EXPECT_TRUE(b.alive());
  Process c = Process::fork(-1, sleep_forever);
  const pid_t other = c.pid();
  c = std::move(b);  // c's own child is stopped and reaped first
  EXPECT_TRUE(gone(other));
  EXPECT_EQ(c.pid(), pid);
  EXPECT_TRUE(c.alive());
}

TEST(Process, ReadinessHandshake) {
  Process p = Process::fork(Spawn{.ready_pipe = true}, [](int ready) {
    (void)!write(ready, "4242\nmore", 9);
    close(ready);
    sleep_forever();
    return 0;
  });
  EXPECT_EQ(p.await_ready(10), "4242");
  EXPECT_TRUE(p.alive());

  Process quitter = Process::fork(Spawn{.ready_pipe = true}, [](int) { return 5; });
  EXPECT_EQ(quitter.await_ready(10), "") << "closed without a line";
  ASSERT_TRUE(quitter.wait(10));
  EXPECT_EQ(quitter.death(), "exited with 5");

  Process silent = Process::fork(Spawn{.ready_pipe = true}, [](int) { return sleep_forever(); });
  EXPECT_EQ(silent.await_ready(0.2), "") << "no line in time";
  EXPECT_TRUE(silent.alive());
}

TEST(Process, ExecWithReadinessOnStdout) {
  Process p = Process::exec(Spawn{.ready_pipe = true}, {"/bin/sh", "-c", "echo 7; exit 4"});
  EXPECT_EQ(p.await_ready(10), "7");
  ASSERT_TRUE(p.wait(10));
  EXPECT_EQ(p.death(), "exited with 4");

  Process missing = Process::exec(Spawn{}, {"/nonexistent/program"});
  ASSERT_TRUE(missing.wait(10));
  EXPECT_EQ(missing.death(), "exited with 127");
}

TEST(Process, ExecKeepsTheAskedDescriptorsOnly) {
  int kept[2], other[2];
  ASSERT_EQ(pipe2(kept, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(other, O_CLOEXEC), 0);
  // The shell exits 0 when `kept`'s write end is open in it and `other`'s is not.
  const std::string script = "[ -e /proc/self/fd/" + std::to_string(kept[1]) + " ] && [ ! -e /proc/self/fd/" +
                             std::to_string(other[1]) + " ]";
  Process p = Process::exec(Spawn{.keep_fds = {kept[1]}}, {"/bin/sh", "-c", script});
  ASSERT_TRUE(p.wait(10));
  EXPECT_TRUE(p.clean()) << p.death();
  for (int fd : {kept[0], kept[1], other[0], other[1]}) close(fd);
}

TEST(Process, CpuOfABusyChild) {
  // The child burns 0.3 s of its own CPU time, then waits to be stopped.
  Process p = Process::fork(-1, [] {
    timespec ts{};
    do clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    while (ts.tv_sec == 0 && ts.tv_nsec < 300'000'000);
    sleep_forever();
    return 0;
  });
  // While it runs: schedstat.
  const uint64_t until = now_ns() + 30'000'000'000ull;
  while (p.cpu_seconds() < 0.25 && now_ns() < until) sleep_ns(10'000'000);
  EXPECT_GE(p.cpu_seconds(), 0.25);
  // Once reaped: wait4's rusage.
  p.stop();
  EXPECT_GE(p.usage().user_s + p.usage().sys_s, 0.25);
  EXPECT_EQ(p.cpu_seconds(), p.usage().user_s + p.usage().sys_s);
}

TEST(Process, FindProgramLooksOnPathAndTakesAPathAsItIs) {
  const std::string sh = find_program("sh");
  ASSERT_FALSE(sh.empty());
  EXPECT_EQ(sh.back(), 'h');
  EXPECT_EQ(access(sh.c_str(), X_OK), 0);
  EXPECT_EQ(find_program("/bin/sh"), "/bin/sh");
  EXPECT_EQ(find_program("ipclab-no-such-program"), "");
  EXPECT_EQ(find_program("/nonexistent/sh"), "");
}

// Each command's stdout, trimmed, whatever its exit status; "" for one that cannot start; the
// commands run side by side (three that each sleep 1 s take well under the 3 s of one after
// another, which a loaded machine holds: sleeping needs no CPU).
TEST(Process, CommandOutputsRunSideBySideAndKeepWhatEachWrote) {
  const uint64_t t0 = now_ns();
  const auto out = command_outputs({{"sh", "-c", "sleep 1; echo one"},
                                    {"sh", "-c", "sleep 1; printf 'two\\n\\n'; exit 3"},
                                    {"ipclab-no-such-program"},
                                    {"sh", "-c", "sleep 1; echo three >&2; echo 3"}},
                                   30);
  const double took_s = double(now_ns() - t0) * 1e-9;
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0], "one");
  EXPECT_EQ(out[1], "two");  // a failing command's output is kept
  EXPECT_EQ(out[2], "");
  EXPECT_EQ(out[3], "3");  // stderr is not stdout
  EXPECT_LT(took_s, 2.5);
}

TEST(Process, CommandOutputKillsACommandPastItsTimeoutAndKeepsWhatItWrote) {
  const uint64_t t0 = now_ns();
  EXPECT_EQ(command_output({"sh", "-c", "echo early; exec sleep 30"}, 0.5), "early");
  EXPECT_LT(double(now_ns() - t0) * 1e-9, 20.0);
}

namespace {

// A group leader (Spawn::own_group) whose child ignores SIGTERM and has no parent-death signal:
// only a signal to the whole group ends it. The grandchild's pid comes back through a pipe.
Process leader_with_stubborn_child(pid_t& grandchild, bool leader_exits) {
  int p[2];
  EXPECT_EQ(pipe2(p, O_CLOEXEC), 0);
  Process leader = Process::fork(Spawn{.own_group = true}, [p, leader_exits](int) {
    const pid_t c = ::fork();
    if (c == 0) {
      signal(SIGTERM, SIG_IGN);
      for (;;) pause();
    }
    (void)!write(p[1], &c, sizeof c);
    if (leader_exits) return 0;
    for (;;) pause();
  });
  ::close(p[1]);
  grandchild = -1;
  EXPECT_EQ(read(p[0], &grandchild, sizeof grandchild), ssize_t(sizeof grandchild));
  ::close(p[0]);
  EXPECT_EQ(getpgid(grandchild), leader.pid());
  return leader;
}

// True once `pid` is gone or a zombie (at most 5 s): the grandchild is not ours to reap.
bool ends(pid_t pid) {
  const uint64_t until = now_ns() + 5'000'000'000ull;
  while (now_ns() < until) {
    const char st = task_state(pid, -1);
    if (st == 0 || st == 'Z') return true;
    sleep_ns(1'000'000);
  }
  return false;
}

}  // namespace

TEST(Process, StopEndsTheWholeGroupOfAGroupLeader) {
  pid_t grandchild = -1;
  Process leader = leader_with_stubborn_child(grandchild, false);
  leader.stop(0.1);  // the SIGTERM ends the leader (its default action); the group's SIGKILL the rest
  EXPECT_TRUE(gone(leader.pid()));
  EXPECT_TRUE(ends(grandchild));
}

TEST(Process, AGroupLeaderFoundDeadHasItsGroupKilled) {
  pid_t grandchild = -1;
  Process leader = leader_with_stubborn_child(grandchild, true);
  EXPECT_TRUE(leader.wait(5));
  EXPECT_TRUE(leader.clean());  // its own exit stands
  EXPECT_TRUE(ends(grandchild));
}
