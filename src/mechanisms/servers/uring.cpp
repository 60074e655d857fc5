// servers/uring: the project's io_uring runtime (ipcrt): one multishot accept SQE yields every
// connection; each connection is a detached coroutine doing recv/send through the same ring. With
// `reactors` > 1, one ring per reactor thread, each with its own SO_REUSEPORT listener (the suite
// runs the reactors: suite.cpp, core/peers/server). Compiled only when the build links ipcrt.
#if __has_include(<ipcrt/ipcrt.hpp>)
#include <unistd.h>

#include <ipcrt/ipcrt.hpp>

#include "mechanisms/servers/protocol.hpp"
#include "mechanisms/servers/suite.hpp"

namespace ipclab::servers {
namespace {

ipcrt::task<void> uring_connection(int fd) {
  ProtocolConn pc;
  std::string out;
  char buf[512];
  for (;;) {
    int r = co_await ipcrt::async_recv(fd, buf, sizeof buf);
    if (r <= 0) break;
    out.clear();
    auto st = pc.feed(buf, size_t(r), out);
    bool ok = true;
    for (size_t off = 0; off < out.size() && ok;) {
      int w = co_await ipcrt::async_send(fd, out.data() + off, out.size() - off);
      ok = w > 0;
      off += size_t(std::max(w, 0));
    }
    if (!ok || st != ProtocolConn::State::Open) break;
  }
  ::close(fd);
}

ipcrt::task<void> uring_acceptor(int lfd) {
  for (;;) {
    auto stream = ipcrt::async_accept_multishot(lfd, SOCK_CLOEXEC);
    // The kernel may end a multishot accept (e.g. under memory pressure): re-arm it then.
    while (true) {
      int fd = co_await stream.next();
      if (fd < 0) break;
      ipcrt::spawn(uring_connection(fd)).detach();
    }
    co_await ipcrt::sleep_for(std::chrono::milliseconds(1));
  }
}

IPCLAB_REGISTER(make_mechanism({
    .name = "uring",
    .help = "ipcrt io_uring runtime: multishot accept, a coroutine per connection; a ring per reactor thread",
    .multi_reactor = true,
    .serve =
        [](int lfd, const Params&) {
          ipcrt::runtime rt(ipcrt::options().entries(4096));
          auto body = [&]() { return uring_acceptor(lfd); };
          rt.block_on(body());
        },
}));

}  // namespace
}  // namespace ipclab::servers
#endif
