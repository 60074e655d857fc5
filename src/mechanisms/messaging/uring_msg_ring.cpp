// messaging/uring_msg_ring: io_uring's MSG_RING between two threads, each with a ring of its own.
// The sender copies a message into a free slot of the channel's memory and posts a completion
// straight into the receiver's ring (IORING_OP_MSG_RING: user_data = the slot, res = the length);
// the receiver finds it in its completion queue — by a peek, without a system call, when it is
// already there, else it waits in io_uring_enter — copies it out and gives the slot back the same
// way. IOSQE_CQE_SKIP_SUCCESS keeps the sender's own ring free of completions for its posts
// (a failed post still completes there, and fails the run).
// Threads only: a ring belongs to its process.
#include <liburing.h>
#include <sched.h>

#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "core/base/error.hpp"
#include "core/model/std_params.hpp"
#include "mechanisms/messaging/common.hpp"
#include "mechanisms/messaging/shm_ring.hpp"

namespace ipclab::messaging {
namespace {

constexpr uint64_t kCredit = uint64_t(1) << 63;  // user_data: a slot given back, not a message

// One direction: slots the sender fills and the receiver empties.
struct Lane {
  std::vector<std::byte> mem;
  size_t stride = 0;
  std::byte* slot(uint64_t i, uint64_t depth) { return mem.data() + (i % depth) * stride; }
};

// One pair's rings: each thread sets up its own and publishes its descriptor. They close with
// the transport, after both threads have ended, so that a post to a peer that has finished
// never reaches a descriptor that has since been reused.
struct Pair {
  io_uring ring[2] = {};                   // [0] producer/client, [1] consumer/server
  std::atomic<int> ring_fd[2] = {-1, -1};  // set once ring[i] is set up
  Lane up, down;                           // up: producer → consumer; down: the replies
  ~Pair() {
    for (int i : {0, 1})
      if (ring_fd[i].load() >= 0) io_uring_queue_exit(&ring[i]);
  }
};

class MsgRingEndpoint final : public Endpoint {
 public:
  MsgRingEndpoint(Pair& pair, int side, uint64_t depth, bool roundtrip)
      : pair_(pair),
        ring_(pair.ring[side]),
        depth_(depth),
        credits_(depth),
        out_(side == 0   ? &pair.up
             : roundtrip ? &pair.down
                         : nullptr),
        in_(side == 1   ? &pair.up
            : roundtrip ? &pair.down
                        : nullptr) {
    io_uring_params prm{};
    prm.flags = IORING_SETUP_CQSIZE;
    prm.cq_entries = unsigned(4 * depth + 16);  // every slot's message and credit at once, with room
    const int rc = io_uring_queue_init_params(16, &ring_, &prm);
    if (rc < 0) throw std::system_error(-rc, std::generic_category(), "io_uring_queue_init");
    pair_.ring_fd[side].store(ring_.ring_fd, std::memory_order_release);
    // The peer's ring: both threads open their endpoints at the same time.
    for (uint32_t spins = 0; (peer_ = pair_.ring_fd[1 - side].load(std::memory_order_acquire)) < 0; ++spins) {
      if ((spins & 63) == 63) poll_abort();
      sched_yield();
    }
  }
  void send(const std::byte* d, size_t len) override {
    while (credits_ == 0) take(kCredit);
    std::memcpy(out_->slot(sent_, depth_), d, len);
    --credits_;
    post(len, sent_++ % depth_);
  }

  size_t recv(std::byte* buf, size_t len) override {
    const uint64_t slot = take(0);
    if (got_len_ != len)
      throw std::runtime_error(fmt::format("a message of {} bytes, expected {}", got_len_, len));
    std::memcpy(buf, in_->slot(slot, depth_), len);
    post(0, kCredit | slot);  // copied out: the slot goes back
    return len;
  }

 private:
  // Posts one completion into the peer's ring.
  void post(size_t len, uint64_t data) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (!sqe) throw std::runtime_error("io_uring: no free submission entry");
    io_uring_prep_msg_ring(sqe, peer_, unsigned(len), data, 0);
    io_uring_sqe_set_data64(sqe, data);
    sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
    const int rc = io_uring_submit(&ring_);
    if (rc < 0) throw std::system_error(-rc, std::generic_category(), "io_uring_submit MSG_RING");
  }

  // Takes completions from this side's ring until one of `kind` (a message: 0, or kCredit) is
  // taken; completions of the other kind are counted on the way. Returns the message's slot.
  uint64_t take(uint64_t kind) {
    if (kind == 0 && !early_.empty()) {
      const Early e = early_.front();
      early_.erase(early_.begin());
      got_len_ = e.len;
      return e.slot;
    }
    for (;;) {
      io_uring_cqe* cqe = nullptr;
      int rc = io_uring_peek_cqe(&ring_, &cqe);
      while (rc == -EAGAIN || rc == -ETIME || rc == -EINTR) {
        __kernel_timespec ts{0, 100'000'000};  // in slices, so that an aborted run ends
        rc = io_uring_wait_cqe_timeout(&ring_, &cqe, &ts);
        if (rc == -ETIME || rc == -EINTR) poll_abort();
      }
      if (rc < 0) throw std::system_error(-rc, std::generic_category(), "io_uring_wait_cqe");
      const uint64_t data = io_uring_cqe_get_data64(cqe);
      const int res = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
      if (res < 0) throw std::system_error(-res, std::generic_category(), "IORING_OP_MSG_RING");
      if (data & kCredit) {
        ++credits_;
        if (kind == kCredit) return 0;
        continue;
      }
      // A message. A sender waiting for a credit keeps it for its next receive (round trips).
      if (kind == 0) {
        got_len_ = size_t(res);
        return data;
      }
      early_.push_back({data, size_t(res)});
    }
  }

  Pair& pair_;
  io_uring& ring_;
  int peer_ = -1;
  uint64_t depth_, credits_, sent_ = 0;
  Lane *out_, *in_;
  size_t got_len_ = 0;
  struct Early {
    uint64_t slot;
    size_t len;
  };
  std::vector<Early> early_;
};

class MsgRingTransport final : public Transport {
 public:
  explicit MsgRingTransport(const Params& p) {
    roundtrip_ = std_params::is_roundtrip(p);
    depth_ = uint64_t(p.i64("queue_depth"));
    const size_t stride = round_up(size_t(p.i64("size")), kCacheLine);
    const int n = roundtrip_ ? int(p.i64("producers")) : 1;
    for (int i = 0; i < n; ++i) {
      auto pr = std::make_unique<Pair>();
      for (Lane* l : {&pr->up, &pr->down}) {
        if (l == &pr->down && !roundtrip_) break;
        l->stride = stride;
        l->mem.resize(stride * depth_);
      }
      pairs_.push_back(std::move(pr));
    }
    // MSG_RING came with Linux 5.18: a ring without it skips.
    io_uring probe_ring;
    if (io_uring_queue_init(2, &probe_ring, 0) < 0) throw Skip("io_uring is not available");
    io_uring_probe* probe = io_uring_get_probe_ring(&probe_ring);
    const bool ok = probe && io_uring_opcode_supported(probe, IORING_OP_MSG_RING);
    if (probe) io_uring_free_probe(probe);
    io_uring_queue_exit(&probe_ring);
    if (!ok) throw Skip("this kernel's io_uring has no IORING_OP_MSG_RING (Linux 5.18+)");
  }
  std::unique_ptr<Endpoint> open(Role role, int index) override {
    Pair& pr = *pairs_[roundtrip_ ? size_t(index) : 0];
    return std::make_unique<MsgRingEndpoint>(pr, role == Role::Producer ? 0 : 1, depth_, roundtrip_);
  }
  void describe(nlohmann::json& extra) const override { extra["queue_depth_used"] = depth_; }

 private:
  bool roundtrip_ = false;
  uint64_t depth_ = 0;
  std::vector<std::unique_ptr<Pair>> pairs_;
};

IPCLAB_REGISTER(Mechanism{
    .suite = "messaging",
    .name = "uring_msg_ring",
    .help = "io_uring MSG_RING between two threads' rings: a completion per message, slots in process memory",
    .params = suite_params({queue_depth("64", "message slots per direction", 4096)}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<MsgRingTransport>(p);
    },
    .check =
        [](const Params& p) {
          return check(Caps{.max_producers = 1,
                            .max_consumers = 1,
                            .processes = false,
                            .topology_why = "one ring per side: a single producer and consumer"},
                       p);
        },
});

}  // namespace
}  // namespace ipclab::messaging
