// The crash handler of a run, and SIGXFSZ ignored (core/ownership/crash.hpp explains the design).
#include "core/ownership/crash.hpp"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <iterator>
#include <string>

#include "core/base/error.hpp"
#include "core/base/fs.hpp"
#include "core/ownership/cleanup.hpp"
#include "core/ownership/journal.hpp"
#include "core/stats/record.hpp"

namespace ipclab::crash {

namespace {

constexpr int kSignals[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
constexpr int kCount = int(std::size(kSignals));

// What the handler writes for each signal: the failed record's line (empty: none, no repetition
// is running) and the stderr line. Two sets: the runner renders the one not published, then
// publishes it, so the handler never reads a set being written.
struct Lines {
  std::string record[kCount], message[kCount];
};
Lines g_lines[2];
std::atomic<int> g_published{-1};
std::atomic<pid_t> g_owner{0};
std::atomic<int> g_handling{0};
std::atomic<int> g_journal_fd{-1};
std::atomic<bool> g_committed{false};
std::string g_temporary, g_path;  // set on the runner's thread before the fd is published
Record g_current;                 // the repetition running (name empty: none)

// "signal 11 (SIGSEGV: Segmentation fault)"
std::string describe(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  const char* descr = sigdescr_np(sig);
  return fmt::format("signal {} (SIG{}: {})", sig, abbrev ? abbrev : "?", descr ? descr : "?");
}

void render() {
  Lines& l = g_lines[g_published.load() == 0 ? 1 : 0];
  const bool journal = g_journal_fd.load() >= 0;
  for (int i = 0; i < kCount; ++i) {
    const int sig = kSignals[i];
    const std::string what = describe(sig);
    l.record[i].clear();
    if (g_current.name.empty()) {
      l.message[i] = fmt::format(
          "ipclab: crashed: {}, between benchmarks; {}\n", what,
          journal ? "the records it finished are in " + printable(g_path) : "no result file was asked for");
      continue;
    }
    Record r = g_current;
    r.fail(
        fmt::format("ipclab died of {} in the middle of this repetition: a crash in the benchmark or "
                    "in a library it uses (an abort() included); the run ended here",
                    what));
    r.extra["crash"] = {{"signal", sig}, {"name", fmt::format("SIG{}", sigabbrev_np(sig))}};
    if (journal) l.record[i] = to_json_line(r);
    l.message[i] = fmt::format(
        "ipclab: {} (repetition {}) crashed: {}; {}\n", printable(r.name), r.repetition, what,
        journal ? "a failed record says so, after the records the run finished, in " + printable(g_path)
                : "no result file was asked for");
  }
  g_published.store(&l == &g_lines[0] ? 0 : 1);
}

void write_whole(int fd, const std::string& s) {
  for (size_t done = 0; done < s.size();) {
    const ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += size_t(n);
  }
}

// Async-signal-safe only: loads, write(2), rename_noreplace (system calls), the allocation-free clean-up,
// raise.
extern "C" void on_crash(int sig) {
  // A forked child, or a second crash while this one is handled: the default action, now.
  if (g_owner.load() != getpid() || g_handling.exchange(1) != 0) {
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  const int saved_errno = errno;
  int i = 0;
  while (i < kCount && kSignals[i] != sig) ++i;
  const int set = g_published.load();
  if (set >= 0 && i < kCount) {
    const Lines& l = g_lines[set];
    const int fd = g_journal_fd.load();
    if (fd >= 0 && !l.record[i].empty()) {
      if (!g_committed.load()) rename_noreplace(g_temporary.c_str(), g_path.c_str());
      write_whole(fd, l.record[i]);
    }
    write_whole(2, l.message[i]);
  }
  ipc::remove_all_now();
  errno = saved_errno;
  // Dies of the signal once the handler returns (it is blocked until then): the exit status and
  // core dump of the crash itself. A fault returns to the faulting instruction, which faults again.
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void ignore_file_size_signal() { signal(SIGXFSZ, SIG_IGN); }

void install() {
  g_owner.store(getpid());
  render();
  // The main thread's alternate stack: a stack overflow there still reaches the handler.
  static char stack[1 << 16];
  stack_t ss{};
  ss.ss_sp = stack;
  ss.ss_size = sizeof stack;
  sigaltstack(&ss, nullptr);
  struct sigaction sa {};
  sa.sa_handler = on_crash;
  sa.sa_flags = SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int s : kSignals) sigaddset(&sa.sa_mask, s);  // a fault inside the handler is fatal at once
  for (int s : kSignals) sigaction(s, &sa, nullptr);
}

void set_journal(int fd, const std::string& temporary, const std::string& path) {
  g_journal_fd.store(-1);
  g_temporary = temporary;
  g_path = path;
  g_committed.store(false);
  g_journal_fd.store(fd);
  render();
}

void journal_committed() { g_committed.store(true); }

void arm(const Record& rec) {
  g_current = rec;
  render();
}

void disarm() {
  g_current = Record{};
  render();
}

}  // namespace ipclab::crash
