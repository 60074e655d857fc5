// pingpong/process: the guest is a forked C++ process with one thread per slot — the reference's
// two-process shape with the Go runtime taken out.
#include "core/model/mechanism.hpp"
#include "mechanisms/pingpong/pingpong.hpp"

namespace ipclab {
namespace {

IPCLAB_REGISTER(Mechanism{
    .suite = "pingpong",
    .name = "process",
    .help = "shared-memory slot ping-pong (reference 004) with a forked C++ process as the guest",
    .params = pingpong::suite_params(),
    .workload = [](Session& s) { pingpong::run(s, pingpong::GuestKind::Process); },
    .check = [](const Params& p) { return pingpong::check(p, pingpong::GuestKind::Process); },
});

}  // namespace
}  // namespace ipclab
