#pragma once
// What the Go peers' mechanisms share (runtime/*_go, echo/go; pingpong/go has its own guest):
// where the binary is, why it is missing, and the GOMAXPROCS parameter.
#include <unistd.h>

#include <fmt/format.h>

#include <string>

#include "core/error.hpp"
#include "core/params.hpp"

namespace ipclab::go {

/// The path peers/go/CMakeLists.txt compiled in ("" when Go was not found); Skip with the
/// reason when there is no binary to run.
inline std::string peer_path(const char* built, const char* target) {
  if (!*built)
    throw Skip(
        "the Go peers were not built: `go` was not found at configure time; install Go "
        "(scripts/setup.sh) and rebuild");
  if (access(built, X_OK) != 0)
    throw Skip(fmt::format("the Go peer {} is missing; rebuild (target {})", built, target));
  return built;
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
