// harness/null: an operation that does nothing, so its time per op is the harness's own cost
// (the batch loop, the phase check and the virtual call).
#include "core/model/mechanism.hpp"
#include "core/model/std_params.hpp"

namespace ipclab {
namespace {

struct NullLoop final : Loop {
  void op() override {}
};

IPCLAB_REGISTER(Mechanism{
    .suite = "harness",
    .name = "null",
    .help = "empty operation: the harness's overhead per operation",
    .params = {std_params::placement({"same", "unpinned"}, {"same"})},
    .loop = [](const Params&) { return std::make_unique<NullLoop>(); },
});

}  // namespace
}  // namespace ipclab
