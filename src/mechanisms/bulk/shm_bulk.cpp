// bulk/shm_bulk: a large shared buffer handed over with a futex — messaging's SPSC ring with two
// message-sized slots, each side sleeping in the kernel while it waits (wait=futex). copy=inout:
// one copy into the slot, one copy out (the sides work on private buffers); copy=inplace: the
// sender writes the message into the slot and the receiver checks it there — no copy at all on
// the way, only the writing and reading any transfer needs. In a round trip the server's echo
// copies the request into the reply slot (its one copy).
#include <cstring>
#include <optional>

#include "mechanisms/bulk/common.hpp"
#include "mechanisms/messaging/shm_transport.hpp"

namespace ipclab::bulk {
namespace {

using messaging::SpscRing;
using messaging::WaitStrategy;

class SlotEndpoint final : public InPlaceEndpoint {
 public:
  SlotEndpoint(SpscRing& out, SpscRing& in, Role role, const WaitStrategy& w, size_t) {
    const bool same = &out == &in;
    if (!same || role == Role::Producer) tx_.emplace(out, w);
    if (!same || role == Role::Consumer) rx_.emplace(in, w);
  }
  std::byte* send_buffer(std::byte*, size_t) override { return claimed_ = tx_->claim(); }
  void send(const std::byte* d, size_t len) override {
    if (d != claimed_) std::memcpy(tx_->claim(), d, len);  // an echo of what was received
    claimed_ = nullptr;
    tx_->publish();
  }
  std::byte* recv_in_place(std::byte*, size_t) override {
    if (held_) rx_->release();  // the previous message is read: its slot goes back
    held_ = true;
    return rx_->peek();
  }

 private:
  std::optional<SpscRing::Producer> tx_;
  std::optional<SpscRing::Consumer> rx_;
  std::byte* claimed_ = nullptr;
  bool held_ = false;
};

ParamSpec copy_param() {
  return {
      .name = "copy",
      .type = ParamType::String,
      .def = "inplace",
      .choices = {"inout", "inplace"},
      .help = "inout: one copy into the shared slot and one out; inplace: written and checked in the slot",
      .quick = {"inout", "inplace"}};
}

IPCLAB_REGISTER(Mechanism{
    .suite = "bulk",
    .name = "shm_bulk",
    .help = "two message-sized slots of shared memory handed over with a futex: copied in and out, or used "
            "in place",
    .params = suite_params({copy_param(), std_params::memory()}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      Params q = p;
      q.set("wait", "futex");
      q.set("queue_depth", "2");
      if (p.str("copy") == "inout")
        return std::make_unique<messaging::RingTransport<SpscRing, messaging::SpscEndpoint>>(q);
      return std::make_unique<messaging::RingTransport<SpscRing, SlotEndpoint>>(q);
    },
    .check = [](const Params& p) { return check(Caps{}, p); },
});

}  // namespace
}  // namespace ipclab::bulk
