#pragma once
// A daemon a transport rides on — iceoryx's RouDi, a private dbus-daemon — started and stopped by
// the harness. It is exec'd as every child (core/process), its standard output and error going to
// a log file in the run's private folder (so that it never blocks on a full pipe, and its last
// lines can be quoted when it fails); it is ready once a line of that log holds the text it prints
// when it serves. It is stopped with the object, on every path: SIGTERM, so that it removes what it
// created itself, then SIGKILL after a grace. Should the harness die (kill -9 included), it gets
// SIGKILL (PR_SET_PDEATHSIG). SIGTERM, as it was, let RouDi outlive the harness: RouDi catches
// SIGTERM and, before it ends, waits for the processes registered with it (still alive 20 s after
// a SIGTERM while its client was stopped), and it stays in the harness's process group, so only a
// kill of the whole group took it. What it leaves is journaled, so the next run's sweep removes it
// (fixed, machine-wide names under the lock the dead run held: ipc::lock_shared). Start it from
// the coordinating thread: PR_SET_PDEATHSIG fires when the thread that forked it ends. A transport
// makes it a peer of its session (attach): its death fails the run within the watchdog's poll, and
// its CPU over the window is charged to the record under its name (the record's cpu_by_role),
// apart from the two sides'.
#include <string>
#include <vector>

#include "core/process/process.hpp"

namespace ipclab {

class Session;

class Daemon {
 public:
  struct Options {
    std::string name;               // its role in the record and in messages, e.g. "roudi"
    std::vector<std::string> argv;  // argv[0] an absolute path
    std::string ready_text;         // a line of its output holding this: it serves
    double timeout_s = 10;          // to get ready
    int cpu = -1;                   // pinned there (-1: unpinned)
    double grace_s = 5;             // from SIGTERM to SIGKILL when stopped
    /// Descriptors it inherits: a machine-wide lock (ipc::lock_shared) guarding the names it
    /// uses, so that the lock stays held for as long as the daemon lives, even past the harness.
    std::vector<int> keep_fds;
  };

  /// Starts it and waits until it is ready. Skip when argv[0] is not an executable (the package
  /// is not installed, naming it); std::runtime_error, with the last lines of its log, when it
  /// ends or is not ready within the timeout (it is then stopped).
  explicit Daemon(Options o);
  ~Daemon();  // stop()
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  const std::string& name() const { return opt_.name; }
  /// The line of its log that said it was ready (e.g. the address a dbus-daemon prints).
  const std::string& ready_line() const { return ready_line_; }
  /// Its log so far, the last `lines` lines, on one line each separated by " | ".
  std::string log_tail(int lines = 5) const;
  /// Makes it a peer of the session's next run (Session::add_peer).
  void attach(Session& s);
  Process& process() { return proc_; }
  /// SIGTERM, then SIGKILL after the grace; reaps it. Idempotent. Its log is removed.
  void stop();

 private:
  std::string read_log() const;
  Options opt_;
  std::string log_path_;
  std::string ready_line_;
  Process proc_;
};

}  // namespace ipclab
