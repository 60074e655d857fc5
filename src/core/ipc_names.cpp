#include "core/ipc_names.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <mqueue.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>
#include <vector>

namespace ipclab::ipc {

namespace {

// A fixed table, so that the signal handler can walk it without allocating.
struct Entry {
  std::atomic<int> used{0};
  Kind kind;
  int id;
  char name[128];
};
constexpr int kMaxEntries = 256;
Entry g_entries[kMaxEntries];
std::atomic<int> g_counter{0};
pid_t g_owner = 0;

// SysV keys of this project: 0x1Cxxxxxx, low 24 bits = pid's low 16 bits and an index.
constexpr int kSysvTag = 0x1C;

void remove_entry(Kind kind, const char* name, int id) {
  switch (kind) {
    case Kind::PosixShm: shm_unlink(name); break;
    case Kind::PosixMq: mq_unlink(name); break;
    case Kind::PosixSem: sem_unlink(name); break;
    case Kind::Path: unlink(name); break;
    case Kind::SysvMsg: if (id >= 0) msgctl(id, IPC_RMID, nullptr); break;
    case Kind::SysvShm: if (id >= 0) shmctl(id, IPC_RMID, nullptr); break;
    case Kind::SysvSem: if (id >= 0) semctl(id, 0, IPC_RMID); break;
  }
}

extern "C" void on_terminate(int sig) {
  if (getpid() == g_owner) {
    for (auto& e : g_entries)
      if (e.used.load()) remove_entry(e.kind, e.name, e.id);
    std::string dir = fmt::format("/tmp/ipclab.{}", g_owner);  // small: no allocation in practice
    rmdir(dir.c_str());
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

bool pid_alive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

// "ipclab.<pid>.…" → pid, or 0.
pid_t pid_of(const std::string& name) {
  const std::string p = "ipclab.";
  auto at = name.find(p);
  if (at == std::string::npos) return 0;
  return pid_t(std::strtol(name.c_str() + at + p.size(), nullptr, 10));
}

}  // namespace

std::string unique_name(const std::string& tag) {
  if (!g_owner) g_owner = getpid();
  return fmt::format("/ipclab.{}.{}.{}", getpid(), g_counter.fetch_add(1), tag);
}

std::string run_dir() {
  std::string dir = fmt::format("/tmp/ipclab.{}", getpid());
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw std::system_error(errno, std::generic_category(), "mkdir " + dir);
  return dir;
}

int sysv_key(int index) {
  return (kSysvTag << 24) | ((getpid() & 0xffff) << 8) | (index & 0xff);
}

void track(Kind kind, const std::string& name, int id) {
  if (!g_owner) g_owner = getpid();
  for (auto& e : g_entries) {
    int expected = 0;
    if (e.used.load() == 0) {
      e.kind = kind;
      e.id = id;
      std::strncpy(e.name, name.c_str(), sizeof e.name - 1);
      if (e.used.compare_exchange_strong(expected, 1)) return;
    }
  }
  throw std::runtime_error("too many IPC objects tracked at once");
}

void remove(Kind kind, const std::string& name, int id) {
  remove_entry(kind, name.c_str(), id);
  for (auto& e : g_entries)
    if (e.used.load() && e.kind == kind && e.id == id && name == e.name) e.used.store(0);
}

void remove_all() {
  for (auto& e : g_entries)
    if (e.used.load()) {
      remove_entry(e.kind, e.name, e.id);
      e.used.store(0);
    }
  rmdir(fmt::format("/tmp/ipclab.{}", getpid()).c_str());
}

void install_signal_cleanup() {
  g_owner = getpid();
  struct sigaction sa {};
  sa.sa_handler = on_terminate;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
}

int sweep_leftovers() {
  int removed = 0;
  auto sweep_dir = [&](const char* dir, Kind kind) {
    DIR* d = opendir(dir);
    if (!d) return;
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      pid_t pid = pid_of(n);
      if (n.rfind("ipclab.", 0) != 0 && n.rfind("sem.ipclab.", 0) != 0) continue;
      if (!pid || pid_alive(pid)) continue;
      if (kind == Kind::Path) {
        // A run directory: remove what is inside, then the directory.
        std::string sub = std::string(dir) + "/" + n;
        if (DIR* s = opendir(sub.c_str())) {
          while (dirent* f = readdir(s))
            if (f->d_name[0] != '.') unlink((sub + "/" + f->d_name).c_str());
          closedir(s);
        }
        if (rmdir(sub.c_str()) == 0 || unlink(sub.c_str()) == 0) ++removed;
      } else {
        std::string full = std::string(dir) + "/" + n;
        if (unlink(full.c_str()) == 0) ++removed;
      }
    }
    closedir(d);
  };
  sweep_dir("/dev/shm", Kind::PosixShm);  // shm segments and named semaphores (sem.*)
  sweep_dir("/dev/mqueue", Kind::PosixMq);
  sweep_dir("/tmp", Kind::Path);
  // SysV objects: /proc/sysvipc lists key, id and creator pid.
  for (auto [file, kind] : {std::pair{"/proc/sysvipc/msg", Kind::SysvMsg},
                            {"/proc/sysvipc/shm", Kind::SysvShm},
                            {"/proc/sysvipc/sem", Kind::SysvSem}}) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);
    std::istringstream hs(line);
    std::vector<std::string> cols;
    for (std::string c; hs >> c;) cols.push_back(c);
    auto col = [&](const std::string& n) {
      for (size_t i = 0; i < cols.size(); ++i)
        if (cols[i] == n) return int(i);
      return -1;
    };
    int ck = col("key"), cid = kind == Kind::SysvShm ? col("shmid") : kind == Kind::SysvMsg ? col("msqid") : col("semid");
    int cpid = col("cpid");
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::vector<std::string> v;
      for (std::string c; ls >> c;) v.push_back(c);
      if (ck < 0 || cid < 0 || int(v.size()) <= std::max(ck, cid)) continue;
      long key = std::strtol(v[ck].c_str(), nullptr, 10);
      if (((key >> 24) & 0xff) != kSysvTag) continue;
      // Without a creator pid (semaphore sets) liveness is unknown: leave the object alone.
      pid_t creator = cpid >= 0 && int(v.size()) > cpid ? pid_t(std::atol(v[cpid].c_str())) : 0;
      if (!creator || pid_alive(creator)) continue;
      remove_entry(kind, "", std::atoi(v[cid].c_str()));
      ++removed;
    }
  }
  return removed;
}

}  // namespace ipclab::ipc
