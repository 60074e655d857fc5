// messaging/shm_mpmc: a bounded multi-producer multi-consumer ring (Vyukov) in shared memory
// (shm_ring.hpp); throughput shares one ring among every producer and consumer.
#include "mechanisms/messaging/shm_transport.hpp"

namespace ipclab::messaging {
namespace {

class MpmcEndpoint final : public Endpoint {
 public:
  MpmcEndpoint(MpmcRing& out, MpmcRing& in, Role, const WaitStrategy& w, size_t)
      : out_(out), in_(in), w_(w) {}
  void send(const std::byte* d, size_t len) override { out_.push(d, len, w_); }
  size_t recv(std::byte* buf, size_t len) override {
    in_.pop(buf, len, w_);
    return len;
  }

 private:
  MpmcRing& out_;
  MpmcRing& in_;
  WaitStrategy w_;
};

IPCLAB_REGISTER(Mechanism{
    .suite = "messaging",
    .name = "shm_mpmc",
    .help =
        "bounded multi-producer multi-consumer ring (Vyukov) in shared memory, wait strategy as a parameter",
    // The one ring every producer and consumer shares: on a larger machine the presets scale the
    // consumers as the producers (the grid is producers x consumers), where the other transports
    // keep one consumer.
    .params =
        [] {
          auto v =
              suite_params({wait_strategy({"adaptive"}),
                            queue_depth("256", "slots in the ring (rounded up to a power of two)", 1 << 16),
                            std_params::memory()});
          for (auto& s : v)
            if (s.name == "consumers") {
              s.per_cpu = 2;
              s.help +=
                  "; on more than 2 CPUs the presets scale it as producers: the grid is producers x "
                  "consumers";
            }
          return v;
        }(),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<RingTransport<MpmcRing, MpmcEndpoint>>(p);
    },
    .check =
        [](const Params& p) {
          return check(
              Caps{
                  .shared_queue = true, .max_producers = kMaxPeersTracked, .max_consumers = kMaxPeersTracked},
              p);
        },
});

}  // namespace
}  // namespace ipclab::messaging
