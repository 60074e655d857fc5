#include "core/base/fs.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
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

}  // namespace ipclab
