// bulk/shm_spsc: the copying baseline in shared memory — messaging's SPSC ring with slots of the
// message size: one copy into a slot, one copy out. Few slots (-p queue_depth, default 2), since
// each holds a whole message.
#include "mechanisms/bulk/common.hpp"
#include "mechanisms/messaging/common.hpp"
#include "mechanisms/messaging/shm_transport.hpp"

namespace ipclab::bulk {
namespace {

IPCLAB_REGISTER(Mechanism{
    .suite = "bulk",
    .name = "shm_spsc",
    .help = "messaging's shared-memory SPSC ring with message-sized slots (one copy in, one copy out)",
    .params = suite_params({[] {
                              auto w = messaging::wait_strategy({"adaptive"});
                              w.full = {"adaptive"};
                              return w;
                            }(),
                            messaging::queue_depth("2", "slots in the ring (rounded up to a power of two)",
                                                   16),
                            std_params::memory()}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<messaging::RingTransport<messaging::SpscRing, messaging::SpscEndpoint>>(p);
    },
    .check = [](const Params& p) { return check(Caps{}, p); },
});

}  // namespace
}  // namespace ipclab::bulk
