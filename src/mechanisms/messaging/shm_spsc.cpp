// messaging/shm_spsc: a single-producer single-consumer ring of message slots in shared memory
// (shm_ring.hpp), with a choice of how each side waits for the other.
#include <optional>

#include "mechanisms/messaging/shm_transport.hpp"

namespace ipclab::messaging {
namespace {

// In roundtrip a side pushes to one ring and pops from another; in throughput it uses only
// its own end of the one ring. Ring ends are single-owner: each endpoint builds only those it uses.
class SpscEndpoint final : public Endpoint {
 public:
  SpscEndpoint(SpscRing& out, SpscRing& in, Role role, WaitStrategy w, size_t) {
    const bool same = &out == &in;
    if (!same || role == Role::Producer) tx_.emplace(out, w);
    if (!same || role == Role::Consumer) rx_.emplace(in, w);
  }
  void send(const std::byte* d, size_t len) override { tx_->push(d, len); }
  size_t recv(std::byte* buf, size_t len) override {
    rx_->pop(buf, len);
    return len;
  }

 private:
  std::optional<SpscRing::Producer> tx_;
  std::optional<SpscRing::Consumer> rx_;
};

IPCLAB_REGISTER(Mechanism{
    .suite = "messaging",
    .name = "shm_spsc",
    .help =
        "single-producer single-consumer ring in shared memory (MAP_SHARED), wait strategy as a parameter",
    .params = suite_params({wait_strategy({"spin", "adaptive"}),
                            queue_depth("256", "slots in the ring (rounded up to a power of two)", 1 << 16)}),
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
