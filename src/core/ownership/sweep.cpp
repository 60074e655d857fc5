#include "core/ownership/sweep.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "core/ownership/run_table.hpp"

namespace ipclab::ipc {

using namespace detail;

std::vector<std::string> sweep_leftovers() {
  ensure_run();
  // Two passes: a dead run's folder can hold another dead run's journaled file (`ipclab ab`'s
  // slices are written by runs of their own), so it empties only once that run is swept too.
  std::vector<std::pair<std::string, std::string>> swept;  // (run id, what was removed)
  // A dead run's fixed names only under the machine-wide locks it held, taken here without waiting.
  auto take = [](const std::string& path) {
    if (path.rfind(std::string(kSharedLockDir) + "/ipclab-shared.", 0) != 0) return -1;
    std::string why;
    const int fd = try_lock_file(path, why);
    return fd >= 0 ? fd : -1;
  };
  for (int pass = 0; pass < 2; ++pass) {
    const int scan = dup(g_run.base_fd);
    DIR* d = scan >= 0 ? fdopendir(scan) : nullptr;
    if (!d) break;
    rewinddir(d);
    while (dirent* ent = readdir(d)) {
      const std::string folder = ent->d_name;
      const bool fresh = folder.rfind("new.", 0) == 0;
      if ((!fresh && folder.rfind("run.", 0) != 0) || folder == g_run.folder) continue;  // not a run's
      const int dir = openat(g_run.base_fd, folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (dir < 0) continue;
      struct stat st {};
      // A folder still being set up ("new.*") is given a minute before it counts as abandoned.
      if (fstat(dir, &st) != 0 || st.st_uid != geteuid() ||
          (fresh && std::time(nullptr) - st.st_mtime < 60)) {
        close(dir);
        continue;
      }
      const int jfd = openat(dir, kJournal, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
      if (jfd >= 0 && flock(jfd, LOCK_EX | LOCK_NB) != 0) {  // the lease is held: that run lives
        close(jfd);
        close(dir);
        continue;
      }
      // Dead: its lease is ours now, and held until its folder is gone, so no other sweep races us.
      const std::string id = folder.substr(4);
      auto removed =
          jfd >= 0 ? clean_run(g_run.base_fd, folder, dir, jfd, id, take) : std::vector<std::string>{};
      if (jfd < 0 && unlinkat(g_run.base_fd, folder.c_str(), AT_REMOVEDIR) == 0)
        removed.push_back("folder " + folder);
      if (jfd >= 0) close(jfd);
      close(dir);
      for (auto& r : removed) {
        auto it = std::find_if(swept.begin(), swept.end(), [&](auto& s) { return s.first == id; });
        if (it == swept.end())
          swept.emplace_back(id, r);
        else
          it->second += ", " + r;
      }
    }
    closedir(d);
  }
  std::vector<std::string> lines;
  for (auto& [id, what] : swept)
    lines.push_back(fmt::format("removed what run {} left when it died: {}", id, what));
  return lines;
}

}  // namespace ipclab::ipc
