#pragma once
// What the Go peers' mechanisms share (runtime/*_go, echo/go; pingpong/go only the path of its
// guest): where the binary is, why it is missing, and the GOMAXPROCS parameter.
#include <unistd.h>

#include <fmt/format.h>

#include <string>

#include "core/base/error.hpp"
#include "core/base/params.hpp"
#include "core/machine/home.hpp"

namespace ipclab::go {

/// The absolute path of a Go peer, from its path relative to ipclab's folder that
/// peers/go/CMakeLists.txt compiled in ("" when it built no Go peers); Skip with the reason when
/// there is no binary to run.
inline std::string peer_path(const char* built, const char* target) {
  if (!*built)
    throw Skip(
        "the Go peers were not built (`go` not found at configure time, or IPCLAB_WITH_GO_PEERS=OFF "
        "as in the sanitizer presets); install Go (scripts/setup.sh) and rebuild the release preset");
  std::string path = beside_ipclab(built);
  if (access(path.c_str(), X_OK) != 0)
    throw Skip(fmt::format("the Go peer {} is missing; rebuild (target {})", path, target));
  return path;
}

/// GOMAXPROCS of the peer. 1 is the default: one P runs every goroutine on one thread, the fair
/// analogue of the single-threaded runtimes and servers it is compared with (the Go runtime's
/// own threads — sysmon, idle Ms — still exist and are counted in its CPU).
inline ParamSpec gomaxprocs_param() {
  return {.name = "gomaxprocs",
          .type = ParamType::Int,
          .def = "1",
          .help =
              "GOMAXPROCS of the Go peer (1 = every goroutine on one scheduler thread, like "
              "the single-threaded C++ runtimes)",
          .min = 1,
          .max = 64};
}

}  // namespace ipclab::go
