// example/seqpacket_pair: the worked example of docs/adding-a-mechanism.md (built into the unit
// tests and run by tests/harness/example_mechanism_test.cpp, so the page cannot drift). A
// messaging transport over AF_UNIX SOCK_SEQPACKET socketpairs: one per round-trip pair, or one
// shared by the sides of the throughput pattern. The harness drives it (patterns, threads or
// processes, placement, warm-up, clock, CPU, integrity, output); this file only moves bytes.
#include <sys/socket.h>
#include <unistd.h>

#include <system_error>
#include <vector>

#include "core/base/fdio.hpp"
#include "core/model/mechanism.hpp"
#include "core/model/std_params.hpp"
#include "mechanisms/messaging/common.hpp"

namespace ipclab::example {
namespace {

// One side's descriptor. send/recv move one whole message: a SOCK_SEQPACKET read returns one.
class PairEndpoint final : public Endpoint {
 public:
  explicit PairEndpoint(int fd) : fd_(fd) {}
  void send(const std::byte* data, size_t len) override { write_all(fd_, data, len); }
  size_t recv(std::byte* buf, size_t len) override {
    read_exact(fd_, buf, len);
    return len;
  }

 private:
  int fd_;  // owned by the transport
};

// Made in the coordinating process before any worker starts, so forked workers inherit the
// descriptors; closed after every worker has ended.
class PairTransport final : public Transport {
 public:
  explicit PairTransport(const Params& p) {
    const int pairs = std_params::is_roundtrip(p) ? int(p.i64("producers")) : 1;
    for (int i = 0; i < pairs; ++i) {
      int sv[2];
      if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        throw std::system_error(errno, std::generic_category(), "socketpair");
      fds_.push_back({sv[0], sv[1]});
    }
  }
  ~PairTransport() override {
    for (auto& [a, b] : fds_) close(a), close(b);
  }
  // Producer (the round trip's client) on one end of its pair, consumer (server) on the other.
  std::unique_ptr<Endpoint> open(Role role, int index) override {
    auto& [a, b] = fds_[fds_.size() == 1 ? 0 : size_t(index)];
    return std::make_unique<PairEndpoint>(role == Role::Producer ? a : b);
  }

 private:
  std::vector<std::pair<int, int>> fds_;
};

// What it cannot do, said once: the checks turn it into one-line refusals while planning.
const messaging::Caps kCaps{.max_size = 65536,
                            .size_limit_why = "kept under the socket buffer",
                            .topology_why = "one socketpair carries one conversation"};

IPCLAB_REGISTER(Mechanism{
    .suite = "example",
    .name = "seqpacket_pair",
    .help = "AF_UNIX SOCK_SEQPACKET socketpair, one per pair (the worked example)",
    .params = messaging::suite_params(),
    .transport = [](const Params& p) { return std::make_unique<PairTransport>(p); },
    .check = [](const Params& p) { return messaging::check(kCaps, p); },
});

}  // namespace
}  // namespace ipclab::example
