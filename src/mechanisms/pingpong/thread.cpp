// pingpong/thread: the guest is one C++ thread per slot in the harness process — the floor under
// the other guests (no process boundary, private futexes).
#include "core/model/mechanism.hpp"
#include "mechanisms/pingpong/pingpong.hpp"

namespace ipclab {
namespace {

IPCLAB_REGISTER(Mechanism{
    .suite = "pingpong",
    .name = "thread",
    .help = "shared-memory slot ping-pong (reference 004) with a C++ thread per slot as the guest",
    .params = pingpong::suite_params(),
    .workload = [](Session& s) { pingpong::run(s, pingpong::GuestKind::Thread); },
    .check = [](const Params& p) { return pingpong::check(p, pingpong::GuestKind::Thread); },
});

}  // namespace
}  // namespace ipclab
