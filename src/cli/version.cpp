// `ipclab --version` and `ipclab version`: what was built, from what, and how — the values CMake
// configured (IPCLAB_VERSION and IPCLAB_BUILD_TYPE on ipclab_core; IPCLAB_COMPILER, IPCLAB_CXX_FLAGS
// and IPCLAB_SANITIZE on this file) and the commit looked up at build time (src/cli/build_info.cmake). A file
// of its own, out of the unity group: a new commit recompiles only this.
#include <fmt/format.h>

#include <string>

#include "cli/commands.hpp"
#include "ipclab_commit.hpp"

namespace ipclab::cli {

std::string version_text() {
  // CMAKE_CXX_FLAGS and the build type's (-O3 -DNDEBUG for Release), and the sanitizers.
  std::string flags = IPCLAB_CXX_FLAGS;
  if (*IPCLAB_SANITIZE) flags += std::string(" -fsanitize=") + IPCLAB_SANITIZE;
  while (flags.find("  ") != std::string::npos) flags.erase(flags.find("  "), 1);
  while (!flags.empty() && flags.front() == ' ') flags.erase(0, 1);
  while (!flags.empty() && flags.back() == ' ') flags.pop_back();
  return fmt::format(
      "ipclab {}\n"
      "commit      {}\n"
      "build type  {}\n"
      "compiler    {}\n"
      "flags       {}\n",
      IPCLAB_VERSION, IPCLAB_GIT_COMMIT, IPCLAB_BUILD_TYPE, IPCLAB_COMPILER,
      flags.empty() ? "(none)" : flags);
}

std::string build_commit() { return IPCLAB_GIT_COMMIT; }

}  // namespace ipclab::cli
