#pragma once
// Clean-up on every exit path: a signal (SIGINT, SIGTERM, SIGHUP, a workload's deadline) removes
// what the run's journal (core/ownership/journal.hpp) lists as open, without allocating, then the
// process dies of the signal; a normal end removes the same through end_run().
#include <sys/types.h>

namespace ipclab::ipc {

/// Removes the run's objects, its journal and its folder at once, without allocating: for a
/// signal handler that is about to end the process (SIGINT/SIGTERM, a workload's deadline).
void remove_all_now() noexcept;
/// Installs the SIGINT/SIGTERM/SIGHUP handler that removes the run's objects, then dies of the
/// signal.
void install_signal_cleanup();

/// A child of the harness that leads a process group of workers writing into the run's folder
/// (core/process: Spawn::own_group). remove_all_now() stops each such group first, as its owner
/// would — SIGTERM to its leader, so that it stops its workers and they remove their own files;
/// SIGKILL to the whole group once the leader has ended, or kGroupGraceS later — and only then
/// removes the run's objects and its folder. Without allocating; untrack once it is reaped.
inline constexpr double kGroupGraceS = 2.0;
void track_group(pid_t leader) noexcept;
void untrack_group(pid_t leader) noexcept;

}  // namespace ipclab::ipc
