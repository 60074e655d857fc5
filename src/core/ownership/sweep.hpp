#pragma once
// The sweep of dead runs: what a run of this user left when it died (SIGKILL, a crash, a power
// cut) is found by its journal, whose lease (a lock on the journal) nobody holds, and removed.
#include <string>
#include <vector>

namespace ipclab::ipc {

/// Removes what runs of this user left when they died: runs whose lease is free. Returns one
/// line per swept run saying what was removed.
std::vector<std::string> sweep_leftovers();

}  // namespace ipclab::ipc
