#pragma once
// The harness's one process model: every child process of a run — a forked worker (Session), a
// forked or exec'd server (servers, echo), a pingpong guest, a peer executable (Go, Rust, fio) —
// is started, pinned, watched, stopped, reaped and accounted here, and its death is worded here.
//
// The rules it keeps, so that no caller has to:
// - A child dies with the harness (PR_SET_PDEATHSIG SIGKILL), and one whose parent was already
//   gone when it started exits at once: a killed harness never leaves an orphan behind.
// - Between fork and exec the child does not allocate (the harness is multi-threaded: another
//   thread may have held the allocator's lock at the fork): exec's argv is built before forking,
//   pinning uses sched_setaffinity directly, and children end with _exit — no destructors, no
//   atexit handlers, since the parent owns every shared object.
// - Every child is reaped on every path: a Process that goes out of scope (an exception, an early
//   return) kills its child with SIGKILL and reaps it. No zombie, no orphan.
// - Stopping: SIGTERM then, after a grace, SIGKILL — a SIGSTOPped child is continued so that it
//   sees the SIGTERM, and SIGKILL ends it stopped or not. A forked child inherits the harness's
//   signal handlers (SIGTERM would run the harness's clean-up in it), so forked children are
//   stopped with grace 0: SIGKILL at once.
#include <sys/types.h>

#include <csignal>

#include <functional>
#include <string>
#include <vector>

#include "core/base/cpu.hpp"

namespace ipclab {

/// How a process ended, from its wait status: "died of signal 9 (Killed)" or "exited with 3".
/// The one wording of a process's death; messages put who died in front ("server ", "peer x ").
std::string describe_exit(int status);

/// How to start a child.
struct Spawn {
  int cpu = -1;  // pinned to this CPU before it runs its body or execs (-1: unpinned)
  /// The readiness handshake: the child gets the write end of a pipe (a forked body as its
  /// argument, an exec'd program as its stdout) and writes one line on it once it is ready — a
  /// server its port. The parent reads that line with await_ready().
  bool ready_pipe = false;
  int stdin_fd = -1;                   // exec: put on the child's stdin (-1: inherited)
  int stdout_fd = -1, stderr_fd = -1;  // exec: put on the child's stdout / stderr (-1: inherited)
  std::vector<int> keep_fds;           // exec: descriptors that stay open across the exec
  /// What the child gets when the harness dies (PR_SET_PDEATHSIG). SIGKILL: a child that could
  /// catch it might outlive the harness (core/peers/daemon.hpp); what it leaves is journaled and swept.
  int death_signal = SIGKILL;
  /// The child leads a process group of its own, which its children join (a program that starts
  /// workers: stress-ng). Its group is stopped with it: stop()'s SIGTERM goes to the child alone
  /// (it stops its own workers, and may report), the SIGKILL after the grace to the whole group;
  /// and a child found dead has its group killed before it is reaped (the dead leader keeps the
  /// group's id from being reused until then). On SIGINT/SIGTERM/SIGHUP of the harness its group
  /// is stopped the same way before the run's folder is removed (core/ownership/cleanup.hpp:
  /// track_group). The harness's SIGKILL reaches the child alone (PR_SET_PDEATHSIG): its workers
  /// must die with it by themselves, as stress-ng's do.
  bool own_group = false;
};

/// The scheduler state letter of a process (pid > 0) or of a thread of this process (tid > 0):
/// R, S, D, T, t, Z, ...; 0 when it cannot be read.
char task_state(pid_t pid, pid_t tid);

/// What /proc/<pid>/stat says of a process now: its scheduler state letter, its parent, its process
/// group and its command (comm); state 0 when it is gone.
struct ProcStat {
  char state = 0;
  pid_t ppid = 0, pgrp = 0;
  std::string comm;
};
ProcStat proc_stat(pid_t pid);
/// Seconds on CPU of process `pid` so far: every live thread's /proc/<pid>/task/*/schedstat (ns),
/// or the 10 ms ticks of /proc/<pid>/stat where schedstat is missing; 0 once it is gone.
double cpu_seconds_of(pid_t pid);

/// The path of program `name` (one with a '/' as it is), the first executable of that name on
/// $PATH (/usr/bin:/bin without one), then in /usr/sbin and /sbin; "" when there is none.
std::string find_program(const std::string& name);

/// Runs each command (argv[0] a program for find_program) side by side and returns what each wrote
/// on its stdout, trailing whitespace trimmed, whatever its exit status: for short queries of the
/// machine (a version, git's state). "" for one that could not start; one still running after
/// `timeout_s` is killed, and keeps what it wrote. stdin and stderr are /dev/null.
std::vector<std::string> command_outputs(const std::vector<std::vector<std::string>>& commands,
                                         double timeout_s);
/// One command's: command_outputs of one.
std::string command_output(const std::vector<std::string>& argv, double timeout_s);

class Process {
 public:
  /// Forks; the child runs `body` (its argument: the readiness fd, or -1) and exits with what it
  /// returns (127 when it throws). Throws std::system_error when fork fails.
  static Process fork(const Spawn& how, const std::function<int(int ready_fd)>& body);
  static Process fork(int cpu, const std::function<int()>& body);
  /// Forks and execs argv[0] (a path) with `argv`; exit code 127 when the exec fails.
  static Process exec(const Spawn& how, const std::vector<std::string>& argv);

  Process() = default;
  Process(Process&& o) noexcept;
  Process& operator=(Process&& o) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();  // stop(0): SIGKILL and reap, if still running

  /// The child's pid (kept after it is reaped, for messages); -1 when nothing was started.
  pid_t pid() const { return pid_; }
  /// Started and not yet reaped.
  bool running() const { return pid_ > 0 && !reaped_; }

  /// The first line the child wrote on its readiness pipe (without the newline), waiting at most
  /// `timeout_s`; "" when it closed the pipe, died or did not write one in time (alive() and
  /// death() say which). Closes the pipe.
  std::string await_ready(double timeout_s);

  /// Non-blocking liveness check: false once the child has exited (it is then reaped).
  bool alive();
  /// Waits until the child exits, at most `timeout_s` (< 0: for ever); true when it has (reaped).
  bool wait(double timeout_s = -1);
  /// Sends `sig` to a running child (a wake-up, say); no effect once it is reaped.
  void signal(int sig);
  /// Sends `sig` to the child's whole process group (Spawn::own_group; the child alone otherwise);
  /// no effect once it is reaped.
  void signal_group(int sig);
  /// Ends a running child: SIGTERM (and SIGCONT, for a stopped one), SIGKILL when it is still
  /// there `grace_s` later (grace 0: SIGKILL at once), then reaps it. A child that had already
  /// ended by itself keeps its own status: death() reports it.
  void stop(double grace_s = 0);

  /// Reaped (by alive(), wait() or stop()).
  bool reaped() const { return reaped_; }
  /// The wait status once reaped.
  int status() const { return status_; }
  /// Reaped and exited with 0.
  bool clean() const;
  /// How it ended by itself (describe_exit), once reaped; "" while it runs and when stop() ended it.
  std::string death() const;

  /// Its whole life's CPU from wait4 (its threads and its reaped children), once reaped.
  const CpuUsage& usage() const { return usage_; }
  /// Seconds on CPU so far: while it runs, every live thread's /proc/<pid>/task/*/schedstat (ns,
  /// not the 10 ms ticks of /proc/<pid>/stat, which is the fallback); once reaped, wait4's figure.
  double cpu_seconds() const;

 private:
  void reap(int options);  // wait4 with `options`; records status and usage when it returns the child
  bool exited_unreaped();  // own_group: the leader has ended (waitid WNOWAIT), its zombie kept
  void release();          // stops and reaps what this object holds (destructor, move-assignment)
  pid_t pid_ = -1;
  int ready_fd_ = -1;
  bool reaped_ = false, stopped_ = false;
  bool group_ = false;  // Spawn::own_group
  int status_ = 0;
  CpuUsage usage_;
};

}  // namespace ipclab
