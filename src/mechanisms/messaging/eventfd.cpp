// messaging/eventfd: message slots in shared memory, signalled through eventfds. The producer
// copies a message into a free slot and adds 1 to the `filled` eventfd; the consumer's read of
// `filled` returns (and clears) the count of new messages, which it copies out before adding that
// many to `freed`. Each side therefore sleeps in the kernel when it must wait, with one syscall
// per message on the producer side and one per batch on the consumer side. queue_depth = 1 is a
// single slot. The eventfd syscalls order the slot accesses (the kernel takes a lock in each).
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "core/model/std_params.hpp"
#include "core/transport/fd_transport.hpp"
#include "mechanisms/messaging/common.hpp"
#include "mechanisms/messaging/shm_transport.hpp"

namespace ipclab::messaging {
namespace {

struct Channel {
  int filled = -1, freed = -1;
  std::unique_ptr<SharedMapping> slots;
};

uint64_t read_count(int fd, bool nb) {
  uint64_t v;
  while (::read(fd, &v, sizeof v) != ssize_t(sizeof v)) retry_errno("eventfd read", nb);
  return v;
}
void add_count(int fd, uint64_t v, bool nb) {
  while (::write(fd, &v, sizeof v) != ssize_t(sizeof v)) retry_errno("eventfd write", nb);
}

class EventfdEndpoint final : public Endpoint {
 public:
  EventfdEndpoint(Channel& out, Channel& in, uint64_t depth, size_t size, bool nb)
      : out_(out), in_(in), depth_(depth), stride_(round_up(size, kCacheLine)), nb_(nb), credits_(depth) {}
  void send(const std::byte* d, size_t len) override {
    if (credits_ == 0) credits_ = read_count(out_.freed, nb_);
    std::memcpy(slot(out_, sent_++), d, len);
    --credits_;
    add_count(out_.filled, 1, nb_);
  }
  size_t recv(std::byte* buf, size_t len) override {
    if (ready_ == 0) ready_ = read_count(in_.filled, nb_);
    std::memcpy(buf, slot(in_, received_++), len);
    // Free slots in batches of what one read announced; the last of a batch returns them all.
    if (++batch_ == ready_) {
      add_count(in_.freed, batch_, nb_);
      ready_ = batch_ = 0;
    }
    return len;
  }

 private:
  std::byte* slot(Channel& c, uint64_t i) {
    return static_cast<std::byte*>(c.slots->get()) + (i % depth_) * stride_;
  }
  Channel& out_;
  Channel& in_;
  uint64_t depth_;
  size_t stride_;
  bool nb_;
  uint64_t credits_, sent_ = 0, received_ = 0, ready_ = 0, batch_ = 0;
};

class EventfdTransport final : public Transport {
 public:
  explicit EventfdTransport(const Params& p) {
    roundtrip_ = std_params::is_roundtrip(p);
    nb_ = p.flag("nonblocking");
    size_ = size_t(p.i64("size"));
    depth_ = uint64_t(p.i64("queue_depth"));
    const int n = roundtrip_ ? 2 * int(p.i64("producers")) : 1;
    channels_.resize(size_t(n));
    try {
      for (auto& c : channels_) {
        const int flags = EFD_CLOEXEC | (nb_ ? EFD_NONBLOCK : 0);
        c.filled = transport::check_rc(eventfd(0, flags), "eventfd");
        c.freed = transport::check_rc(eventfd(0, flags), "eventfd");
      }
    } catch (...) {
      close_all();
      throw;
    }
  }
  ~EventfdTransport() override { close_all(); }
  // The slots are mapped here, where the sides' CPUs are known, and placed as -p memory= asks
  // before anything touches them.
  void attach(Session& s) override {
    memory_ = numa::SharedMemory(s.memory_policy());
    const size_t bytes = depth_ * round_up(size_, kCacheLine);
    for (auto& c : channels_) {
      c.slots = std::make_unique<SharedMapping>(bytes);
      memory_.place(c.slots->get(), bytes);
    }
  }
  void ended(Record& rec) const override { memory_.describe(rec); }
  std::unique_ptr<Endpoint> open(Role role, int index) override {
    if (!channels_.empty() && !channels_[0].slots)
      throw std::logic_error("eventfd transport opened before attach()");
    if (!roundtrip_) return std::make_unique<EventfdEndpoint>(channels_[0], channels_[0], depth_, size_, nb_);
    Channel& req = channels_[size_t(2 * index)];
    Channel& rep = channels_[size_t(2 * index + 1)];
    if (role == Role::Producer) return std::make_unique<EventfdEndpoint>(req, rep, depth_, size_, nb_);
    return std::make_unique<EventfdEndpoint>(rep, req, depth_, size_, nb_);
  }

 private:
  void close_all() {
    for (auto& c : channels_)
      for (int fd : {c.filled, c.freed})
        if (fd >= 0) ::close(fd);
    channels_.clear();
  }
  std::vector<Channel> channels_;
  numa::SharedMemory memory_;
  size_t size_ = 0;
  uint64_t depth_ = 1;
  bool roundtrip_ = false, nb_ = false;
};

IPCLAB_REGISTER(Mechanism{
    .suite = "messaging",
    .name = "eventfd",
    .help = "shared-memory message slots signalled with eventfds (filled / freed counts)",
    .params = suite_params(
        {nonblocking(),
         queue_depth("16", "slots in shared memory (1 = a single slot, one wake-up per message each way)",
                     1 << 16),
         std_params::memory()}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<EventfdTransport>(p);
    },
    .check =
        [](const Params& p) {
          return check(
              Caps{.topology_why = "one writer and one reader per slot ring (the counts are not per slot)"},
              p);
        },
});

}  // namespace
}  // namespace ipclab::messaging
