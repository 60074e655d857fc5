#pragma once
// Everything a run creates outside its own memory — kernel IPC objects, FIFOs, temporary files,
// cgroups —
// and the one way it is created and removed (docs/reliability.md).
//
// A run owns a private folder $TMPDIR/ipclab-<uid>/run.<pid>.<random> (0700) holding its
// journal. The journal is locked (flock) for as long as the run lives: that lock is the run's
// lease, and it does not depend on pid visibility (PID namespaces, pid reuse). Before an object
// is created its name is written to the journal; it is then created exclusively (O_EXCL,
// O_NOFOLLOW, IPC_EXCL) with mode 0600, and when removed the journal says so. At exit, on
// SIGINT/SIGTERM/SIGHUP, and in a later run's sweep once the lease is free, exactly the objects
// the journal lists as open are removed — and only those still owned by the same user, never
// through a symlink.
#include <mqueue.h>
#include <semaphore.h>
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "core/ownership/kind.hpp"

namespace ipclab::ipc {

/// Starts this process's run: the state folder, the run folder, the locked journal. Called by
/// `ipclab run` once the input is valid; every other entry point below starts it on first use.
/// Throws UsageError when the state folder is not private to this user (names the fix).
void begin_run();
/// Removes everything the journal lists as open, the journal and the run folder.
void end_run();
/// "<pid>.<random>": part of every name the run gives.
std::string run_id();
/// The run's private folder (0700), for path-named objects (FIFOs, sockets, peers' files).
std::string run_dir();

/// A fresh name for this run: "/ipclab.<run_id>.<n>.<tag>" (POSIX objects take the leading '/').
std::string unique_name(const std::string& tag);

/// Creates exclusively, 0600, journaled first. Each throws std::system_error on failure, having
/// removed nothing it did not create (an existing object of that name is left alone).
int create_shm(const std::string& name);  // returns the fd (O_RDWR | O_CLOEXEC)
mqd_t create_mq(const std::string& name, int extra_flags, mq_attr* attr);
sem_t* create_sem(const std::string& name, unsigned value);
/// Gives the shared memory object `fd` (a POSIX shm segment, a memfd) `bytes` of storage before it
/// is mapped: posix_fallocate, which also sets its size (no ftruncate needed). Pages merely
/// truncated into existence are found missing only when first touched, and a full /dev/shm then
/// kills the process with SIGBUS; reserved here, it is a std::runtime_error instead, naming `what`
/// (the object), the errno (ENOSPC) and the fix. The one way every shared memory object of ipclab
/// gets its size.
void allocate_shared(int fd, size_t bytes, const std::string& what);
/// A SysV message queue under a fresh key of this project's tag (0x1C in the top byte).
/// Returns the id; `key` receives the key.
int create_msgq(int& key);
/// A FIFO at `path`, which must lie in run_dir().
void create_fifo(const std::string& path);
/// A new file in folder `dir` (O_EXCL | O_NOFOLLOW, then `mode` whatever the umask) under a
/// fresh name of this run: ".<stem>.ipclab.<run_id>.<n>.tmp". Returns the fd; `path` receives
/// its path. Committed with commit_file() or removed with remove(Kind::File, path).
int create_file(const std::string& dir, const std::string& stem, mode_t mode, std::string& path);
/// Renames a file from create_file() to `target` in the same folder (over an existing entry
/// when `replace`, which is then replaced, never followed). Returns false, with the file still
/// the run's, when `replace` is off and `target` exists.
bool commit_file(const std::string& path, const std::string& target, bool replace);

/// A cgroup of this run: the folder "<parent>/ipclab-<run_id>-<n>" in a cgroup file system, made
/// with mkdir (exclusive: an existing folder of that name is not the run's and is left alone),
/// journaled first. Returns its path. Its user moves its tasks out again, then removes it with
/// remove(Kind::Cgroup, path), which throws std::runtime_error (and keeps it journaled) when it is
/// still there. On SIGINT/SIGTERM/SIGHUP and at the run's end its tasks are moved to the nearest
/// ancestor that takes them (its parent, where it was made under the sides' own cgroup), then it is
/// removed; a later run's sweep removes a dead run's cgroup only when it is empty, moving nothing,
/// and keeps the dead run's journal while it is not (core/measure/quota.hpp).
std::string create_cgroup(const std::string& parent);

/// Journals a path in run_dir() that another program will create (e.g. fio's output file).
void track_path(const std::string& path);
/// Journals a file or socket at an absolute path outside run_dir() that another program will
/// create (a library's socket under a fixed folder). A run's end and a later sweep remove it only
/// when its name carries the run's tag (".ipclab.<run_id>."), or — a fixed name another program
/// chose — when the run journaled it while it held a machine-wide lock (lock_shared), which the
/// sweep must then hold itself; otherwise it is removed by its owner's remove() or on a signal.
void track_file(const std::string& path);
/// Journals a POSIX shared memory name ("/name") another program will create, with the same rule.
void track_shm(const std::string& name);
/// Names shared by the whole machine — the fixed files and shared memory every copy of a daemon
/// uses (iceoryx's /tmp/roudi, /dev/shm/iceoryx_mgmt, ...) — are used only while the machine-wide
/// lock `name` is held, for the whole use: flock on /tmp/ipclab-shared.<name>.lock, a file created
/// exclusively 0600 or, when it exists, opened without following a link or blocking and used only
/// when it is a regular file of this user's closed to others. Held, it is journaled ("lock") before
/// any fixed name; a run's end removes those names and then releases it (the file removed while
/// still held). A later sweep removes a dead run's fixed names only once it holds every lock that
/// run journaled: no run, and no daemon that kept the lock's descriptor (Spawn::keep_fds), uses
/// them then. Waits at most `wait_s` for another holder; then Skip, naming the holder (the run
/// written in the file). Skip too when the file is not one ipclab may use. Returns the locked
/// descriptor (close-on-exec), owned by the run until unlock_shared().
int lock_shared(const std::string& name, double wait_s);
/// lock_shared() without waiting: the descriptor, or -1 when another holds it (`held_by` names
/// the holder, as written in the file: "ipclab run <id> (uid N)"), or -2 when the file is not one
/// ipclab may use (`held_by` says why).
int try_lock_shared(const std::string& name, std::string& held_by);
/// Releases lock_shared(name): call once the names it guards are removed. No effect when not held.
void unlock_shared(const std::string& name);
/// The lock file of lock_shared(name).
std::string shared_lock_path(const std::string& name);

/// Runs `f` when the run ends normally or by an error (end_run), before its objects are removed,
/// the last registered first: for a daemon that lives as long as the run, to be stopped while
/// its folder still exists.
void at_end(std::function<void()> f);
/// Removes an object this run created (if still its own) and journals that it is gone. A cgroup
/// that is still there after it (it holds a task) stays journaled: std::runtime_error.
void remove(Kind kind, const std::string& name);

/// The most bytes a Unix socket's path takes (sockaddr_un's sun_path, less its terminating zero).
constexpr size_t kSocketPathMax = 107;
/// "" or why a Unix socket of the run — run_dir() + "/" + a name of up to `name_len` bytes — cannot
/// fit sun_path with this TMPDIR (naming TMPDIR, the limit and the fix). Asked while the input is
/// checked, before any run folder exists: it assumes the longest run id. The one check of every
/// mechanism that binds a socket path in the run folder.
std::string socket_path_problem(size_t name_len);

/// The state folder: $TMPDIR/ipclab-<uid> (TMPDIR defaulting to /tmp).
std::string state_dir();

}  // namespace ipclab::ipc
