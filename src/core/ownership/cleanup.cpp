#include "core/ownership/cleanup.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <mqueue.h>
#include <signal.h>
#include <sys/msg.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/fdio.hpp"
#include "core/ownership/run_table.hpp"

namespace ipclab::ipc {
namespace detail {

namespace {

// True when `name` in folder `dirfd` is a non-directory, non-symlink entry of this user.
bool owned_entry(int dirfd, const char* name, bool regular_only) {
  struct stat st {};
  if (dirfd < 0 || fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
  if (st.st_uid != geteuid() || S_ISLNK(st.st_mode) || S_ISDIR(st.st_mode)) return false;
  return !regular_only || S_ISREG(st.st_mode);
}

// `a` + "/" + `b` into `out` (`cap` bytes); false when it does not fit. Async-signal-safe.
bool join_path(char* out, size_t cap, const char* a, const char* b) {
  const size_t la = std::strlen(a), lb = std::strlen(b);
  if (la + 1 + lb + 1 > cap) return false;
  std::memcpy(out, a, la);
  out[la] = '/';
  std::memcpy(out + la + 1, b, lb + 1);
  return true;
}

// Writes task id `id` in decimal to the cgroup file `file` (which moves it there). Async-signal-safe.
bool write_task(const char* file, long id) {
  char digits[24];
  int n = 0;
  do digits[sizeof digits - 1 - n++] = char('0' + id % 10);
  while ((id /= 10) > 0 && n < int(sizeof digits));
  const int fd = open(file, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, digits + sizeof digits - n, size_t(n)) == n;
  const int e = errno;
  close(fd);
  errno = e;
  return ok;
}

// Moves task `id` out of the cgroup at `path` (through `list`: "tasks" on v1, "cgroup.procs" on v2)
// to the nearest ancestor that takes it: its parent, unless that is a v2 cgroup whose children
// have controllers (it may hold no process), and so on up to the hierarchy's root, which takes
// any. Async-signal-safe.
void move_up(const char* path, const char* list, long id) {
  char dir[kNameMax];
  if (std::strlen(path) >= sizeof dir) return;
  std::strcpy(dir, path);
  for (;;) {
    char* slash = std::strrchr(dir, '/');
    if (!slash || slash == dir) return;
    *slash = 0;
    char file[kNameMax + 32];
    if (!join_path(file, sizeof file, dir, list)) return;
    if (write_task(file, id) || errno == ESRCH) return;  // moved, or it has exited
  }
}

// Moves every task of the cgroup at `path` out (move_up). Async-signal-safe.
void empty_cgroup(const char* path) {
  char file[kNameMax + 32];
  const char* list = "tasks";  // v1: thread ids; v2 has none, and takes whole processes
  int fd = join_path(file, sizeof file, path, list) ? open(file, O_RDONLY | O_CLOEXEC) : -1;
  if (fd < 0) {
    list = "cgroup.procs";
    fd = join_path(file, sizeof file, path, list) ? open(file, O_RDONLY | O_CLOEXEC) : -1;
  }
  if (fd < 0) return;
  char buf[512];
  long id = -1;
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;)
    for (ssize_t i = 0; i < n; ++i)
      if (buf[i] >= '0' && buf[i] <= '9') {
        id = (id < 0 ? 0 : id * 10) + (buf[i] - '0');
      } else if (id >= 0) {
        move_up(path, list, id);
        id = -1;
      }
  if (id >= 0) move_up(path, list, id);
  close(fd);
}

}  // namespace

bool cgroup_exists(const char* path) {
  struct stat st {};
  return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

// Removes the object if it exists and belongs to this user; never follows a symlink.
// `dir_fd` is the folder of Path objects (the run folder they were journaled in). A Lock's `key`
// is the descriptor that holds it: its file is removed only while it is still that file.
bool remove_owned(Kind kind, const char* name, int key, int shm_fd, int dir_fd) {
  switch (kind) {
    case Kind::PosixShm:
      return name[0] == '/' && owned_entry(shm_fd, name + 1, true) && unlinkat(shm_fd, name + 1, 0) == 0;
    case Kind::PosixSem: {
      char file[kNameMax + 8] = "sem.";
      if (name[0] != '/' || std::strlen(name) >= kNameMax) return false;
      std::strcat(file, name + 1);
      return owned_entry(shm_fd, file, true) && unlinkat(shm_fd, file, 0) == 0;
    }
    case Kind::PosixMq: {
      mqd_t q = mq_open(name, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
      if (q == mqd_t(-1)) return false;
      struct stat st {};
      const bool mine = fstat(q, &st) == 0 && st.st_uid == geteuid();
      mq_close(q);
      return mine && mq_unlink(name) == 0;
    }
    case Kind::SysvMsg: {
      const int id = msgget(key, 0);
      msqid_ds ds{};
      if (id < 0 || msgctl(id, IPC_STAT, &ds) != 0) return false;
      if (ds.msg_perm.__key != key || ds.msg_perm.cuid != geteuid()) return false;
      return msgctl(id, IPC_RMID, nullptr) == 0;
    }
    case Kind::Path:  // a bare name inside the run folder
      return std::strchr(name, '/') == nullptr && owned_entry(dir_fd, name, false) &&
             unlinkat(dir_fd, name, 0) == 0;
    case Kind::File: {  // an absolute path: a regular file, or a socket another program made
      const char* slash = std::strrchr(name, '/');
      if (name[0] != '/' || !slash || size_t(slash - name) >= kNameMax) return false;
      char folder[kNameMax];
      std::memcpy(folder, name, size_t(slash - name));
      folder[slash - name] = 0;
      const int d = open(folder[0] ? folder : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      struct stat st {};
      const bool ok = owned_entry(d, slash + 1, false) &&
                      fstatat(d, slash + 1, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                      (S_ISREG(st.st_mode) || S_ISSOCK(st.st_mode)) && unlinkat(d, slash + 1, 0) == 0;
      if (d >= 0) close(d);
      return ok;
    }
    case Kind::Cgroup: {  // a folder "ipclab-…" of this user's in a cgroup file system
      const char* slash = std::strrchr(name, '/');
      struct stat st {};
      struct statfs fs {};
      if (name[0] != '/' || !slash ||
          std::strncmp(slash + 1, kCgroupPrefix, std::strlen(kCgroupPrefix)) != 0 || lstat(name, &st) != 0 ||
          !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || statfs(name, &fs) != 0 ||
          (fs.f_type != CGROUP_SUPER_MAGIC && fs.f_type != CGROUP2_SUPER_MAGIC))
        return false;
      // A task moving in as the others move out (a thread just made) is taken on the next pass.
      for (int pass = 0; pass < 8; ++pass) {
        if (rmdir(name) == 0) return true;
        if (errno != EBUSY || key != 1) return false;
        empty_cgroup(name);
      }
      return false;
    }
    case Kind::Lock: {
      struct stat held {
      }, there{};
      return key >= 0 && fstat(key, &held) == 0 && lstat(name, &there) == 0 && held.st_dev == there.st_dev &&
             held.st_ino == there.st_ino && unlink(name) == 0;
    }
  }
  return false;
}

namespace {

// The objects a journal lists as open, in the order they were created.
std::vector<std::pair<Kind, std::string>> open_entries(int fd) {
  const std::string text = read_from_start(fd);
  std::vector<std::pair<Kind, std::string>> open;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // a torn last line names nothing created
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    size_t sp = line.find(' ');
    Kind k;
    if (line.size() < 3 || sp == std::string::npos || (line[0] != '+' && line[0] != '-') ||
        !kind_of(line.substr(1, sp - 1), k))
      continue;
    std::pair<Kind, std::string> item{k, line.substr(sp + 1)};
    auto it = std::find(open.begin(), open.end(), item);
    if (line[0] == '+' && it == open.end()) open.push_back(item);
    if (line[0] == '-' && it != open.end()) open.erase(it);
  }
  return open;
}

}  // namespace

// Removes what a run's journal lists as open (checked against the run's id), then the journal
// and the run folder. Returns what was removed, as "kind name". `hold(path)` gives a descriptor
// that holds the machine-wide lock at `path` now (-1: it cannot be had); clean_run closes it.
// Fixed names (not carrying the run's tag) are removed only when the run journaled a lock and
// every lock it journaled as open is held here; when one is not, they stay, and so do the journal
// and the folder, for a later sweep.
std::vector<std::string> clean_run(int base_fd, const std::string& folder, int dir_fd, int journal_fd,
                                   const std::string& id,
                                   const std::function<int(const std::string&)>& hold) {
  std::vector<std::string> removed;
  const std::string tag = ".ipclab." + id + ".";
  const auto entries = open_entries(journal_fd);
  std::vector<std::pair<std::string, int>> locks;
  std::string busy;  // the locks that cannot be had now
  for (auto& [kind, name] : entries)
    if (kind == Kind::Lock) {
      const int fd = hold(name);
      if (fd < 0) busy += (busy.empty() ? "" : ", ") + name;
      locks.emplace_back(name, fd);
    }
  const bool shared_ok = !locks.empty() && busy.empty();
  const int shm_fd = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  bool kept = false;
  std::string full;  // the cgroups still holding a task
  // This process's own run moves its cgroups' tasks out (they are its sides); a dead run's cgroup is
  // removed only when empty: what is in it now is no longer the run's to move.
  const bool mine = g_run.pid.load() == getpid() && id == g_run.id;
  for (auto& [kind, name] : entries) {
    if (kind == Kind::Lock) continue;
    if (kind == Kind::Cgroup) {
      const std::string given = std::string(kCgroupPrefix) + id + "-";
      const size_t slash = name.rfind('/');
      if (slash == std::string::npos || name.compare(slash + 1, given.size(), given) != 0)
        continue;  // not a name this run gave
      if (remove_owned(kind, name.c_str(), mine ? 1 : 0, -1, -1))
        removed.push_back(fmt::format("cgroup {}", name));
      else if (cgroup_exists(name.c_str()))
        full += (full.empty() ? "" : ", ") + name;
      continue;
    }
    // Only names this run gave: "/ipclab.<id>.…", its own files, or bare names in its folder; a
    // fixed name only under the machine-wide locks it held.
    const bool own = kind == Kind::SysvMsg || kind == Kind::Path ? true
                     : kind == Kind::File                        ? name.find(tag) != std::string::npos
                                                                 : name.rfind("/ipclab." + id + ".", 0) == 0;
    const bool fixed = !own && (kind == Kind::File || kind == Kind::PosixShm);
    if (fixed && !shared_ok) {
      kept = kept || !locks.empty();
      continue;
    }
    if ((own || fixed) && remove_owned(kind, name.c_str(), sysv_key_of(name), shm_fd, dir_fd))
      removed.push_back(fmt::format("{} {}", kind_word(kind), name));
  }
  if (shm_fd >= 0) close(shm_fd);
  for (auto& [path, fd] : locks) {  // the locks last: held until the names they guard are gone
    if (fd >= 0 && shared_ok && remove_owned(Kind::Lock, path.c_str(), fd, -1, -1))
      removed.push_back("lock " + path);
    if (fd >= 0) close(fd);
  }
  if (kept)  // a later sweep, once the locks are free, removes the rest
    removed.push_back(fmt::format("kept its machine-wide names while {} is held by a live run", busy));
  if (!full.empty())  // likewise once they are empty
    removed.push_back(
        fmt::format("kept the cgroup {} while it holds a task (ipclab moves out none of a "
                    "dead run's: move them, and a later run removes it)",
                    full));
  if (kept || !full.empty()) return removed;
  unlinkat(dir_fd, kJournal, 0);
  if (unlinkat(base_fd, folder.c_str(), AT_REMOVEDIR) == 0) removed.push_back("folder " + folder);
  return removed;
}

}  // namespace detail

using namespace detail;

namespace {

extern "C" void on_terminate(int sig) {
  remove_all_now();
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

namespace {

// The process groups to stop before the run's objects go (track_group): leaders' pids, 0 free.
constexpr int kMaxGroups = 64;
std::atomic<pid_t> g_groups[kMaxGroups];

uint64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

// Whether leader `p` has ended (its zombie kept: its group's id stays its own until reaped).
bool leader_ended(pid_t p) {
  siginfo_t info{};
  if (waitid(P_PID, id_t(p), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return true;  // not ours any more
  return info.si_pid == p;
}

// System calls only: SIGTERM to every leader, then SIGKILL to each group once its leader ended or
// the grace is over.
void stop_groups_now() noexcept {
  bool any = false;
  for (auto& g : g_groups)
    if (const pid_t p = g.load(); p > 0) {
      kill(p, SIGTERM);
      kill(-p, SIGCONT);  // a stopped leader sees its SIGTERM only once continued
      any = true;
    }
  if (!any) return;
  const uint64_t until = monotonic_ns() + uint64_t(kGroupGraceS * 1e9);
  for (;;) {
    bool waiting = false;
    for (auto& g : g_groups)
      if (const pid_t p = g.load(); p > 0 && !leader_ended(p)) waiting = true;
    if (!waiting || monotonic_ns() >= until) break;
    const timespec ms{0, 1'000'000};
    nanosleep(&ms, nullptr);
  }
  for (auto& g : g_groups)
    if (const pid_t p = g.load(); p > 0) kill(-p, SIGKILL);
}

}  // namespace

void track_group(pid_t leader) noexcept {
  for (auto& g : g_groups) {
    pid_t free = 0;
    if (g.compare_exchange_strong(free, leader)) return;
  }
}

void untrack_group(pid_t leader) noexcept {
  for (auto& g : g_groups) {
    pid_t p = leader;
    if (g.compare_exchange_strong(p, 0)) return;
  }
}

void remove_all_now() noexcept {
  if (g_run.pid.load() != getpid()) return;
  stop_groups_now();  // their workers remove their own files from the run's folder first
  // The names a machine-wide lock guards go first, the lock last: it is held until they are gone.
  bool kept = false;  // a cgroup that could not be emptied: its journal stays for the next run's sweep
  for (const bool locks : {false, true})
    for (auto& e : g_entries)
      if (e.used.load() == 1 && (e.kind == Kind::Lock) == locks &&
          !remove_owned(e.kind, e.name, e.key, g_run.shm_fd, g_run.dir_fd) && e.kind == Kind::Cgroup &&
          cgroup_exists(e.name))
        kept = true;
  if (kept) {  // the journal says what is gone, and the sweep removes the cgroup once it is empty
    for (auto& e : g_entries)
      if (e.used.load() == 1 && !(e.kind == Kind::Cgroup && cgroup_exists(e.name))) {
        char line[kNameMax + 16] = "-";
        std::strcat(line, kind_word(e.kind));
        std::strcat(line, " ");
        std::strcat(line, e.name);
        std::strcat(line, "\n");
        if (write(g_run.journal_fd, line, std::strlen(line)) < 0) break;
      }
    return;
  }
  if (g_run.dir_fd >= 0) unlinkat(g_run.dir_fd, kJournal, 0);
  if (g_run.base_fd >= 0) unlinkat(g_run.base_fd, g_run.folder, AT_REMOVEDIR);
}

void install_signal_cleanup() {
  struct sigaction sa {};
  sa.sa_handler = on_terminate;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&sa.sa_mask, s);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
}

}  // namespace ipclab::ipc
