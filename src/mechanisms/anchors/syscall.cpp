// anchors/syscall: the cheapest real system call (getppid), the floor under every kernel
// transport's per-message cost on this kernel and its mitigations.
#include <sys/syscall.h>
#include <unistd.h>

#include "core/model/mechanism.hpp"
#include "core/model/std_params.hpp"

namespace ipclab {
namespace {

struct SyscallLoop final : Loop {
  void op() override { ::syscall(SYS_getppid); }
};

IPCLAB_REGISTER(Mechanism{
    .suite = "anchors",
    .name = "syscall",
    .help = "a null system call (getppid), timed in batches",
    .params = {std_params::placement({"same", "unpinned"}, {"same"})},
    .loop = [](const Params&) { return std::make_unique<SyscallLoop>(); },
});

}  // namespace
}  // namespace ipclab
