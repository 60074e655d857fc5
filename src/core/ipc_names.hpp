#pragma once
// Names of kernel IPC objects and their clean-up. Every object a run creates carries the run's
// prefix `ipclab.<pid>.`, is registered here, and is removed at normal exit, on SIGINT/SIGTERM,
// or — if the run crashed — by the next run's sweep of leftovers whose pid is dead.
#include <string>

namespace ipclab::ipc {

enum class Kind { PosixShm, PosixMq, PosixSem, Path, SysvMsg, SysvShm, SysvSem };

/// A fresh name for this run: "ipclab.<pid>.<n>.<tag>" (POSIX objects get a leading '/').
std::string unique_name(const std::string& tag);
/// Directory for path-named objects (FIFOs, Unix sockets) of this run, created 0700 on demand.
std::string run_dir();
/// SysV key unique to this run and index (recognisable by the sweep).
int sysv_key(int index);

/// Remembers an object for clean-up (async-signal-safe removal); `id` is for SysV objects.
void track(Kind kind, const std::string& name, int id = -1);
/// Removes the object now and forgets it.
void remove(Kind kind, const std::string& name, int id = -1);
/// Removes every tracked object (normal exit); also run from the SIGINT/SIGTERM handler.
void remove_all();
/// Installs the SIGINT/SIGTERM handler that removes tracked objects, then dies of the signal.
void install_signal_cleanup();
/// Removes objects left by runs whose process is gone. Returns how many were removed.
int sweep_leftovers();

}  // namespace ipclab::ipc
