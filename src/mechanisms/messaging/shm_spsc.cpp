// messaging/shm_spsc: a single-producer single-consumer ring of message slots in shared memory
// (shm_ring.hpp), with a choice of how each side waits for the other.
#include "mechanisms/messaging/shm_transport.hpp"

namespace ipclab::messaging {
namespace {

IPCLAB_REGISTER(Mechanism{
    .suite = "messaging",
    .name = "shm_spsc",
    .help =
        "single-producer single-consumer ring in shared memory (MAP_SHARED), wait strategy as a parameter",
    .params = suite_params({wait_strategy({"spin", "adaptive"}),
                            queue_depth("256", "slots in the ring (rounded up to a power of two)", 1 << 16),
                            std_params::memory()}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<RingTransport<SpscRing, SpscEndpoint>>(p);
    },
    .check =
        [](const Params& p) {
          return check(Caps{.shared_queue = true,
                            .max_producers = 1,
                            .max_consumers = 1,
                            .topology_why = "single-producer single-consumer ring"},
                       p);
        },
});

}  // namespace
}  // namespace ipclab::messaging
