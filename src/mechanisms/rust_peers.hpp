#pragma once
// Where the Rust peers are (peers/rust: ipclab-peer-tokio, -monoio, -compio), for the runtime,
// echo and fileio suites' peers_rust.cpp. peers/rust/CMakeLists.txt defines IPCLAB_RUST_PEER_DIR,
// their folder relative to ipclab's (core/machine/home.hpp), when it builds them; otherwise those
// mechanisms skip with the reason.
#include <string>

#include <fmt/format.h>

#include "core/base/error.hpp"
#include "core/machine/home.hpp"

namespace ipclab {

/// Absolute path of ipclab-peer-<runtime> (tokio, monoio or compio); throws Skip when the build
/// did not make the Rust peers. A configured but missing binary is run_peer's skip.
inline std::string rust_peer(const std::string& runtime) {
#ifdef IPCLAB_RUST_PEER_DIR
  return beside_ipclab(fmt::format("{}/ipclab-peer-{}", IPCLAB_RUST_PEER_DIR, runtime));
#else
  throw Skip(
      fmt::format("the Rust peer ipclab-peer-{} was not built: cargo was not found when the "
                  "build was configured (scripts/setup.sh installs it), or "
                  "IPCLAB_WITH_RUST_PEERS=OFF",
                  runtime));
#endif
}

/// The Rust runtimes as the mechanisms name them: suffix, binary, extra arguments, description.
struct RustRuntime {
  const char* suffix;  // tokio_ct, tokio_mt, monoio, compio
  const char* binary;  // tokio, monoio, compio
  const char* flavor;  // --flavor= for tokio, "" otherwise
  const char* what;    // for help texts
};

inline constexpr RustRuntime kRustRuntimes[] = {
    {"tokio_ct", "tokio", "ct", "Tokio current_thread"},
    {"tokio_mt", "tokio", "mt", "Tokio multi_thread (a worker per CPU of --cpus)"},
    {"monoio", "monoio", "", "Monoio (IoUringDriver)"},
    {"compio", "compio", "", "Compio (io_uring driver)"},
};

}  // namespace ipclab
