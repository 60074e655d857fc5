// bulk/vmsplice: the sender maps its pages into a pipe with vmsplice(2) instead of copying them
// (gift=1 adds SPLICE_F_GIFT); the receiver drains the pipe with read() into its own buffer
// (drain=read), or splices it into a memfd it has mapped and checks the bytes there
// (drain=splice). Either way the receiver's side copies once, out of the sender's pages.
//
// The pipe holds references to the sender's pages until they are read, so the sender writes each
// message into the next of K regions and reuses a region only after (K-1) messages, at least a
// pipe's capacity, went in behind it: by then the pipe, which holds at most its capacity, has
// given every page of it up. The sender's vmsplice blocks while the pipe is full.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <system_error>

#include "core/model/std_params.hpp"
#include "core/ownership/journal.hpp"
#include "core/transport/fd_transport.hpp"
#include "mechanisms/bulk/common.hpp"
#include "mechanisms/messaging/common.hpp"

namespace ipclab::bulk {
namespace {

using messaging::retry_errno;
using transport::check_rc;

class VmspliceEndpoint final : public InPlaceEndpoint {
 public:
  VmspliceEndpoint(int rfd, int wfd, size_t size, size_t pipe_size, bool gift, bool splice_drain)
      : rfd_(rfd), wfd_(wfd), size_(round_up(size)), gift_(gift) {
    if (wfd_ >= 0) {
      regions_ = 1 + (pipe_size + size - 1) / size;
      if (regions_ < 2) regions_ = 2;
      out_ = std::make_unique<Pages>(regions_ * size_);
    }
    if (rfd_ >= 0 && splice_drain) {
      sink_ = check_rc(memfd_create("ipclab-bulk-vmsplice", MFD_CLOEXEC), "memfd_create");
      try {
        ipc::allocate_shared(sink_, size, "memfd ipclab-bulk-vmsplice");  // no SIGBUS at the first touch
      } catch (...) {
        ::close(sink_);
        throw;
      }
      void* m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, sink_, 0);
      if (m == MAP_FAILED) {
        ::close(sink_);
        throw std::system_error(errno, std::generic_category(), "mmap memfd");
      }
      view_ = static_cast<std::byte*>(m);
      view_len_ = size;
    }
  }
  ~VmspliceEndpoint() override {
    if (view_) munmap(view_, view_len_);
    if (sink_ >= 0) ::close(sink_);
  }

  std::byte* send_buffer(std::byte*, size_t) override { return out_->get() + next_ * size_; }

  void send(const std::byte* data, size_t len) override {
    std::byte* mine = out_->get() + next_ * size_;
    if (data != mine) std::memcpy(mine, data, len);  // an echo of what was received
    next_ = next_ + 1 == regions_ ? 0 : next_ + 1;
    iovec iov{mine, len};
    while (iov.iov_len) {
      const ssize_t n = ::vmsplice(wfd_, &iov, 1, gift_ ? SPLICE_F_GIFT : 0);
      if (n < 0) {
        retry_errno("vmsplice", false);
        continue;
      }
      iov.iov_base = static_cast<char*>(iov.iov_base) + n;
      iov.iov_len -= size_t(n);
    }
  }

  std::byte* recv_in_place(std::byte* buf, size_t len) override {
    if (!view_) {
      read_all(rfd_, buf, len);
      return buf;
    }
    loff_t off = 0;
    while (size_t(off) < len) {
      const ssize_t n = ::splice(rfd_, nullptr, sink_, &off, len - size_t(off), SPLICE_F_MOVE);
      if (n < 0) {
        retry_errno("splice", false);
        continue;
      }
      if (n == 0) throw std::runtime_error("peer closed the channel");
    }
    return view_;
  }

 private:
  static size_t round_up(size_t n) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    return (n + page - 1) / page * page;
  }
  int rfd_, wfd_;
  size_t size_, regions_ = 0, next_ = 0;
  bool gift_;
  std::unique_ptr<Pages> out_;
  int sink_ = -1;
  std::byte* view_ = nullptr;
  size_t view_len_ = 0;
};

class VmspliceTransport final : public Transport {
 public:
  explicit VmspliceTransport(const Params& p)
      : size_(size_t(p.i64("size"))),
        gift_(p.flag("gift")),
        splice_(p.str("drain") == "splice"),
        roundtrip_(std_params::is_roundtrip(p)) {
    c_ = transport::pipe_channel(roundtrip_, false);
    pipe_size_ = grow_pipe(c_.prod_w, size_);
    if (roundtrip_) grow_pipe(c_.cons_w, size_);
  }
  ~VmspliceTransport() override {
    for (int fd : {c_.prod_r, c_.prod_w, c_.cons_r, c_.cons_w})
      if (fd >= 0) ::close(fd);
  }
  std::unique_ptr<Endpoint> open(Role role, int) override {
    const bool producer = role == Role::Producer;
    const int r = producer ? c_.prod_r : c_.cons_r, w = producer ? c_.prod_w : c_.cons_w;
    return std::make_unique<VmspliceEndpoint>(r, w, size_, pipe_size_, gift_, splice_);
  }
  void describe(nlohmann::json& extra) const override { extra["pipe_size"] = pipe_size_; }

 private:
  size_t size_, pipe_size_ = 0;
  bool gift_, splice_, roundtrip_;
  transport::FdChannel c_;
};

IPCLAB_REGISTER(Mechanism{
    .suite = "bulk",
    .name = "vmsplice",
    .help =
        "vmsplice the sender's pages into a pipe; the receiver read()s or splice()s them into a mapped memfd",
    .params = suite_params(
        {{.name = "gift",
          .type = ParamType::Bool,
          .def = "0",
          .help = "pass SPLICE_F_GIFT (the pages are given to the kernel)",
          .quick = {"0"},
          .full = {"0", "1"}},
         {.name = "drain",
          .type = ParamType::String,
          .def = "read",
          .choices = {"read", "splice"},
          .help = "read: into the receiver's buffer; splice: into a memfd the receiver has mapped",
          .quick = {"read", "splice"}}}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<VmspliceTransport>(p);
    },
    .check = [](const Params& p) { return check(Caps{}, p); },
});

}  // namespace
}  // namespace ipclab::bulk
