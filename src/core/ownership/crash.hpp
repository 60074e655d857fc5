#pragma once
// What a run does when a signal would take it down without a word (docs/reliability.md):
//   SIGXFSZ            ignored process-wide, so that a write over the file size limit (ulimit -f)
//                      fails with EFBIG and is reported as an error (core/base/error.hpp's
//                      write_failure) instead of ending the process;
//   SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL
//                      — a library's abort(), a crash in a benchmark — the handler appends a failed
//                      record naming the signal and the benchmark to the run's results journal,
//                      writes one line on stderr, removes the run's objects, and then dies of the
//                      same signal (exit status and core dump as without it).
//
// The design: an in-process handler that only does async-signal-safe things. Everything it
// writes is rendered beforehand, on the runner's thread, as each repetition starts (arm): for
// each of the five signals the failed record's JSON line and the stderr line. The handler picks
// the lines of its signal and write(2)s them; it then calls ipc::remove_all_now() — the clean-up
// of SIGINT/SIGTERM, which walks a fixed table without allocating or locking. The process's state
// may be damaged by then (a SIGSEGV), so this is best effort: if the handler cannot finish, the
// run's lease on its ipc journal still ends with the process, and the next `ipclab run` sweeps
// what it left (ipc::sweep_leftovers). The main thread's handler runs on an alternate stack, so
// that a stack overflow there is handled too; other threads use their own stack.
//
// A forked child (a worker process, a guest) inherits the handler but is not the run: there it
// restores the default action at once and dies of the signal as it would have, and the parent
// reports the child's death in the benchmark's record as for any other death.
#include <string>

namespace ipclab {
struct Record;
}

namespace ipclab::crash {

/// SIGXFSZ ignored in this process (and inherited by whatever it execs): called first in main.
void ignore_file_size_signal();
/// Installs the handler of the five crash signals for this process (the run's).
void install();
/// The run's results journal (output/reporter.hpp, JournalReporter): its descriptor (-1: none),
/// the temporary it is written as until its first record, and its final path. Until journal_committed(), a
/// handler renames the temporary to the final path first (rename(2) is async-signal-safe), so that the failed
/// record of a crash in the first repetition is kept rather than swept with the temporary.
void set_journal(int fd, const std::string& temporary, const std::string& path);
/// The journal is under its final path now.
void journal_committed();
/// A repetition of `rec.name` (name, suite, mechanism, params and repetition set) is starting:
/// renders what the handler writes should it crash now.
void arm(const Record& rec);
/// The repetition has finished: a crash now names no benchmark, and appends no record.
void disarm();

}  // namespace ipclab::crash
