// echo: a TCP echo server and its clients on one ipcrt runtime. The server takes connections from a
// multishot accept (single-shot accept on kernels without it) and spawns one task per connection that
// recv()s and send()s until EOF; 16 client tasks each send 200 numbered messages and check every echo.
// It doubles as a test: exit 0 on success, 1 on a mismatch, 77 when io_uring is unavailable.
//
// Build: cmake -S runtime -B /tmp/ipcrt-build -G Ninja && cmake --build /tmp/ipcrt-build --target
// ipcrt_example_echo
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ipcrt/ipcrt.hpp"

using namespace ipcrt;

namespace {

constexpr int kClients = 16;
constexpr int kMessages = 200;

task<void> serve_connection(int fd) {
  char buf[4096];
  for (;;) {
    int n = co_await async_recv(fd, buf, sizeof buf);
    if (n <= 0) break;
    for (int off = 0; off < n;) {
      int w = co_await async_send(fd, buf + off, static_cast<std::size_t>(n - off));
      if (w <= 0) co_return;
      off += w;
    }
  }
  co_await async_close(fd);
}

task<void> serve(int lfd, int expected) {
  if (features::get().multishot_accept) {
    auto acc = async_accept_multishot(lfd);
    for (int i = 0; i < expected; ++i) {
      int fd = co_await acc.next();
      if (fd < 0) break;
      spawn(serve_connection(fd)).detach();
    }
  } else {
    for (int i = 0; i < expected; ++i) {
      int fd = co_await async_accept(lfd);
      if (fd < 0) break;
      spawn(serve_connection(fd)).detach();
    }
  }
}

task<int> client(sockaddr_in addr, int id) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (co_await async_connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) co_return 1;
  int bad = 0;
  for (int m = 0; m < kMessages; ++m) {
    char msg[32];
    const int len = std::snprintf(msg, sizeof msg, "client %d msg %d\n", id, m);
    co_await async_send(fd, msg, static_cast<std::size_t>(len));
    char back[32];
    int got = 0;
    while (got < len) {
      int n = co_await async_recv(fd, back + got, static_cast<std::size_t>(len - got));
      if (n <= 0) break;
      got += n;
    }
    bad += got != len || std::memcmp(msg, back, static_cast<std::size_t>(len)) != 0;
  }
  co_await async_close(fd);
  co_return bad;
}

task<int> run_echo() {
  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t alen = sizeof addr;
  if (bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(lfd, 128) != 0 ||
      getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &alen) != 0) {
    std::perror("listen");
    co_return 1;
  }
  auto server = spawn(serve(lfd, kClients));
  std::vector<join_handle<int>> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(spawn(client(addr, i)));
  int bad = 0;
  for (auto& c : clients) bad += co_await c;
  co_await server;
  close(lfd);
  co_return bad;
}

}  // namespace

int main() {
  if (!features::get().io_uring) {
    std::puts("SKIP: io_uring not available");
    return 77;
  }
  const int bad = sync_wait(run_echo());
  std::printf("echo: %d clients x %d messages, %d mismatches\n", kClients, kMessages, bad);
  return bad == 0 ? 0 : 1;
}
