// The epoll reactor (see reactor.hpp).
#include "mechanisms/servers/reactor.hpp"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "mechanisms/servers/protocol.hpp"

namespace ipclab::servers {

void epoll_reactor(int lfd, bool edge) {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  const uint32_t et = edge ? uint32_t(EPOLLET) : 0u;
  epoll_event lev{.events = EPOLLIN | et, .data = {.ptr = nullptr}};
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);
  struct Conn {
    int fd;
    ProtocolConn pc;
  };
  std::vector<epoll_event> evs(512);
  for (;;) {
    int k = epoll_wait(ep, evs.data(), int(evs.size()), -1);
    for (int i = 0; i < k; ++i) {
      auto* c = static_cast<Conn*>(evs[size_t(i)].data.ptr);
      if (!c) {  // the listener: accept all that wait (edge-triggered needs it, level benefits)
        for (;;) {
          int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
          if (fd < 0) break;
          epoll_event ev{.events = EPOLLIN | EPOLLRDHUP | et, .data = {.ptr = new Conn{fd, {}}}};
          epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
        }
        continue;
      }
      if (!serve_ready(c->fd, c->pc, edge)) {
        ::close(c->fd);
        delete c;
      }
    }
  }
}

}  // namespace ipclab::servers
