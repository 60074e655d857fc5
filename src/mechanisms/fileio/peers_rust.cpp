// fileio/<rt>: the fileio suite on the Rust runtimes (peers/rust): qd tasks each reading the test
// file in a loop and verifying every block, as fileio/ipcrt does. Monoio and Compio read
// through their io_uring drivers (File::read_at); Tokio has no io_uring file IO, so fileio/tokio is
// tokio::task::spawn_blocking(pread) on a current_thread runtime — what tokio::fs does. The harness
// prepares the file and the page cache (prepare()) and passes the path; the harness's clock sets
// the peer's warm-up and measured window (PeerPhases, on its stdin), and the peer reports IOPS,
// MB/s and the blocks it verified.
#include <fmt/format.h>

#include "core/measure/session.hpp"
#include "core/peers/peer.hpp"
#include "mechanisms/fileio/common.hpp"
#include "mechanisms/rust_peers.hpp"

namespace ipclab::fileio {
namespace {

struct Engine {
  const char* name;    // mechanism
  const char* binary;  // ipclab-peer-<binary>
  const char* how;
};

const Engine kEngines[] = {
    {"tokio", "tokio", "Tokio current_thread: qd tasks each awaiting spawn_blocking(pread)"},
    {"monoio", "monoio", "Monoio (IoUringDriver): qd tasks each awaiting File::read_at"},
    {"compio", "compio", "Compio (io_uring): qd tasks each awaiting File::read_at"},
};

void rust_engine(Session& s, const Engine& e) {
  const bool direct = s.params().str("variant") == "direct";
  const std::string peer = rust_peer(e.binary);
  const Setup su = prepare(s, direct);
  std::vector<std::string> args{"--bench=fileio", "--file=" + su.path,
                                fmt::format("--file_bytes={}", su.file_size)};
  if (std::string(e.binary) == "tokio") args.push_back("--flavor=ct");
  fold_peer(s, peer, -1, args, 0, /*phased=*/true);
  Record& rec = s.record();
  rec.extra["variant"] = s.params().str("variant");
  rec.extra["verified_blocks"] = rec.integrity.received;
}

const bool registered = [] {
  for (const Engine& e : kEngines)
    Registry::get().add(Mechanism{
        .suite = "fileio",
        .name = e.name,
        .help = fmt::format("{} (Rust peer, peers/rust)", e.how),
        .params = suite_params({{.name = "variant",
                                 .type = ParamType::String,
                                 .def = "direct",
                                 .choices = {"buffered", "direct"},
                                 .help = "buffered (page cache) or direct (O_DIRECT, 4096-aligned buffers)",
                                 .quick = {"buffered", "direct"},
                                 .full = {"buffered", "direct"}},
                                cache_param()}),
        .workload = [&e](Session& s) { rust_engine(s, e); },
        .check = [](const Params& p) { return check_cache(p, p.str("variant") == "direct"); },
    });
  return true;
}();

}  // namespace
}  // namespace ipclab::fileio
