// The one process model (see process.hpp).
#include "core/process/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "core/base/affinity.hpp"
#include "core/base/clock.hpp"
#include "core/ownership/cleanup.hpp"

namespace ipclab {

std::string describe_exit(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("died of signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return fmt::format("exited with {}", WEXITSTATUS(status));
}

namespace {

// The child's first steps after fork, before its body or exec: system calls only, no allocation
// (another thread of the harness may have held the allocator's lock at the fork).
void child_setup(pid_t parent, int cpu, int death_signal, bool own_group) {
  // The child dies with the harness, so a killed harness never leaves an orphan behind; a parent
  // already gone before the prctl took effect would never send that signal, so check.
  prctl(PR_SET_PDEATHSIG, death_signal);
  if (getppid() != parent) _exit(127);
  if (own_group) setpgid(0, 0);  // the parent sets it too: whichever runs first
  if (cpu >= 0 && !set_affinity(cpu)) _exit(126);
}

// The fields of a /proc/.../stat file that follow "pid (comm) ": the command may hold spaces
// and parentheses, so they start after the last ')'. [0] is the state (field 3 of proc(5));
// `comm`, when given, receives the command.
std::vector<std::string> stat_fields(const std::string& path, std::string* comm = nullptr) {
  std::ifstream f(path);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t lp = s.find('('), rp = s.rfind(')');
  std::vector<std::string> fields;
  if (rp == std::string::npos || lp == std::string::npos || rp < lp) return fields;
  if (comm) *comm = s.substr(lp + 1, rp - lp - 1);
  std::istringstream in(s.substr(rp + 1));
  for (std::string field; in >> field;) fields.push_back(field);
  return fields;
}

void ready_pipe(int p[2]) {
  if (pipe2(p, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
}

void close_pipe(int p[2]) {
  for (int i = 0; i < 2; ++i)
    if (p[i] >= 0) ::close(p[i]);
}

}  // namespace

Process Process::fork(const Spawn& how, const std::function<int(int)>& body) {
  int p[2] = {-1, -1};
  if (how.ready_pipe) ready_pipe(p);
  const pid_t parent = getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    close_pipe(p);
    throw std::system_error(e, std::generic_category(), "fork");
  }
  if (pid == 0) {
    child_setup(parent, how.cpu, how.death_signal, how.own_group);
    if (p[0] >= 0) ::close(p[0]);
    int rc = 127;
    try {
      rc = body(p[1]);
    } catch (...) {
    }
    _exit(rc);  // no destructors or atexit handlers: the parent owns every shared object
  }
  Process proc;
  proc.pid_ = pid;
  if (how.own_group) {
    setpgid(pid, pid);  // before any signal to its group: the child may not have run yet
    proc.group_ = true;
    ipc::track_group(pid);  // a signal's clean-up stops its group before it removes the run's folder
  }
  if (p[1] >= 0) ::close(p[1]);
  proc.ready_fd_ = p[0];
  return proc;
}

Process Process::fork(int cpu, const std::function<int()>& body) {
  return fork(Spawn{.cpu = cpu}, [&body](int) { return body(); });
}

Process Process::exec(const Spawn& how, const std::vector<std::string>& argv) {
  if (argv.empty()) throw std::logic_error("Process::exec: empty argv");
  // execv's argv, built before forking: the child must not allocate.
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // The child's stdout is the readiness pipe when there is one, else the given descriptor.
  return fork(how, [&args, &how](int ready_fd) {
    const int out = ready_fd >= 0 ? ready_fd : how.stdout_fd;
    if (how.stdin_fd >= 0) dup2(how.stdin_fd, 0);
    if (out >= 0) dup2(out, 1);  // the copy on 1 is not close-on-exec
    if (how.stderr_fd >= 0) dup2(how.stderr_fd, 2);
    for (int fd : how.keep_fds) fcntl(fd, F_SETFD, 0);
    execv(args[0], args.data());
    return 127;
  });
}

Process::Process(Process&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      ready_fd_(std::exchange(o.ready_fd_, -1)),
      reaped_(o.reaped_),
      stopped_(o.stopped_),
      group_(o.group_),
      status_(o.status_),
      usage_(o.usage_) {}

Process& Process::operator=(Process&& o) noexcept {
  if (this != &o) {
    release();
    pid_ = std::exchange(o.pid_, -1);
    ready_fd_ = std::exchange(o.ready_fd_, -1);
    reaped_ = o.reaped_;
    stopped_ = o.stopped_;
    group_ = o.group_;
    status_ = o.status_;
    usage_ = o.usage_;
  }
  return *this;
}

Process::~Process() { release(); }

void Process::release() {
  if (ready_fd_ >= 0) ::close(std::exchange(ready_fd_, -1));
  stop(0);
}

std::string Process::await_ready(double timeout_s) {
  if (ready_fd_ < 0) return "";
  std::string got;
  const uint64_t deadline = now_ns() + uint64_t(timeout_s * 1e9);
  while (got.find('\n') == std::string::npos && now_ns() < deadline) {
    pollfd pfd{ready_fd_, POLLIN, 0};
    if (poll(&pfd, 1, 100) <= 0) continue;
    char buf[64];
    const ssize_t n = read(ready_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // closed: the child ended (or closed it) without a line
    got.append(buf, size_t(n));
  }
  ::close(std::exchange(ready_fd_, -1));
  const size_t nl = got.find('\n');
  return nl == std::string::npos ? std::string() : got.substr(0, nl);
}

void Process::reap(int options) {
  int st = 0;
  rusage ru{};
  pid_t r;
  while ((r = wait4(pid_, &st, options, &ru)) < 0 && errno == EINTR) {
  }
  if (r == pid_) {
    reaped_ = true;
    status_ = st;
    usage_ = usage_of(ru);
  } else if (r < 0 && errno == ECHILD) {
    reaped_ = true;  // not our child any more (reaped elsewhere): nothing left to wait for
  }
  if (reaped_ && group_) ipc::untrack_group(pid_);
}

bool Process::exited_unreaped() {
  siginfo_t info{};
  int r;
  while ((r = waitid(P_PID, id_t(pid_), &info, WEXITED | WNOHANG | WNOWAIT)) < 0 && errno == EINTR) {
  }
  return r < 0 ? errno == ECHILD : info.si_pid == pid_;
}

bool Process::alive() {
  if (!running()) return false;
  if (group_) {
    // The leader's zombie keeps its group's id: the group is killed before the leader is reaped.
    if (!exited_unreaped()) return true;
    kill(-pid_, SIGKILL);
  }
  reap(WNOHANG);
  return !reaped_;
}

bool Process::wait(double timeout_s) {
  if (!running()) return pid_ > 0;
  if (timeout_s < 0) {
    if (group_) {  // its group is killed while the leader's zombie still holds the group's id
      siginfo_t info{};
      while (waitid(P_PID, id_t(pid_), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
      }
      kill(-pid_, SIGKILL);
    }
    reap(0);
    return true;
  }
  const uint64_t deadline = now_ns() + uint64_t(timeout_s * 1e9);
  while (alive()) {
    if (now_ns() >= deadline) return false;
    sleep_ns(1'000'000);
  }
  return true;
}

void Process::signal(int sig) {
  if (running()) kill(pid_, sig);
}

void Process::signal_group(int sig) {
  if (running()) kill(group_ ? -pid_ : pid_, sig);
}

void Process::stop(double grace_s) {
  if (!alive()) return;  // never started, already reaped, or ended by itself: its status stands
  stopped_ = true;
  if (grace_s > 0) {
    kill(pid_, SIGTERM);
    signal_group(SIGCONT);  // a stopped child sees its SIGTERM only once continued
    if (wait(grace_s)) return;
  }
  signal_group(SIGKILL);  // ends a stopped child too
  reap(0);
}

bool Process::clean() const { return reaped_ && WIFEXITED(status_) && WEXITSTATUS(status_) == 0; }

std::string Process::death() const { return reaped_ && !stopped_ ? describe_exit(status_) : std::string(); }

double Process::cpu_seconds() const { return running() ? cpu_seconds_of(pid_) : usage_.total_s(); }

double cpu_seconds_of(pid_t pid) {
  // Nanoseconds on CPU of every thread (schedstat), not the 10 ms ticks of /proc/<pid>/stat.
  if (const auto s = process_schedstat(pid)) return double(s->on_cpu_ns) * 1e-9;
  // Fields after the command: state(3) ... utime(14) stime(15).
  const auto fields = stat_fields(fmt::format("/proc/{}/stat", pid));
  if (fields.size() < 13) return 0;
  return double(std::stoull(fields[11]) + std::stoull(fields[12])) / double(sysconf(_SC_CLK_TCK));
}

ProcStat proc_stat(pid_t pid) {
  ProcStat st;
  std::string comm;
  const auto fields = stat_fields(fmt::format("/proc/{}/stat", pid), &comm);
  if (fields.size() < 3 || fields[0].empty()) return st;
  st.state = fields[0][0];
  st.ppid = pid_t(std::atol(fields[1].c_str()));
  st.pgrp = pid_t(std::atol(fields[2].c_str()));
  st.comm = comm;
  return st;
}

char task_state(pid_t pid, pid_t tid) {
  if (pid <= 0 && tid <= 0) return 0;
  const auto fields =
      stat_fields(pid > 0 ? fmt::format("/proc/{}/stat", pid) : fmt::format("/proc/self/task/{}/stat", tid));
  return fields.empty() || fields[0].empty() ? 0 : fields[0][0];
}

std::string find_program(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* env = std::getenv("PATH");
  std::stringstream path(env && *env ? env : "/usr/bin:/bin");
  for (std::string d; std::getline(path, d, ':');)
    if (!d.empty() && access((d + "/" + name).c_str(), X_OK) == 0) return d + "/" + name;
  // System tools (tc, ip) where a user's PATH leaves the sbin folders out.
  for (const char* d : {"/usr/sbin/", "/sbin/"})
    if (access((d + name).c_str(), X_OK) == 0) return d + name;
  return "";
}

std::vector<std::string> command_outputs(const std::vector<std::vector<std::string>>& commands,
                                         double timeout_s) {
  const size_t n = commands.size();
  std::vector<std::string> out(n);
  std::vector<Process> procs(n);
  std::vector<int> fds(n, -1);
  const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (size_t i = 0; i < n; ++i) {
    if (commands[i].empty()) continue;
    std::vector<std::string> argv = commands[i];
    argv[0] = find_program(argv[0]);
    int p[2];
    if (argv[0].empty() || pipe2(p, O_CLOEXEC) != 0) continue;
    try {
      procs[i] = Process::exec({.stdin_fd = null_fd, .stdout_fd = p[1], .stderr_fd = null_fd}, argv);
      fds[i] = p[0];
    } catch (const std::exception&) {
      ::close(p[0]);
    }
    ::close(p[1]);
  }
  if (null_fd >= 0) ::close(null_fd);
  // Read them all as they write (a long output would fill its pipe and never end), until each
  // has closed its stdout or the time is up.
  const uint64_t deadline = now_ns() + uint64_t(std::max(0.0, timeout_s) * 1e9);
  for (;;) {
    std::vector<pollfd> pfds;
    std::vector<size_t> who;
    for (size_t i = 0; i < n; ++i)
      if (fds[i] >= 0) {
        pfds.push_back({fds[i], POLLIN, 0});
        who.push_back(i);
      }
    const uint64_t now = now_ns();
    if (pfds.empty() || now >= deadline) break;
    const int r = ::poll(pfds.data(), pfds.size(), int(std::max<uint64_t>(1, (deadline - now) / 1'000'000)));
    if (r < 0 && errno != EINTR) break;
    for (size_t k = 0; k < pfds.size(); ++k) {
      if (!pfds[k].revents) continue;
      char buf[4096];
      const ssize_t got = ::read(pfds[k].fd, buf, sizeof buf);
      if (got > 0)
        out[who[k]].append(buf, size_t(got));
      else if (got == 0 || errno != EINTR)
        ::close(std::exchange(fds[who[k]], -1));
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (fds[i] >= 0) ::close(fds[i]);
    const uint64_t now = now_ns();
    if (procs[i].running() && !procs[i].wait(now < deadline ? double(deadline - now) * 1e-9 : 0))
      procs[i].stop(0);
    while (!out[i].empty() && std::isspace(static_cast<unsigned char>(out[i].back()))) out[i].pop_back();
  }
  return out;
}

std::string command_output(const std::vector<std::string>& argv, double timeout_s) {
  return command_outputs({argv}, timeout_s)[0];
}

}  // namespace ipclab
