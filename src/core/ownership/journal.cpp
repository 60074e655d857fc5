#include "core/ownership/journal.hpp"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/fdio.hpp"
#include "core/base/fs.hpp"

#include "core/ownership/deadline.hpp"
#include "core/ownership/run_table.hpp"

namespace ipclab::ipc {
namespace detail {

Entry g_entries[kMaxEntries];
Run g_run;

const char* kind_word(Kind k) {
  switch (k) {
    case Kind::PosixShm:
      return "shm";
    case Kind::PosixMq:
      return "mq";
    case Kind::PosixSem:
      return "sem";
    case Kind::Path:
      return "path";
    case Kind::SysvMsg:
      return "msg";
    case Kind::File:
      return "file";
    case Kind::Lock:
      return "lock";
    case Kind::Cgroup:
      return "cgroup";
  }
  return "?";
}

bool kind_of(const std::string& w, Kind& k) {
  for (Kind c : {Kind::PosixShm, Kind::PosixMq, Kind::PosixSem, Kind::Path, Kind::SysvMsg, Kind::File,
                 Kind::Lock, Kind::Cgroup})
    if (w == kind_word(c)) {
      k = c;
      return true;
    }
  return false;
}

// Opens the lock file at `path` and locks it without waiting. Returns the locked descriptor; -1
// with `why` naming the holder when another holds it; -2 with `why` when the file is not one
// ipclab may use (a link, a FIFO, another user's, open to others).
int try_lock_file(const std::string& path, std::string& why) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    const bool made = fd >= 0;
    if (!made && errno == EEXIST) fd = open(path.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) continue;  // its holder removed it as it released it: make it anew
      why = fmt::format("{}: {}", path, strerror(errno));
      return -2;
    }
    struct stat st {};
    if (made) fchmod(fd, 0600);
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
      why = fmt::format("{} is not a lock file of yours (uid {}, mode {:o}, {})", path, st.st_uid,
                        st.st_mode & 07777, S_ISREG(st.st_mode) ? "a regular file" : "not a regular file");
      close(fd);
      return -2;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const std::string holder = read_from_start(fd, '\n');
      why = holder.empty() ? std::string("another ipclab run") : holder.substr(0, holder.find('\n'));
      close(fd);
      return -1;
    }
    struct stat there {};
    if (lstat(path.c_str(), &there) == 0 && there.st_dev == st.st_dev && there.st_ino == st.st_ino) return fd;
    close(fd);  // removed (or replaced) by the holder that released it just now: take the new one
  }
  why = path + " keeps being replaced";
  return -2;
}

void ensure_run() {
  if (g_run.pid.load() != getpid()) begin_run();
}

}  // namespace detail

using namespace detail;

namespace {

std::recursive_mutex g_mu;                    // begin/end and journal appends
std::vector<std::function<void()>> g_at_end;  // at_end(): run by end_run, last first

// ---- the journal ----

void remember(Kind kind, const std::string& name, int key) {
  for (auto& e : g_entries) {
    int expected = 0;
    if (e.used.load() != 0 || !e.used.compare_exchange_strong(expected, 2)) continue;
    e.kind = kind;
    e.key = key;
    std::strncpy(e.name, name.c_str(), sizeof e.name - 1);
    e.name[sizeof e.name - 1] = 0;
    e.used.store(1);
    return;
  }
  throw std::runtime_error("more than 256 objects open at once in one run");
}

void forget(Kind kind, const std::string& name) {
  for (auto& e : g_entries)
    if (e.used.load() == 1 && e.kind == kind && name == e.name) {
      e.used.store(0);
      return;
    }
}

// One line per event, "+kind name" before creation and "-kind name" after removal, each in one
// write() to an O_APPEND descriptor: a kill leaves whole lines only.
void journal(char sign, Kind kind, const std::string& name) {
  if (name.empty() || name.size() >= kNameMax || name.find('\n') != std::string::npos)
    throw UsageError(
        fmt::format("'{}' cannot be recorded as a name (empty, over {} bytes or with a "
                    "line break); choose a shorter, plain path",
                    name, kNameMax - 1));
  const std::string line = fmt::format("{}{} {}\n", sign, kind_word(kind), name);
  std::lock_guard lk(g_mu);
  if (::write(g_run.journal_fd, line.data(), line.size()) != ssize_t(line.size()))
    throw std::system_error(errno, std::generic_category(), "append to the run's journal");
}

std::string random_hex() {
  uint64_t r = 0;
  if (getrandom(&r, sizeof r, 0) != ssize_t(sizeof r)) r = uint64_t(clock()) ^ uint64_t(getpid()) << 20;
  return fmt::format("{:08x}", uint32_t(r ^ (r >> 32)));
}

// Opens (creating it 0700 when missing) the state folder, refusing one that is a symlink, is
// not this user's, or is open to others: a folder someone else prepared is never used.
int open_state_dir() {
  const char* t = std::getenv("TMPDIR");
  const std::string tmp = t && *t ? t : "/tmp";
  if (tmp[0] != '/')
    throw UsageError(fmt::format("TMPDIR={} is not an absolute path; set TMPDIR to one, e.g. /tmp", tmp));
  const int tfd = open(tmp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (tfd < 0)
    throw UsageError(fmt::format("TMPDIR {}: {}; set TMPDIR to a writable folder", tmp, strerror(errno)));
  const std::string name = fmt::format("ipclab-{}", geteuid());
  const bool made = mkdirat(tfd, name.c_str(), 0700) == 0;
  const int mk_errno = errno;
  const int fd = openat(tfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  const int open_errno = errno;
  close(tfd);
  const std::string path = tmp + "/" + name;
  if (!made && mk_errno != EEXIST)
    throw UsageError(
        fmt::format("cannot create {}: {}; set TMPDIR to a writable folder", path, strerror(mk_errno)));
  if (fd < 0)
    throw UsageError(fmt::format("{} is not a folder ({}); remove it, or set TMPDIR to a private folder",
                                 path, strerror(open_errno)));
  if (made) fchmod(fd, 0700);
  struct stat st {};
  if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
    close(fd);
    throw UsageError(
        fmt::format("{} belongs to uid {} with mode {:o}, not to you alone; remove it, or "
                    "set TMPDIR to a private folder",
                    path, st.st_uid, st.st_mode & 07777));
  }
  return fd;
}

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

}  // namespace

std::string state_dir() {
  const char* t = std::getenv("TMPDIR");
  return fmt::format("{}/ipclab-{}", t && *t ? t : "/tmp", geteuid());
}

void begin_run() {
  std::lock_guard lk(g_mu);
  if (g_run.pid.load() == getpid()) return;
  // A forked child does not own its parent's run: it starts its own if it creates anything.
  for (int* fd : {&g_run.base_fd, &g_run.dir_fd, &g_run.journal_fd, &g_run.shm_fd}) close_fd(*fd);
  for (auto& e : g_entries) e.used.store(0);

  const int base = open_state_dir();
  std::string id, fresh;
  for (int attempt = 0;; ++attempt) {
    id = fmt::format("{}.{}", getpid(), random_hex());
    fresh = "new." + id;  // sweeps leave "new.*" alone until it is locked and renamed
    if (mkdirat(base, fresh.c_str(), 0700) == 0) break;
    if (errno != EEXIST || attempt > 100) {
      int e = errno;
      close(base);
      throw UsageError(fmt::format("cannot create a run folder in {}: {}; set TMPDIR to a writable folder",
                                   state_dir(), strerror(e)));
    }
  }
  const int dir = openat(base, fresh.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  const int jfd =
      dir < 0 ? -1
              : openat(dir, kJournal, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
  const std::string folder = "run." + id;
  if (dir < 0 || jfd < 0 || fchmod(dir, 0700) != 0 || fchmod(jfd, 0600) != 0 || flock(jfd, LOCK_EX) != 0 ||
      renameat(base, fresh.c_str(), base, folder.c_str()) != 0) {
    int e = errno;
    if (jfd >= 0) unlinkat(dir, kJournal, 0), close(jfd);
    if (dir >= 0) close(dir);
    unlinkat(base, fresh.c_str(), AT_REMOVEDIR);
    close(base);
    throw std::system_error(e, std::generic_category(), "create the run folder in " + state_dir());
  }
  g_run.base_fd = base;
  g_run.dir_fd = dir;
  g_run.journal_fd = jfd;
  g_run.shm_fd = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  std::snprintf(g_run.folder, sizeof g_run.folder, "%s", folder.c_str());
  g_run.id = id;
  g_run.dir = state_dir() + "/" + folder;
  g_run.counter.store(0);
  g_run.pid.store(getpid());
  static bool at_exit = false;
  if (!at_exit) {
    std::atexit([] { end_run(); });
    at_exit = true;
  }
}

void end_run() {
  if (g_run.pid.load() != getpid()) return;
  // Daemons that live as long as the run stop first (they may remove objects themselves).
  for (;;) {
    std::function<void()> f;
    {
      std::lock_guard lk(g_mu);
      if (g_at_end.empty()) break;
      f = std::move(g_at_end.back());
      g_at_end.pop_back();
    }
    try {
      f();
    } catch (const std::exception& e) {
      fmt::print(stderr, "ipclab: at the end of the run: {}\n", printable(e.what()));
    }
  }
  std::lock_guard lk(g_mu);
  if (g_run.pid.load() != getpid()) return;
  // The journal is written through an append-only descriptor, which cannot be read: what the run
  // still lists as open (a path another program created, an object whose owner never got to
  // remove it) is read through a descriptor of its own.
  const int rfd = g_run.dir_fd >= 0 ? openat(g_run.dir_fd, kJournal, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
  // The machine-wide locks still held are this run's own descriptors.
  auto held = [](const std::string& path) {
    for (auto& e : g_entries)
      if (e.used.load() == 1 && e.kind == Kind::Lock && path == e.name) {
        e.used.store(0);
        return e.key;
      }
    return -1;
  };
  clean_run(g_run.base_fd, g_run.folder, g_run.dir_fd, rfd >= 0 ? rfd : g_run.journal_fd, g_run.id, held);
  if (rfd >= 0) close(rfd);
  for (auto& e : g_entries) e.used.store(0);
  for (int* fd : {&g_run.base_fd, &g_run.dir_fd, &g_run.journal_fd, &g_run.shm_fd}) close_fd(*fd);
  g_run.pid.store(0);
}

std::string run_id() {
  ensure_run();
  return g_run.id;
}

std::string run_dir() {
  ensure_run();
  return g_run.dir;
}

std::string unique_name(const std::string& tag) {
  ensure_run();
  return fmt::format("/ipclab.{}.{}.{}", g_run.id, g_run.counter.fetch_add(1), tag);
}

namespace {

// Journal, remember, create; on failure forget and journal the failure, then throw what
// `create` reported. `create` returns false with errno set when it failed.
template <class F>
void create_journaled(Kind kind, const std::string& name, int key, const char* what, F&& create) {
  ensure_run();
  journal('+', kind, name);
  remember(kind, name, key);
  if (create()) return;
  const int e = errno;
  forget(kind, name);
  journal('-', kind, name);
  throw std::system_error(e, std::generic_category(), fmt::format("{} {}", what, name));
}

std::string base_in_run_dir(const std::string& path) {
  const std::string dir = run_dir() + "/";
  if (path.rfind(dir, 0) != 0 || path.find('/', dir.size()) != std::string::npos)
    throw std::logic_error(path + " is not in the run folder " + dir);
  return path.substr(dir.size());
}

}  // namespace

int create_shm(const std::string& name) {
  int fd = -1;
  create_journaled(Kind::PosixShm, name, 0, "shm_open", [&] {
    fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    return fd >= 0 && fchmod(fd, 0600) == 0;
  });
  return fd;
}

void allocate_shared(int fd, size_t bytes, const std::string& what) {
  int e;
  do e = posix_fallocate(fd, 0, off_t(bytes));  // returns the error; errno is left alone
  while (e == EINTR);
  if (e == 0) return;
  const char* name = strerrorname_np(e);
  const std::string fix = e == ENOSPC
                              ? "; /dev/shm is full: free room there (df -h /dev/shm) or mount it larger"
                          : e == ENOMEM ? "; free memory, or ask for less"
                                        : "";
  throw std::runtime_error(fmt::format("{}: no room for {} bytes of shared memory ({}: {}){}", what, bytes,
                                       name ? name : "?", strerror(e), fix));
}

mqd_t create_mq(const std::string& name, int extra_flags, mq_attr* attr) {
  mqd_t q = mqd_t(-1);
  create_journaled(Kind::PosixMq, name, 0, "mq_open", [&] {
    q = mq_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | extra_flags, 0600, attr);
    if (q != mqd_t(-1)) fchmod(q, 0600);
    return q != mqd_t(-1);
  });
  return q;
}

sem_t* create_sem(const std::string& name, unsigned value) {
  sem_t* s = SEM_FAILED;
  create_journaled(Kind::PosixSem, name, 0, "sem_open", [&] {
    s = sem_open(name.c_str(), O_CREAT | O_EXCL, 0600, value);
    // sem_open applies the umask; the file is ours now (created exclusively), set its mode.
    if (s != SEM_FAILED && g_run.shm_fd >= 0)
      fchmodat(g_run.shm_fd, ("sem." + name.substr(1)).c_str(), 0600, 0);
    return s != SEM_FAILED;
  });
  return s;
}

int create_msgq(int& key) {
  for (int attempt = 0;; ++attempt) {
    uint32_t r = 0;
    if (getrandom(&r, sizeof r, 0) != ssize_t(sizeof r))
      r = uint32_t(g_run.counter.fetch_add(1) * 2654435761u);
    key = (kSysvTag << 24) | int(r & 0xffffff);
    const std::string name = fmt::format("{:#x}", key);
    int id = -1;
    try {
      create_journaled(Kind::SysvMsg, name, key, "msgget", [&] {
        id = msgget(key, IPC_CREAT | IPC_EXCL | 0600);
        return id >= 0;
      });
      return id;
    } catch (const std::system_error& e) {
      if (e.code().value() != EEXIST || attempt > 64) throw;  // EEXIST: someone's key; draw again
    }
  }
}

void create_fifo(const std::string& path) {
  const std::string base = base_in_run_dir(path);
  create_journaled(Kind::Path, base, 0, "mkfifo", [&] {
    return mkfifoat(g_run.dir_fd, base.c_str(), 0600) == 0 &&
           fchmodat(g_run.dir_fd, base.c_str(), 0600, 0) == 0;
  });
}

int create_file(const std::string& dir, const std::string& stem, mode_t mode, std::string& path) {
  ensure_run();
  if (stem.find('/') != std::string::npos) throw std::logic_error("create_file: stem with '/'");
  std::string folder = std::filesystem::absolute(dir).lexically_normal().string();
  while (folder.size() > 1 && folder.back() == '/') folder.pop_back();  // "a/." normalises to "a/"
  const std::string name = fmt::format(".{}.ipclab.{}.{}.tmp", stem, g_run.id, g_run.counter.fetch_add(1));
  path = (folder == "/" ? "" : folder) + "/" + name;
  const int dfd = open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) throw std::system_error(errno, std::generic_category(), "open folder " + folder);
  int fd = -1;
  try {
    create_journaled(Kind::File, path, 0, "create", [&] {
      fd = openat(dfd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
      return fd >= 0 && fchmod(fd, mode) == 0;
    });
  } catch (...) {
    close(dfd);
    throw;
  }
  close(dfd);
  return fd;
}

bool commit_file(const std::string& path, const std::string& target, bool replace) {
  auto folder = [](const std::string& p) {
    return std::filesystem::absolute(p).lexically_normal().parent_path();
  };
  if (folder(target) != folder(path))
    throw std::logic_error("commit_file: " + target + " is not in the folder of " + path);
  NoReplace way = NoReplace::Rename2;
  if ((replace ? ::rename(path.c_str(), target.c_str())
               : rename_noreplace(path.c_str(), target.c_str(), &way)) != 0) {
    if (!replace && errno == EEXIST) return false;
    throw std::system_error(errno, std::generic_category(), "rename to " + target);
  }
  // Said once a run: the file system of the results has not the one-step way (NFS, 9p, FUSE).
  static std::atomic<bool> said{false};
  if (way != NoReplace::Rename2 && !said.exchange(true))
    fmt::print(stderr,
               "ipclab: {}'s file system has no RENAME_NOREPLACE; new files there are put in place with {}\n",
               printable(folder(target).string()), describe(way));
  forget(Kind::File, path);
  journal('-', Kind::File, path);
  return true;
}

std::string create_cgroup(const std::string& parent) {
  ensure_run();
  if (parent.empty() || parent[0] != '/')
    throw std::logic_error("create_cgroup: not an absolute path: " + parent);
  const std::string path =
      fmt::format("{}/{}{}-{}", parent, kCgroupPrefix, g_run.id, g_run.counter.fetch_add(1));
  // Key 1: on a signal or at the run's end its tasks are moved out before it is removed.
  create_journaled(Kind::Cgroup, path, 1, "mkdir", [&] { return mkdir(path.c_str(), 0755) == 0; });
  return path;
}

void track_path(const std::string& path) {
  const std::string base = base_in_run_dir(path);
  journal('+', Kind::Path, base);
  remember(Kind::Path, base, 0);
}

void track_file(const std::string& path) {
  ensure_run();
  if (path.empty() || path[0] != '/') throw std::logic_error("track_file: not an absolute path: " + path);
  journal('+', Kind::File, path);
  remember(Kind::File, path, 0);
}

void track_shm(const std::string& name) {
  ensure_run();
  if (name.size() < 2 || name[0] != '/' || name.find('/', 1) != std::string::npos)
    throw std::logic_error("track_shm: not a POSIX shared memory name: " + name);
  journal('+', Kind::PosixShm, name);
  remember(Kind::PosixShm, name, 0);
}

void at_end(std::function<void()> f) {
  ensure_run();
  std::lock_guard lk(g_mu);
  g_at_end.push_back(std::move(f));
}

void remove(Kind kind, const std::string& name) {
  if (g_run.pid.load() != getpid()) return;  // not this process's run
  const std::string n =
      kind == Kind::Path && name.find('/') != std::string::npos ? base_in_run_dir(name) : name;
  // A cgroup: what its user did not move out (a child a side made in it) goes to the nearest ancestor.
  remove_owned(kind, n.c_str(),
               kind == Kind::SysvMsg  ? sysv_key_of(n)
               : kind == Kind::Cgroup ? 1
                                      : 0,
               g_run.shm_fd, g_run.dir_fd);
  const int e = errno;
  if (kind == Kind::Cgroup && cgroup_exists(n.c_str()))  // still journaled: the run's end tries again
    throw std::runtime_error(fmt::format("cannot remove the cgroup {}: {}", n, strerror(e)));
  forget(kind, n);
  journal('-', kind, n);
}

std::string socket_path_problem(size_t name_len) {
  // "<state folder>/run.<pid>.<8 hex>/<name>": a pid has at most 7 digits (pid_max 4194304).
  const std::string state = state_dir();
  const size_t longest = state.size() + std::strlen("/run.") + 7 + 1 + 8 + 1 + name_len;
  if (longest <= kSocketPathMax) return "";
  const char* t = std::getenv("TMPDIR");
  const std::string tmp = t && *t ? t : "/tmp";
  const size_t room = kSocketPathMax - std::min(kSocketPathMax, longest - tmp.size());
  return fmt::format(
      "TMPDIR={} is too long for the Unix socket this benchmark binds in its run folder: up to {} bytes, "
      "over the {} a socket path takes (sun_path); set TMPDIR to a folder of at most {} bytes, e.g. /tmp",
      tmp, longest, kSocketPathMax, room);
}

std::string shared_lock_path(const std::string& name) {
  return fmt::format("{}/ipclab-shared.{}.lock", kSharedLockDir, name);
}

int try_lock_shared(const std::string& name, std::string& held_by) {
  ensure_run();
  const std::string path = shared_lock_path(name);
  const int fd = try_lock_file(path, held_by);
  if (fd < 0) return fd;
  try {
    journal('+', Kind::Lock, path);
    remember(Kind::Lock, path, fd);
  } catch (...) {
    close(fd);
    throw;
  }
  // Who holds it, for a run that waits on it or is refused.
  const std::string holder = fmt::format("ipclab run {} (uid {})\n", g_run.id, geteuid());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, holder.data(), holder.size(), 0) != ssize_t(holder.size())) {
  }  // the lock is held all the same; only the others' message loses the name
  return fd;
}

int lock_shared(const std::string& name, double wait_s) {
  const std::string path = shared_lock_path(name);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  const Deadline::Waiting waiting("the machine-wide lock " + path, wait_s);
  for (;;) {
    std::string why;
    const int fd = try_lock_shared(name, why);
    if (fd >= 0) return fd;
    if (fd == -2)
      throw Skip(
          fmt::format("{}'s machine-wide names cannot be locked: {}; remove that file if it is "
                      "no one's, or run as its owner",
                      name, why));
    if (std::chrono::steady_clock::now() >= deadline)
      throw Skip(
          fmt::format("{}'s machine-wide names are in use by {} (lock {} still held after {:.0f} s); "
                      "run it again once that run has ended",
                      name, printable(why), path, wait_s));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void unlock_shared(const std::string& name) {
  if (g_run.pid.load() != getpid()) return;
  const std::string path = shared_lock_path(name);
  for (auto& e : g_entries)
    if (e.used.load() == 1 && e.kind == Kind::Lock && path == e.name) {
      const int fd = e.key;
      remove_owned(Kind::Lock, e.name, fd, -1, -1);  // removed while held, then released
      e.used.store(0);
      journal('-', Kind::Lock, path);
      close(fd);
      return;
    }
}

}  // namespace ipclab::ipc
