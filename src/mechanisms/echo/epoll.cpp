// echo/epoll: one thread, epoll level-triggered; each readiness report is one read and a write
// of what was read (the socket buffer only fills under a stalled client; then EPOLLOUT drains it).
// With reactors > 1, one such loop per reactor thread, each on a listener of its own (run_echo).
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>

#include "core/measure/session.hpp"
#include "mechanisms/echo/common.hpp"

namespace ipclab::echo {
namespace {

struct EpollConn {
  int fd;
  size_t pending = 0, off = 0;  // bytes read but not yet written back
  uint32_t armed = EPOLLIN;
  std::unique_ptr<char[]> buf{new char[kMaxSize]};
};

void serve_epoll(int lfd, const Params&) {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  epoll_event lev{.events = EPOLLIN, .data = {.ptr = nullptr}};
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);
  epoll_event evs[256];
  for (;;) {
    int k = epoll_wait(ep, evs, 256, -1);
    for (int i = 0; i < k; ++i) {
      auto* c = static_cast<EpollConn*>(evs[i].data.ptr);
      if (!c) {
        for (int fd; (fd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0;) {
          epoll_event ev{.events = EPOLLIN, .data = {.ptr = new EpollConn{fd}}};
          epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
        }
        continue;
      }
      bool dead = false;
      if (c->pending == 0) {
        ssize_t r = recv(c->fd, c->buf.get(), kMaxSize, 0);
        if (r == 0 || (r < 0 && errno != EAGAIN))
          dead = true;
        else if (r > 0)
          c->pending = size_t(r), c->off = 0;
      }
      while (!dead && c->pending) {
        ssize_t w = send(c->fd, c->buf.get() + c->off, c->pending, MSG_NOSIGNAL);
        if (w < 0 && errno == EAGAIN) break;
        if (w <= 0)
          dead = true;
        else
          c->off += size_t(w), c->pending -= size_t(w);
      }
      if (dead) {
        close(c->fd);
        delete c;
        continue;
      }
      // Wait for writability only while bytes are pending, for readability otherwise.
      const uint32_t want = c->pending ? EPOLLOUT : EPOLLIN;
      if (want != c->armed) {
        c->armed = want;
        epoll_event ev{.events = want, .data = {.ptr = c}};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
      }
    }
  }
}

IPCLAB_REGISTER(Mechanism{
    .suite = "echo",
    .name = "epoll",
    .help = "one thread (a thread per reactor), epoll level-triggered, read then write back",
    .params = suite_params(),
    .workload = run_echo,
    .server =
        [](const Session& s) {
          return ServerLaunch{.serve = [p = s.params()](int lfd) { serve_epoll(lfd, p); }};
        },
    .check = suite_check("epoll", true),
});

}  // namespace
}  // namespace ipclab::echo
