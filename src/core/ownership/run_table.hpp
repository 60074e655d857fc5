#pragma once
// Inside core/ownership only: the run's table of open objects, which the journal (journal.cpp)
// fills, and what the clean-up on a signal (cleanup.cpp) and the sweep of dead runs (sweep.cpp)
// remove by. Everything a signal handler touches here is async-signal-safe: fixed-size, no
// allocation.
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "core/ownership/kind.hpp"

namespace ipclab::ipc::detail {

inline constexpr int kSysvTag = 0x1C;  // SysV keys of this project: 0x1Cxxxxxx
inline constexpr size_t kNameMax = 1024;
inline constexpr const char* kJournal = "journal";
inline constexpr const char* kSharedLockDir = "/tmp";  // machine-wide: the same whatever TMPDIR says

// The objects this process's run holds now, in a fixed table so that the signal handler can walk
// it without allocating. An entry is filled before its object is created (state 2 while it is
// being written), so a signal between creation and bookkeeping still finds it.
struct Entry {
  std::atomic<int> used{0};  // 0 free, 2 being written, 1 in use
  Kind kind;
  int key;
  char name[kNameMax];
};
inline constexpr int kMaxEntries = 256;
extern Entry g_entries[kMaxEntries];

struct Run {
  std::atomic<pid_t> pid{0};  // the process whose run this is (a forked child starts its own)
  int base_fd = -1, dir_fd = -1, journal_fd = -1, shm_fd = -1;
  char folder[64] = {};  // "run.<id>", the name in the state folder
  std::string id, dir;
  std::atomic<uint64_t> counter{0};
};
extern Run g_run;

/// The journal's word for `k` ("shm", "mq", ...), and back.
const char* kind_word(Kind k);
bool kind_of(const std::string& w, Kind& k);

/// The SysV key a journal line names (hexadecimal).
inline int sysv_key_of(const std::string& name) { return int(std::strtol(name.c_str(), nullptr, 16)); }

/// The name of every cgroup a run makes: "ipclab-<run id>-<n>" (create_cgroup).
inline constexpr const char* kCgroupPrefix = "ipclab-";

/// Removes the object if it exists and belongs to this user; never follows a symlink.
/// Async-signal-safe. `dir_fd` is the folder of Path objects; a Lock's `key` is its descriptor; a
/// Cgroup's `key` is 1 when its tasks are to be moved out first (to the nearest ancestor that
/// takes them: the run's own cgroup, on a signal or at its end), 0 when it is removed only if empty
/// (a dead run's, in a sweep).
bool remove_owned(Kind kind, const char* name, int key, int shm_fd, int dir_fd);

/// Whether the cgroup folder `path` (a Cgroup's journal name) still exists. Async-signal-safe.
bool cgroup_exists(const char* path);

/// Removes what a run's journal lists as open (checked against the run's id), then the journal
/// and the run folder (core/ownership/cleanup.cpp says the rule). Returns what was removed.
std::vector<std::string> clean_run(int base_fd, const std::string& folder, int dir_fd, int journal_fd,
                                   const std::string& id, const std::function<int(const std::string&)>& hold);

/// Opens the lock file at `path` and locks it without waiting: the descriptor; -1 with `why`
/// naming the holder; -2 with `why` when the file is not one ipclab may use.
int try_lock_file(const std::string& path, std::string& why);

/// Starts this process's run if it has none yet (a forked child starts its own).
void ensure_run();

}  // namespace ipclab::ipc::detail
