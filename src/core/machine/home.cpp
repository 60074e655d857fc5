#include "core/machine/home.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/fs.hpp"
#include "core/ownership/journal.hpp"

namespace ipclab {

namespace {

constexpr const char* kBundleVariable = "IPCLAB_BUNDLE";  // set by a bundle's bin/ipclab

struct Home {
  std::string bundle;   // the unpacked bundle's folder; empty for a build tree
  std::string exe_dir;  // the folder of the ipclab executable
  std::string error;    // what is wrong with IPCLAB_BUNDLE, for take_launcher_variable
};

// Read once, by the first caller: static constructors may ask (a parameter's default path) before
// main() runs, and main() removes the variable.
const Home& home() {
  static const Home h = [] {
    Home h;
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    // The variable counts only where the bundle's launcher put it: in a process whose
    // /proc/self/exe is a dynamic loader (the bundle's lib/ld-linux-*). Exported into a shell and
    // inherited by a build tree's ipclab, it is not that ipclab's, which then records itself as
    // what it is.
    const char* b = std::getenv(kBundleVariable);
    if (b && *b && !ec && exe.filename().string().rfind("ld-", 0) == 0) {
      h.bundle = b;
      h.exe_dir = h.bundle + "/libexec";
      if (h.bundle.front() != '/' || access((h.exe_dir + "/ipclab").c_str(), X_OK) != 0)
        h.error = fmt::format(
            "{}={} is not the folder of an unpacked bundle (no libexec/ipclab there); start a bundle's "
            "ipclab through its bin/ipclab, or unset {}",
            kBundleVariable, brief(h.bundle), kBundleVariable);
    } else {
      h.exe_dir = exe.parent_path().string();
    }
    return h;
  }();
  return h;
}

}  // namespace

void take_launcher_variable() {
  const Home& h = home();
  unsetenv(kBundleVariable);
  if (!h.error.empty()) throw UsageError(h.error);
}

bool started_from_bundle() { return !home().bundle.empty(); }

const char* started_from() { return started_from_bundle() ? "bundle" : "build tree"; }

std::string beside_ipclab(std::string_view relative) {
  return fmt::format("{}/{}", home().exe_dir, relative);
}

std::string source_file(std::string_view relative) {
  if (started_from_bundle()) return fmt::format("{}/share/{}", home().bundle, relative);
  return fmt::format("{}/{}", IPCLAB_SOURCE_DIR, relative);
}

std::string user_state_dir() {
  if (const char* x = std::getenv("XDG_STATE_HOME"); x && x[0] == '/') return fmt::format("{}/ipclab", x);
  if (const char* h = std::getenv("HOME"); h && h[0] == '/') return fmt::format("{}/.local/state/ipclab", h);
  return "";
}

std::string private_state_dir(std::string& why) {
  const std::string dir = user_state_dir();
  if (dir.empty()) {
    why = "neither XDG_STATE_HOME nor HOME names an absolute path";
    return "";
  }
  try {
    // The missing folders on the way, outermost first, each made private as ipc makes its own.
    std::vector<std::filesystem::path> missing;
    std::error_code ec;
    for (std::filesystem::path p(dir); !p.empty() && p != p.root_path() && !std::filesystem::exists(p, ec);
         p = p.parent_path())
      missing.push_back(p);
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) make_private_dir(it->string());
  } catch (const std::system_error& e) {
    why = e.what();
    return "";
  }
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st {};
  const bool ok = fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 077) == 0;
  if (fd >= 0) close(fd);
  if (!ok) {
    why = fmt::format(
        "{} is not a folder of yours closed to others; remove it, or set XDG_STATE_HOME to a "
        "private folder",
        dir);
    return "";
  }
  return dir;
}

}  // namespace ipclab
