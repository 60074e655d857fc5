#pragma once
// Clean-up on every exit path: a signal (SIGINT, SIGTERM, SIGHUP, a workload's deadline) removes
// what the run's journal (core/ownership/journal.hpp) lists as open, without allocating, then the
// process dies of the signal; a normal end removes the same through end_run().
namespace ipclab::ipc {

/// Removes the run's objects, its journal and its folder at once, without allocating: for a
/// signal handler that is about to end the process (SIGINT/SIGTERM, a workload's deadline).
void remove_all_now() noexcept;
/// Installs the SIGINT/SIGTERM/SIGHUP handler that removes the run's objects, then dies of the
/// signal.
void install_signal_cleanup();

}  // namespace ipclab::ipc
