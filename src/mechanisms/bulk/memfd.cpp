// bulk/memfd: shared memory passed as a file descriptor over a Unix socket (SCM_RIGHTS).
// handoff=seal: every message is a new memfd — the sender creates it, writes the message into
// its mapping, unmaps it and seals it against writing, shrinking and growing, then passes the
// descriptor; the receiver checks the seals (a sealed memfd cannot change under it, so it may
// read it in place without a defensive copy), maps it read-only and checks the bytes there. The
// cost is the kernel's: creating, mapping, faulting and freeing the pages of every message.
// handoff=ring: one memfd per direction with two message-sized slots, mapped by both sides once
// and reused; a note on the socket says "message in slot k", another gives the slot back. Its
// memfds are the memory the two sides share for the whole run: placed as -p memory= asks
// (core/machine/numa.hpp), which handoff=seal has no use for (each message's memfd is new, its
// pages the sender's first touch).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <system_error>

#include "core/machine/numa.hpp"
#include "core/measure/session.hpp"
#include "core/model/std_params.hpp"
#include "core/ownership/journal.hpp"
#include "core/transport/fd_transport.hpp"
#include "mechanisms/bulk/common.hpp"
#include "mechanisms/messaging/common.hpp"

namespace ipclab::bulk {
namespace {

using transport::check_rc;

constexpr unsigned kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL;
constexpr uint32_t kMemfdSlots = 2;

int memfd(const char* name) {
  return check_rc(memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING), "memfd_create");
}

int new_memfd(const char* name, size_t bytes) {
  const int fd = memfd(name);
  try {
    ipc::allocate_shared(fd, bytes, fmt::format("memfd {}", name));  // no SIGBUS at the first touch
  } catch (...) {
    ::close(fd);
    throw;
  }
  return fd;
}

std::byte* map_fd(int fd, size_t bytes, int prot) {
  // MAP_POPULATE: the pages are mapped in one call rather than faulted in one by one.
  void* m = mmap(nullptr, bytes, prot, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (m == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap memfd");
  return static_cast<std::byte*>(m);
}

// ---- handoff=seal ----------------------------------------------------------------------------

class SealEndpoint final : public InPlaceEndpoint {
 public:
  explicit SealEndpoint(int sock) : notes_(sock) {}
  ~SealEndpoint() override {
    drop_writing();
    drop_received();
  }

  std::byte* send_buffer(std::byte*, size_t len) override {
    drop_writing();
    // At most two messages in flight: each is a whole message's worth of pages until its
    // receiver lets go of it (and says so with a credit).
    if (inflight_ == kMemfdSlots) {
      notes_.credit();
      --inflight_;
    }
    wfd_ = new_memfd("ipclab-bulk", len);
    wlen_ = len;
    return wmap_ = map_fd(wfd_, len, PROT_READ | PROT_WRITE);
  }

  void send(const std::byte* data, size_t len) override {
    if (data == rmap_ && rfd_ >= 0) {  // an echo: the sealed memfd received goes back as it is
      if (inflight_ == kMemfdSlots) {
        notes_.credit();
        --inflight_;
      }
      notes_.send({.kind = Note::Data, .len = len}, rfd_);
      ++inflight_;
      return;
    }
    if (data != wmap_) std::memcpy(send_buffer(nullptr, len), data, len);
    munmap(wmap_, wlen_);  // no writable mapping may remain when the write seal goes on
    wmap_ = nullptr;
    check_rc(fcntl(wfd_, F_ADD_SEALS, kSeals), "F_ADD_SEALS");
    notes_.send({.kind = Note::Data, .len = len}, wfd_);
    ++inflight_;
    ::close(wfd_);
    wfd_ = -1;
  }

  std::byte* recv_in_place(std::byte*, size_t len) override {
    if (rfd_ >= 0) {
      drop_received();
      notes_.send({.kind = Note::Credit});
    }
    int fd = -1;
    const Note n = notes_.data(&fd);
    if (fd < 0) throw std::runtime_error("a memfd note arrived without its descriptor");
    rfd_ = fd;
    const int seals = check_rc(fcntl(fd, F_GET_SEALS), "F_GET_SEALS");
    if ((seals & (F_SEAL_WRITE | F_SEAL_SHRINK)) != (F_SEAL_WRITE | F_SEAL_SHRINK))
      throw std::runtime_error(
          fmt::format("a memfd arrived unsealed (seals {:#x}): its sender could still change it", seals));
    struct stat st {};
    check_rc(fstat(fd, &st), "fstat memfd");
    if (n.len != len || size_t(st.st_size) < len)
      throw std::runtime_error(
          fmt::format("a memfd of {} bytes announced as {}, expected {}", st.st_size, n.len, len));
    rlen_ = len;
    return rmap_ = map_fd(fd, len, PROT_READ);
  }

 private:
  void drop_writing() {
    if (wmap_) munmap(wmap_, wlen_);
    if (wfd_ >= 0) ::close(wfd_);
    wmap_ = nullptr;
    wfd_ = -1;
  }
  void drop_received() {
    if (rmap_) munmap(rmap_, rlen_);
    if (rfd_ >= 0) ::close(rfd_);
    rmap_ = nullptr;
    rfd_ = -1;
  }
  Notes notes_;
  int wfd_ = -1, rfd_ = -1;
  uint32_t inflight_ = 0;  // sent, not yet credited back
  std::byte *wmap_ = nullptr, *rmap_ = nullptr;
  size_t wlen_ = 0, rlen_ = 0;
};

// ---- handoff=ring ----------------------------------------------------------------------------

class RingEndpoint final : public InPlaceEndpoint {
 public:
  // out_fd: the memfd this side writes (-1: none); in_fd: the one it reads.
  RingEndpoint(int sock, int out_fd, int in_fd, size_t size) : notes_(sock), size_(size) {
    if (out_fd >= 0) out_ = map_fd(out_fd, kMemfdSlots * size, PROT_READ | PROT_WRITE);
    if (in_fd >= 0) {
      in_ = map_fd(in_fd, kMemfdSlots * size, PROT_READ);
      for (uint32_t k = 0; k < kMemfdSlots; ++k) notes_.send({.kind = Note::Credit, .slot = k});
    }
  }
  ~RingEndpoint() override {
    if (out_) munmap(out_, kMemfdSlots * size_);
    if (in_) munmap(in_, kMemfdSlots * size_);
  }

  std::byte* send_buffer(std::byte*, size_t) override {
    if (!claimed_) claimed_ = notes_.credit().slot + 1;  // the slot the receiver gave back
    return out_ + (claimed_ - 1) * size_;
  }

  void send(const std::byte* data, size_t len) override {
    std::byte* slot = send_buffer(nullptr, len);
    if (data != slot) std::memcpy(slot, data, len);  // an echo of what was received
    notes_.send({.kind = Note::Data, .slot = claimed_ - 1, .len = len});
    claimed_ = 0;
  }

  std::byte* recv_in_place(std::byte*, size_t len) override {
    if (held_) notes_.send({.kind = Note::Credit, .slot = held_ - 1});  // read: the slot goes back
    const Note n = notes_.data();
    if (n.slot >= kMemfdSlots || n.len != len)
      throw std::runtime_error(fmt::format("a note for slot {} of {} bytes, expected < {} and {}", n.slot,
                                           n.len, kMemfdSlots, len));
    held_ = n.slot + 1;
    return in_ + n.slot * size_;
  }

 private:
  Notes notes_;
  size_t size_;
  std::byte *out_ = nullptr, *in_ = nullptr;
  uint32_t claimed_ = 0, held_ = 0;  // slot + 1; 0: none
};

class MemfdTransport final : public Transport {
 public:
  explicit MemfdTransport(const Params& p)
      : size_(size_t(p.i64("size"))),
        ring_(p.str("handoff") == "ring"),
        roundtrip_(std_params::is_roundtrip(p)) {
    notify_pair(sock_);
  }
  ~MemfdTransport() override {
    for (std::byte* m : maps_) munmap(m, kMemfdSlots * size_);
    for (int fd : {sock_[0], sock_[1], up_, down_})
      if (fd >= 0) ::close(fd);
  }
  // The ring's memfds are made here, where the sides' CPUs are known, their pages placed before
  // they are allocated.
  void attach(Session& s) override {
    if (!ring_) return;
    memory_ = numa::SharedMemory(s.memory_policy());
    up_ = placed_memfd();
    if (roundtrip_) down_ = placed_memfd();
  }
  void ended(Record& rec) const override {
    if (ring_) memory_.describe(rec);
  }
  std::unique_ptr<Endpoint> open(Role role, int) override {
    const bool producer = role == Role::Producer;
    const int sock = producer ? sock_[0] : sock_[1];
    if (!ring_) return std::make_unique<SealEndpoint>(sock);
    if (up_ < 0) throw std::logic_error("memfd ring opened before attach()");
    return std::make_unique<RingEndpoint>(sock, producer ? up_ : down_, producer ? down_ : up_, size_);
  }

 private:
  // One direction's memfd, mapped here too: placed (memory=) before its pages are allocated, and
  // kept mapped until the transport goes, for the record's look at where its pages are.
  int placed_memfd() {
    const size_t bytes = kMemfdSlots * size_;
    const int fd = memfd("ipclab-bulk-ring");
    try {
      check_rc(ftruncate(fd, off_t(bytes)), "ftruncate memfd");
      void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (m == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap memfd");
      maps_.push_back(static_cast<std::byte*>(m));
      memory_.place_file(fd, m, bytes, "memfd ipclab-bulk-ring");  // no SIGBUS at the first touch
    } catch (...) {
      ::close(fd);
      throw;
    }
    return fd;
  }
  size_t size_;
  bool ring_, roundtrip_;
  int sock_[2] = {-1, -1};
  int up_ = -1, down_ = -1;
  numa::SharedMemory memory_;
  std::vector<std::byte*> maps_;  // the coordinator's mappings of up_ and down_
};

IPCLAB_REGISTER(Mechanism{
    .suite = "bulk",
    .name = "memfd",
    .help =
        "memfds passed over a Unix socket: a new sealed one per message, or a mapped two-slot ring reused",
    .params =
        suite_params({{.name = "handoff",
                       .type = ParamType::String,
                       .def = "seal",
                       .choices = {"seal", "ring"},
                       .help = "seal: a new memfd per message, sealed and passed with SCM_RIGHTS; ring: one "
                               "mapped memfd of two slots per direction, slots handed over by notes",
                       .quick = {"seal", "ring"}},
                      [] {
                        auto m = std_params::memory();
                        m.only_with = {"handoff", {"ring"}};  // seal's memfds are new each message
                        return m;
                      }()}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<MemfdTransport>(p);
    },
    .check = [](const Params& p) { return check(Caps{}, p); },
});

}  // namespace
}  // namespace ipclab::bulk
