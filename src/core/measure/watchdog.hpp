#pragma once
// The harness's one stall detector. Every side of a run (worker thread, forked worker, server,
// guest, client, peer) shows progress as a count that grows while it completes operations; the
// coordinator that watches the measured window and the drain after the stop calls check() now
// and then. A side whose count has not moved for longer than the stall limit has stalled, and
// the run fails with one line that names it.
//
// The rule: limit = max(¼ × --duration, 1 s). A quarter of the window, because a side frozen for
// that long has already cost the window a quarter of its operations, so whatever number the run
// would report no longer describes the mechanism; never under 1 s, because a loaded machine (2
// vCPUs shared with a build) can deschedule a healthy side for hundreds of milliseconds, and a
// short window must not turn scheduling noise into failures.
//
// Naming the cause: a side that waits on a frozen peer stalls too, so check() looks at the state
// of every side it knows a process or thread of (/proc/<pid>/stat, /proc/self/task/<tid>/stat):
// one that is stopped (T, t: SIGSTOP, a debugger) is named as the cause; else, while a stalled
// side waits (S), the sides quiet for over half the limit that are not waiting (R running, D in
// the kernel) are — stalled or nearly so, since the waiting side may have gone quiet first; else
// every stalled side is named.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ipclab {

/// The stall limit for a measured window of `duration_s` seconds: max(duration / 4, 1 s) (ten
/// times that in a ThreadSanitizer build).
double stall_limit_s(double duration_s);

class Watchdog {
 public:
  explicit Watchdog(double duration_s);

  /// Watches one side. `progress` reads its count (a relaxed load of a counter the side stores as
  /// it completes operations); `pid` is its process (-1 for a thread of this process, then `tid`
  /// if known, else -1); `done`, when given, says the side has finished its work (it is no longer
  /// watched: a producer that sent its last message stays silent, rightly). `pid_is`: what `pid`
  /// is when it is not the side itself (a remote side's: "the local ssh to it"), for the message.
  void watch(std::string role, int index, pid_t pid, pid_t tid, std::function<uint64_t()> progress,
             std::function<bool()> done = {}, std::string pid_is = "");
  /// Sets the thread id of side `i` (in watch() order) once it is known.
  void set_tid(size_t i, pid_t tid) { sides_[i].tid = tid; }

  /// "" while every unfinished side progresses; else the one-line reason, naming the side.
  std::string check();
  double limit_s() const { return double(limit_ns_) * 1e-9; }

 private:
  struct Side {
    std::string role;
    int index;
    pid_t pid, tid;
    std::function<uint64_t()> progress;
    std::function<bool()> done;
    std::string pid_is;
    uint64_t last = 0, since = 0;
  };
  std::string name(const Side& s) const;
  uint64_t limit_ns_;
  std::vector<Side> sides_;
};

}  // namespace ipclab
