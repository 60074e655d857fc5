// pingpong/go: the reference's guest — a Go process (peers/go/cmd/pingpong-guest), one goroutine
// per slot, cgo for the named semaphores and the futex. Built by peers/go/CMakeLists.txt, which
// passes its path relative to ipclab here; skipped with the reason when Go was not found at build
// time (go::peer_path).
#include "core/model/mechanism.hpp"
#include "mechanisms/go_peers.hpp"
#include "mechanisms/pingpong/pingpong.hpp"

#ifndef IPCLAB_PINGPONG_GO_GUEST
#define IPCLAB_PINGPONG_GO_GUEST ""
#endif

namespace ipclab {
namespace {

IPCLAB_REGISTER(Mechanism{
    .suite = "pingpong",
    .name = "go",
    .help = "shared-memory slot ping-pong (reference 004) with a Go process as the guest "
            "(goroutine per slot, cgo semaphores)",
    .params = pingpong::suite_params(),
    .workload =
        [](Session& s) {
          pingpong::run(s, pingpong::GuestKind::Go,
                        go::peer_path(IPCLAB_PINGPONG_GO_GUEST, "pingpong_go_guest"));
        },
    .check = [](const Params& p) { return pingpong::check(p, pingpong::GuestKind::Go); },
});

}  // namespace
}  // namespace ipclab
