#include "core/base/fs.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>

namespace ipclab {

std::string read_first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

std::string folder_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string read_regular_file(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(strerror(errno));
  struct Close {
    int fd;
    ~Close() { close(fd); }
  } closer{fd};
  struct stat st {};
  if (fstat(fd, &st) != 0) throw std::runtime_error(strerror(errno));
  if (!S_ISREG(st.st_mode)) throw std::runtime_error("not a regular file");
  std::string body;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(strerror(errno));
    if (n == 0) return body;
    body.append(buf, size_t(n));
  }
}

bool make_private_dir(const std::string& path) {
  if (mkdir(path.c_str(), 0700) != 0) {
    if (errno == EEXIST) return false;
    throw std::system_error(errno, std::generic_category(), "mkdir " + path);
  }
  // The umask may have taken bits away; set the mode on the folder just made, not through a link.
  const int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) fchmod(fd, 0700), close(fd);
  return true;
}

// devtmpfs says tmpfs to statfs: /proc/self/mountinfo is asked by device number for the rest.
std::string special_file_system(const std::string& path) {
  struct statfs sf {};
  if (statfs(path.c_str(), &sf) == 0) {
    switch (sf.f_type) {
      case PROC_SUPER_MAGIC:
        return "proc";
      case SYSFS_MAGIC:
        return "sysfs";
      case DEVPTS_SUPER_MAGIC:
        return "devpts";
      case CGROUP_SUPER_MAGIC:
      case CGROUP2_SUPER_MAGIC:
        return "cgroup";
      case DEBUGFS_MAGIC:
        return "debugfs";
      case TRACEFS_MAGIC:
        return "tracefs";
      case SECURITYFS_MAGIC:
        return "securityfs";
      case BPF_FS_MAGIC:
        return "bpf";
      default:
        break;
    }
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return "";
  const std::string dev = fmt::format("{}:{}", major(st.st_dev), minor(st.st_dev));
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    // "id parent major:minor root mount-point options [optional...] - fstype source super-options"
    std::istringstream f(line);
    std::string id, parent, mm;
    if (!(f >> id >> parent >> mm) || mm != dev) continue;
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream rest(line.substr(dash + 3));
    std::string type;
    rest >> type;
    for (const char* bad :
         {"devtmpfs", "proc", "sysfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs",
          "configfs", "pstore", "bpf", "mqueue", "fusectl", "efivarfs", "binfmt_misc"})
      if (type == bad) return type;
    return "";
  }
  return "";
}

int open_own_file(const std::string& path, int flags, std::string* why) {
  const int fd = open(path.c_str(), flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    if (why) *why = strerror(e);
    errno = e;
    return -1;
  }
  struct stat st {};
  const bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid();
  if (!ok || ((flags & O_NONBLOCK) == 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)) {
    if (why)
      *why = !ok ? fmt::format("{} of uid {}",
                               S_ISFIFO(st.st_mode)                         ? "a FIFO"
                               : S_ISDIR(st.st_mode)                        ? "a folder"
                               : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                               : S_ISSOCK(st.st_mode)                       ? "a socket"
                               : S_ISREG(st.st_mode)                        ? "a file"
                                                                            : "something",
                               st.st_uid)
                 : strerror(errno);
    close(fd);
    errno = EPERM;
    return -1;
  }
  return fd;
}

std::string missing_interpreter(const std::string& path) {
  // Anyone's file (a system script too), read without blocking on a FIFO or following a link.
  std::string line(256, '\0');
  ssize_t n = -1;
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st {};
  if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) n = pread(fd, line.data(), line.size(), 0);
  if (fd >= 0) close(fd);
  if (n < 2 || line[0] != '#' || line[1] != '!') return "";
  line.resize(size_t(n));
  line = line.substr(2, line.find('\n') == std::string::npos ? std::string::npos : line.find('\n') - 2);
  std::istringstream words(line);
  std::string interpreter, arg;
  words >> interpreter >> arg;
  if (interpreter.empty()) return "";
  if (access(interpreter.c_str(), X_OK) != 0)
    return fmt::format("its interpreter {} is missing", interpreter);
  if (interpreter != "/usr/bin/env" && interpreter != "/bin/env") return "";
  if (arg.empty() || arg[0] == '-') return "";  // env's own options: left to exec
  const char* path_env = std::getenv("PATH");
  std::istringstream dirs(path_env ? path_env : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && access((dir + "/" + arg).c_str(), X_OK) == 0) return "";
  return fmt::format("its interpreter {} is not on PATH", arg);
}

int rename_noreplace(const char* from, const char* to, NoReplace* used) {
  if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) {
    if (used) *used = NoReplace::Rename2;
    return 0;
  }
  // EINVAL: the file system lacks the flag (both names are files of one folder: no other cause).
  if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) return -1;
  if (link(from, to) == 0) {
    if (unlink(from) == 0) {
      if (used) *used = NoReplace::Link;
      return 0;
    }
    const int e = errno;
    unlink(to);  // the name this call just made: `from` stays the one name
    errno = e;
    return -1;
  }
  if (errno == EEXIST) return -1;
  // No hard links here (or a file system that answers link(2) with another refusal): the name is
  // reserved exclusively, and only that reservation is replaced. Any real failure (ENOSPC, EROFS)
  // shows again here, with its own errno.
  const int fd = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  close(fd);
  if (rename(from, to) != 0) {
    const int e = errno;
    unlink(to);  // the reservation, this call's own
    errno = e;
    return -1;
  }
  if (used) *used = NoReplace::Reserve;
  return 0;
}

const char* describe(NoReplace way) {
  switch (way) {
    case NoReplace::Rename2:
      return "renameat2(RENAME_NOREPLACE)";
    case NoReplace::Link:
      return "link(2) and unlink(2)";
    case NoReplace::Reserve:
      return "an O_EXCL reservation and rename(2)";
  }
  return "?";
}

}  // namespace ipclab
