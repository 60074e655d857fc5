#pragma once
// What the ownership tests share: whether a path is there (without following a link), and the
// state folders of the runs of one process.
#include <dirent.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "core/ownership/journal.hpp"

namespace ipclab::test {

inline bool exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

/// The state folders (full paths) of the runs made by process `pid`.
inline std::vector<std::string> run_folders_of(pid_t pid) {
  std::vector<std::string> out;
  const std::string prefix = "run." + std::to_string(pid) + ".";
  if (DIR* d = opendir(ipc::state_dir().c_str())) {
    while (dirent* e = readdir(d))
      if (std::string(e->d_name).rfind(prefix, 0) == 0) out.push_back(ipc::state_dir() + "/" + e->d_name);
    closedir(d);
  }
  return out;
}

}  // namespace ipclab::test
