// messaging/shm_mpmc: a bounded multi-producer multi-consumer ring (Vyukov) in shared memory
// (shm_ring.hpp); throughput shares one ring among every producer and consumer.
#include <optional>
#include <utility>

#include "mechanisms/messaging/shm_transport.hpp"

namespace ipclab::messaging {
namespace {

// Receives in place, as SpscInPlaceEndpoint (shm_spsc.cpp) does; here it matters twice over: a
// round-trip server sends its echo before it frees the request's slot, not after, and freeing is a
// store to a line the producer wrote — on x86 the echo's stores could not be seen before that
// store's ownership request had crossed to the other CPU and back.
class MpmcEndpoint final : public InPlaceEndpoint {
 public:
  MpmcEndpoint(MpmcRing& out, MpmcRing& in, Role, const WaitStrategy& w, size_t)
      : out_(out), in_(in), w_(w) {}
  void send(const std::byte* d, size_t len) override { out_.push(d, len, w_); }
  std::byte* recv_in_place(std::byte*, size_t) override {
    if (held_) in_.release(*std::exchange(held_, std::nullopt), w_);
    held_ = in_.claim(w_);
    return in_.data(*held_);
  }

 private:
  MpmcRing& out_;
  MpmcRing& in_;
  WaitStrategy w_;
  std::optional<uint64_t> held_;  // the slot of the last message received, until the next receive
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
          auto v = suite_params(
              {wait_strategy({"adaptive"}),
               queue_depth("256",
                           "slots in the ring (rounded up to a power of two; at least 2: with one, "
                           "a freed slot's sequence would read as full)",
                           1 << 16),
               std_params::memory()});
          for (auto& s : v)
            if (s.name == "queue_depth")
              s.min = 2;  // Vyukov's ring: pos + 1 (full) and pos + capacity (free)
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
