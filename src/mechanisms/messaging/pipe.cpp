// messaging/pipe: anonymous pipes. Ping-pong uses one pipe per direction; throughput one pipe
// from the producer to the consumer.
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/fdio.hpp"
#include "core/mechanism.hpp"
#include "core/std_params.hpp"

namespace ipclab {
namespace {

struct PipeEndpoint final : Endpoint {
  int rfd, wfd;
  PipeEndpoint(int r, int w) : rfd(r), wfd(w) {}
  void send(const std::byte* data, size_t len) override { write_all(wfd, data, len); }
  size_t recv(std::byte* buf, size_t len) override {
    read_exact(rfd, buf, len);
    return len;
  }
};

class PipeTransport final : public Transport {
 public:
  explicit PipeTransport(const Params& p) {
    make(to_server_);
    if (p.str("pattern") == "pingpong") make(to_client_);
  }
  ~PipeTransport() override {
    for (int fd : {to_server_[0], to_server_[1], to_client_[0], to_client_[1]})
      if (fd >= 0) ::close(fd);
  }
  std::unique_ptr<Endpoint> open(Role role, int) override {
    // Producer/client writes to_server and reads to_client; the consumer/server the reverse.
    if (role == Role::Producer) return std::make_unique<PipeEndpoint>(to_client_[0], to_server_[1]);
    return std::make_unique<PipeEndpoint>(to_server_[0], to_client_[1]);
  }

 private:
  static void make(int fds[2]) {
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  }
  int to_server_[2] = {-1, -1};
  int to_client_[2] = {-1, -1};
};

IPCLAB_REGISTER(Mechanism{
    .suite = "messaging",
    .name = "pipe",
    .help = "anonymous pipe (pipe2), one per direction",
    .params = {std_params::pattern(),
               std_params::size({"64", "8192"}, {"1", "4", "64", "256", "1024", "4096", "8192", "65536"}),
               std_params::mode(), std_params::placement(), std_params::latency_sample(),
               std_params::random_payload()},
    .transport = [](const Params& p) { return std::make_unique<PipeTransport>(p); },
    .check = [](const Params& p) -> std::string {
      if (p.str("pattern") == "throughput" && p.i64("size") < 24)
        return "throughput needs size >= 24 (sequence and timestamp travel in the message)";
      return "";
    },
});

}  // namespace
}  // namespace ipclab
