#pragma once
// A deadline for what cannot be interrupted: past it, the run fails with one line, its objects
// removed (core/ownership/cleanup.hpp), rather than hanging the machine.
#include <string>

namespace ipclab {

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
