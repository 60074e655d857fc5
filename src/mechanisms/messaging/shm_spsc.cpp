// messaging/shm_spsc: a single-producer single-consumer ring of message slots in shared memory
// (shm_ring.hpp), with a choice of how each side waits for the other.
#include "mechanisms/messaging/shm_transport.hpp"

namespace ipclab::messaging {
namespace {

// Receives in place, as a program on a shared-memory ring reads a message where it lies: the slot
// goes back to the producer when this endpoint next receives. The harness then reads of each
// message only what it needs at once (the echo's header), and checks the rest off the round trip;
// a copy out would read every line of the slot on it. (bulk/shm_spsc copies in and out:
// SpscEndpoint.)
class SpscInPlaceEndpoint final : public InPlaceEndpoint {
 public:
  SpscInPlaceEndpoint(SpscRing& out, SpscRing& in, Role role, const WaitStrategy& w, size_t)
      : ends_(out, in, role, w) {}
  void send(const std::byte* d, size_t len) override { ends_.tx->push(d, len); }
  std::byte* recv_in_place(std::byte*, size_t) override {
    if (held_) ends_.rx->release();
    held_ = true;
    return ends_.rx->peek();
  }

 private:
  SpscEnds ends_;
  bool held_ = false;  // the last message received is still in its slot, until the next receive
};

IPCLAB_REGISTER(Mechanism{
    .suite = "messaging",
    .name = "shm_spsc",
    .help =
        "single-producer single-consumer ring in shared memory (MAP_SHARED), wait strategy as a parameter",
    .params = suite_params({wait_strategy({"spin", "adaptive"}),
                            queue_depth("256", "slots in the ring (rounded up to a power of two)", 1 << 16),
                            std_params::memory()}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<RingTransport<SpscRing, SpscInPlaceEndpoint>>(p);
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
