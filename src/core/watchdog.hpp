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
  /// watched: a producer that sent its last message stays silent, rightly).
  void watch(std::string role, int index, pid_t pid, pid_t tid, std::function<uint64_t()> progress,
             std::function<bool()> done = {});
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
    uint64_t last = 0, since = 0;
  };
  std::string name(const Side& s) const;
  uint64_t limit_ns_;
  std::vector<Side> sides_;
};

/// For a body that shows no progress and cannot be interrupted (a count-based workload run on the
/// coordinator's own thread, Session::measure): if the body is still running `seconds` after
/// construction, `line` (the FAILED line naming the workload) is printed on stderr, the run's
/// objects are removed and the process ends with exit code 1 — failing the run rather than
/// hanging forever. Destroying the guard in time disarms it. One at a time (it is a timer signal,
/// SIGALRM: a guard thread instead made a single-threaded body pay for a multi-threaded process —
/// runtime/switch_ipcrt ran 4% slower with an idle guard thread beside it).
///
/// The same guard covers what a benchmark does outside its measured work (Session::guard_setup):
/// its set-up — a transport's objects, a daemon, a machine-wide lock, a test file — and its
/// clean-up, so that a set-up that hangs fails the run rather than the machine. A step that waits
/// says on what (waiting_for), and the line names it.
class Deadline {
 public:
  Deadline(double seconds, const std::string& line);
  ~Deadline();
  /// What the guarded body waits for now, added to the line ("" clears it); a step whose own
  /// wait is bounded by `bound_s` (> 0) gets that long and 5 s more, when the deadline is nearer.
  /// No effect but the name while no deadline is armed.
  static void waiting_for(const std::string& what, double bound_s = 0);
  /// The body made progress (a large file being written): the armed deadline starts over.
  static void progress();
  /// waiting_for(what, bound_s) for the scope of one step; cleared when it ends, on every path.
  class Waiting {
   public:
    explicit Waiting(const std::string& what, double bound_s = 0) { waiting_for(what, bound_s); }
    ~Waiting() { waiting_for(""); }
    Waiting(const Waiting&) = delete;
    Waiting& operator=(const Waiting&) = delete;
  };
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;
};

}  // namespace ipclab
