#pragma once
// The kinds of object a run's journal lists (core/ownership/journal.hpp), on their own so that the
// removal code (core/ownership/run_table.hpp) needs no more of the journal than these.
namespace ipclab::ipc {

enum class Kind { PosixShm, PosixMq, PosixSem, Path, SysvMsg, File, Lock, Cgroup };

}  // namespace ipclab::ipc
