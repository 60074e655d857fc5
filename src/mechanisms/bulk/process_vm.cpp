// bulk/process_vm: cross-memory attach — one process copies straight from or into another's
// memory with a single system call, one copy in all. direction=pull: the sender writes the
// message into one of two buffers of its own and says where it is; the receiver copies it into
// its buffer with process_vm_readv and gives the buffer back. direction=push: the receiver gives
// the sender the address of one of two buffers of its own; the sender copies the message into it
// with process_vm_writev, and the receiver checks it there. Notes travel on a Unix socket.
// Reading another process's memory needs ptrace access to it (same user, and Yama's
// ptrace_scope, when present, at 0 for processes that are not each other's ancestors).
#include <sys/uio.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <system_error>

#include "core/base/error.hpp"
#include "core/model/std_params.hpp"
#include "mechanisms/bulk/common.hpp"
#include "mechanisms/messaging/common.hpp"

namespace ipclab::bulk {
namespace {

using messaging::retry_errno;

constexpr uint32_t kVmSlots = 2;

/// Moves `len` bytes between this process's `local` and `pid`'s `remote` (pull: into local).
void cross_copy(bool pull, pid_t pid, std::byte* local, uint64_t remote, size_t len) {
  size_t done = 0;
  while (done < len) {
    iovec l{local + done, len - done}, r{reinterpret_cast<void*>(remote + done), len - done};
    const ssize_t n = pull ? process_vm_readv(pid, &l, 1, &r, 1, 0) : process_vm_writev(pid, &l, 1, &r, 1, 0);
    if (n < 0) {
      if (errno == EPERM)
        throw std::runtime_error(
            fmt::format("{} of process {}: permission denied (ptrace access: same user, Yama "
                        "ptrace_scope 0)",
                        pull ? "process_vm_readv" : "process_vm_writev", pid));
      retry_errno(pull ? "process_vm_readv" : "process_vm_writev", false);
      continue;
    }
    if (n == 0) throw std::runtime_error("process_vm: no byte moved");
    done += size_t(n);  // a partial transfer stops at a page it could not reach
  }
}

class Slots {
 public:
  explicit Slots(size_t size) : mem_(kVmSlots * size), size_(size) {}
  std::byte* at(uint32_t k) const { return mem_.get() + k * size_; }

 private:
  Pages mem_;
  size_t size_;
};

class ProcessVmEndpoint final : public InPlaceEndpoint {
 public:
  ProcessVmEndpoint(int sock, bool pull, size_t size, bool sends, bool receives)
      : notes_(sock), pull_(pull), size_(size), pid_(getpid()) {
    if (pull_ && sends) out_ = std::make_unique<Slots>(size);
    if (!pull_ && receives) {
      in_ = std::make_unique<Slots>(size);
      for (uint32_t k = 0; k < kVmSlots; ++k) give_back(k);
    }
    if (pull_ && sends) free_ = kVmSlots;
  }

  // Pull: the receiver reads this side's buffers after it sent them, so they must outlive its
  // last message (the stop marker) until the receiver says it has copied it; a peer that is
  // gone has nothing left to read.
  ~ProcessVmEndpoint() override {
    if (!out_) return;
    try {
      for (; free_ + (claimed_ ? 1 : 0) < kVmSlots; ++free_) notes_.credit();
    } catch (const std::exception&) {
    }
  }

  std::byte* send_buffer(std::byte* own, size_t) override {
    if (!pull_) return own;  // push: the message goes from the caller's buffer
    return out_->at(claim());
  }

  void send(const std::byte* data, size_t len) override {
    if (pull_) {
      const uint32_t k = claim();
      if (data != out_->at(k)) std::memcpy(out_->at(k), data, len);  // an echo of what was received
      notes_.send({.kind = Note::Data, .slot = k, .pid = pid_, .addr = uint64_t(out_->at(k)), .len = len});
      claimed_ = 0;
      return;
    }
    // Push: a buffer of the receiver's, given back to us with its address.
    const Note c = notes_.credit();
    cross_copy(false, c.pid, const_cast<std::byte*>(data), c.addr, len);
    notes_.send({.kind = Note::Data, .slot = c.slot, .len = len});
  }

  std::byte* recv_in_place(std::byte* buf, size_t len) override {
    if (!pull_ && held_) give_back(held_ - 1);  // read: the buffer goes back to the sender
    const Note n = notes_.data();
    if (n.len != len) throw std::runtime_error(fmt::format("a note of {} bytes, expected {}", n.len, len));
    if (!pull_) {
      if (n.slot >= kVmSlots) throw std::runtime_error(fmt::format("a note for slot {}", n.slot));
      held_ = n.slot + 1;
      return in_->at(n.slot);
    }
    cross_copy(true, n.pid, buf, n.addr, len);
    notes_.send({.kind = Note::Credit, .slot = n.slot});  // copied: the sender may reuse it
    return buf;
  }

 private:
  // Pull: a buffer of ours that no receiver is reading (the same one until it is sent).
  uint32_t claim() {
    if (claimed_) return claimed_ - 1;
    if (!free_) {
      notes_.credit();
      ++free_;
    }
    --free_;
    claimed_ = next_ + 1;
    next_ = (next_ + 1) % kVmSlots;
    return claimed_ - 1;
  }
  void give_back(uint32_t k) {
    notes_.send({.kind = Note::Credit, .slot = k, .pid = pid_, .addr = uint64_t(in_->at(k)), .len = size_});
  }
  Notes notes_;
  bool pull_;
  size_t size_;
  pid_t pid_;
  std::unique_ptr<Slots> out_, in_;
  uint32_t free_ = 0, next_ = 0, claimed_ = 0, held_ = 0;
};

class ProcessVmTransport final : public Transport {
 public:
  explicit ProcessVmTransport(const Params& p)
      : size_(size_t(p.i64("size"))),
        pull_(p.str("direction") == "pull"),
        roundtrip_(std_params::is_roundtrip(p)) {
    // Yama at 1 lets a process attach to its descendants only: the two sides are siblings.
    const int64_t yama = messaging::read_proc_int("/proc/sys/kernel/yama/ptrace_scope", 0);
    if (yama >= 2 || (yama == 1 && p.str("mode") == "processes"))
      throw Skip(
          fmt::format("Yama ptrace_scope is {}: one process may not read another's memory here (0 allows "
                      "it; threads need 0 or 1)",
                      yama));
    notify_pair(sock_);
  }
  ~ProcessVmTransport() override {
    for (int fd : sock_)
      if (fd >= 0) ::close(fd);
  }
  std::unique_ptr<Endpoint> open(Role role, int) override {
    const bool producer = role == Role::Producer;
    return std::make_unique<ProcessVmEndpoint>(producer ? sock_[0] : sock_[1], pull_, size_,
                                               producer || roundtrip_, !producer || roundtrip_);
  }

 private:
  size_t size_;
  bool pull_, roundtrip_;
  int sock_[2] = {-1, -1};
};

IPCLAB_REGISTER(Mechanism{
    .suite = "bulk",
    .name = "process_vm",
    .help = "cross-memory attach: the receiver pulls with process_vm_readv, or the sender pushes with "
            "process_vm_writev",
    .params =
        suite_params({{.name = "direction",
                       .type = ParamType::String,
                       .def = "pull",
                       .choices = {"pull", "push"},
                       .help = "pull: the receiver copies from the sender's buffer (process_vm_readv); push: "
                               "the sender copies into the receiver's (process_vm_writev)",
                       .quick = {"pull", "push"}}}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<ProcessVmTransport>(p);
    },
    .check = [](const Params& p) { return check(Caps{}, p); },
});

}  // namespace
}  // namespace ipclab::bulk
