// The echo client (see client.hpp) and its epoll loop.
#include "mechanisms/echo/client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstring>
#include <random>

#include "core/base/clock.hpp"

namespace ipclab::echo {
namespace {

// Messages are windows into one random pattern (Client::message).
constexpr size_t kSpread = 4096;

}  // namespace

bool pump(Client& cl, int ep, size_t idx) {
  Conn& c = cl.cs[idx];
  while (c.sent < cl.size) {
    ssize_t w = ::send(c.fd, c.msg + c.sent, cl.size - c.sent, MSG_NOSIGNAL);
    if (w < 0 && errno == EAGAIN) break;
    if (w < 0) {
      cl.error = fmt::format("send: {}", strerror(errno));
      return false;
    }
    c.sent += size_t(w);
  }
  bool want = c.sent < cl.size;
  if (want != c.want_out) {
    c.want_out = want;
    epoll_event ev{.events = EPOLLIN | (want ? EPOLLOUT : 0u), .data = {.u64 = idx}};
    epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
  }
  return true;
}

Client::Client(size_t message_size) : size(message_size), pattern(message_size + kSpread) {
  std::mt19937_64 rng(42);
  for (auto& byte : pattern) byte = static_cast<unsigned char>(rng());
}

Client::~Client() {
  for (auto& c : cs)
    if (c.fd >= 0) ::close(c.fd);
}

void Client::connect(int port, size_t n, const std::string& address) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (!address.empty() && inet_pton(AF_INET, address.c_str(), &a.sin_addr) != 1) {
    error = fmt::format("server address '{}' is not IPv4", address);
    return;
  }
  a.sin_port = htons(uint16_t(port));
  for (size_t i = 0; i < n && error.empty(); ++i) {
    Conn& c = cs.emplace_back();
    c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (c.fd < 0 || ::connect(c.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      error = fmt::format("connect to the server: {}", strerror(errno));
      break;
    }
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::ioctl(c.fd, FIONBIO, &one) != 0) error = fmt::format("FIONBIO: {}", strerror(errno));
  }
}

const unsigned char* Client::message(size_t idx, uint64_t seq) const {
  return pattern.data() + (seq * 61 + idx * 997) % kSpread;
}

void Client::start_msg(size_t idx) {
  Conn& c = cs[idx];
  c.msg = message(idx, c.seq);
  c.sent = c.got = 0;
  c.t_send = now_ns();
}

void Client::begin() {
  for (size_t i = 0; i < cs.size(); ++i) {
    start_msg(i);
    kick.push_back(i);
  }
}

bool Client::tick() {
  if (!error.empty() || !worker->running()) return false;
  measuring_ = worker->measuring();
  return true;
}

bool Client::received(size_t idx, const unsigned char* data, size_t n) {
  Conn& c = cs[idx];
  WorkerResult& out = worker->out();
  if (n > size - c.got || std::memcmp(data, c.msg + c.got, n) != 0) {
    ++out.integrity.corrupt;
    error =
        n > size - c.got
            ? fmt::format("connection {} message {}: {} bytes echoed, {} sent", idx, c.seq, c.got + n, size)
            : fmt::format("connection {} message {}: echoed bytes differ from those sent", idx, c.seq);
    return false;
  }
  c.got += n;
  if (c.got < size) return false;
  const uint64_t t = now_ns();
  echoes.store(echoes.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // one writer
  if (measuring_) {
    out.record_latency(t - c.t_send);
    ++out.ops;
    out.bytes += size;
    ++out.integrity.sent;
    ++out.integrity.received;
  }
  ++c.seq;
  start_msg(idx);
  return true;
}

int Client::epoll_set() {
  const int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) {
    error = fmt::format("epoll_create1: {}", strerror(errno));
    return -1;
  }
  for (size_t i = 0; i < cs.size(); ++i) {
    epoll_event ev{.events = EPOLLIN, .data = {.u64 = i}};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev) != 0) {
      error = fmt::format("epoll_ctl: {}", strerror(errno));
      ::close(ep);
      return -1;
    }
  }
  return ep;
}

void drive_epoll(Client& cl) {
  const int ep = cl.epoll_set();
  if (ep < 0) return;
  std::vector<unsigned char> rbuf(cl.size);
  cl.begin();
  std::vector<epoll_event> evs(256);
  while (cl.tick()) {
    for (size_t i : cl.kick)
      if (!pump(cl, ep, i)) break;
    cl.kick.clear();
    int k = epoll_wait(ep, evs.data(), int(evs.size()), 20);
    for (int e = 0; e < k && cl.error.empty(); ++e) {
      const size_t idx = evs[size_t(e)].data.u64;
      Conn& c = cl.cs[idx];
      if ((evs[size_t(e)].events & EPOLLOUT) && !pump(cl, ep, idx)) break;
      if (!(evs[size_t(e)].events & (EPOLLIN | EPOLLERR | EPOLLHUP))) continue;
      ssize_t r = ::recv(c.fd, rbuf.data(), cl.size - c.got, 0);
      if (r < 0 && errno == EAGAIN) continue;
      if (r <= 0) {
        cl.error = r == 0 ? "the server closed a connection" : fmt::format("recv: {}", strerror(errno));
        break;
      }
      if (cl.received(idx, rbuf.data(), size_t(r)) && !pump(cl, ep, idx)) break;
    }
  }
  ::close(ep);
}

}  // namespace ipclab::echo
