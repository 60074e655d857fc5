// The load generator: every client of a wave in one epoll loop on the calling thread, so that
// 10,000 sessions cost 10,000 sockets and a few hundred bytes each, not 10,000 threads. The clock
// times each session and connect and enforces their time-outs; the wave's window is the Session's.
#include <errno.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <system_error>
#include <vector>

#include "core/clock.hpp"
#include "mechanisms/servers/loadgen.hpp"
#include "mechanisms/servers/protocol.hpp"

namespace ipclab::servers {
namespace {

enum class St : uint8_t { Connecting, Session, Closing, Done };

struct Client {
  int fd = -1;
  St st = St::Connecting;
  uint8_t step = 0;  // index of the message whose reply is awaited
  uint8_t got = 0;   // bytes of that reply received
  uint64_t t0 = 0, t_conn = 0;
  uint64_t t_req = 0;  // when the awaited request was queued
};

}  // namespace

void run_load(const LoadConfig& cfg, Worker& w, std::atomic<uint64_t>& progress, LoadResult& out) {
  const int n = cfg.clients;
  std::vector<Client> cs(static_cast<size_t>(n));
  std::vector<std::string> lines;
  for (auto& m : kMessages) lines.push_back(m + "\n");
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(uint16_t(cfg.port));
  int left = n;
  // One writer, this thread: a relaxed store, no read-modify-write.
  auto beat = [&progress] {
    progress.store(progress.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  };

  auto finish = [&](Client& c) {
    if (c.fd >= 0) ::close(c.fd);  // close also removes it from the epoll set
    c.fd = -1;
    c.st = St::Done;
    --left;
    beat();
  };
  auto reject = [&](Client& c, int err) {
    ++out.rejected;
    if (err == ECONNREFUSED)
      ++out.rejected_refused;
    else if (err == ECONNRESET)
      ++out.rejected_reset;
    else if (err == ETIMEDOUT)
      ++out.rejected_timeout;
    else
      ++out.rejected_other;
    finish(c);
  };
  auto lose = [&](Client& c, bool timeout) {
    ++out.lost;
    ++(timeout ? out.lost_timeout : out.lost_closed);
    finish(c);
  };
  auto send_line = [&](Client& c, uint64_t now) {
    const std::string& l = lines[c.step];
    c.t_req = now;
    const ssize_t sent = ::send(c.fd, l.data(), l.size(), MSG_NOSIGNAL);
    if (sent != ssize_t(l.size())) {  // a few bytes into an empty socket buffer: only a dead peer refuses
      lose(c, false);
      return false;
    }
    return true;
  };
  auto connected = [&](Client& c, uint64_t now) {
    c.t_conn = now;
    beat();
    out.connect.record(now - c.t0);
    c.st = St::Session;
    c.step = 0;
    c.got = 0;
    if (!send_line(c, now_ns())) return;
    epoll_event ev{.events = EPOLLIN, .data = {.u64 = uint64_t(&c - cs.data())}};
    epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
  };

  for (int i = 0; i < n; ++i) {
    // Tens of thousands of connects take seconds: the wave shows it is under way meanwhile (the
    // server can be judged by its replies only once they are all started).
    if (i % 256 == 255) {
      w.running();
      beat();
    }
    Client& c = cs[size_t(i)];
    c.t0 = now_ns();
    c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c.fd < 0) {
      int e = errno;
      ::close(ep);
      for (auto& o : cs)
        if (o.fd >= 0) ::close(o.fd);
      throw std::system_error(e, std::generic_category(), "socket (client)");
    }
    int r = ::connect(c.fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    const int err = r == 0 ? 0 : errno;
    epoll_event ev{.events = EPOLLOUT, .data = {.u64 = uint64_t(i)}};
    epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
    if (r == 0)
      connected(c, now_ns());
    else if (err != EINPROGRESS)
      reject(c, err);
  }

  std::vector<epoll_event> evs(1024);
  uint64_t next_scan = now_ns() + 20'000'000;
  char buf[256];
  while (left > 0) {
    if (!w.running()) {  // the run stopped mid-wave: what has not ended never will
      for (auto& c : cs) {
        if (c.st == St::Connecting)
          reject(c, ECONNRESET);
        else if (c.st != St::Done)
          lose(c, false);
      }
      break;
    }
    int k = epoll_wait(ep, evs.data(), int(evs.size()), 20);
    if (k < 0 && errno != EINTR) break;
    const uint64_t now = now_ns();
    for (int e = 0; e < k; ++e) {
      Client& c = cs[evs[size_t(e)].data.u64];
      if (c.st == St::Done) continue;
      if (c.st == St::Connecting) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err)
          reject(c, err);
        else if (evs[size_t(e)].events & EPOLLOUT)
          connected(c, now);
        continue;
      }
      // Session or Closing: drain what arrived, checking every byte against `pong\n`.
      for (;;) {
        ssize_t r = ::recv(c.fd, buf, sizeof buf, 0);
        if (r < 0) {
          if (errno == EAGAIN || errno == EINTR) break;
          lose(c, false);  // reset mid-session
          break;
        }
        if (r == 0) {
          if (c.st == St::Closing) {
            out.session.record(now - c.t_conn);
            ++out.processed;
            finish(c);
          } else {
            lose(c, false);
          }
          break;
        }
        bool bad = c.st == St::Closing;
        for (ssize_t i = 0; i < r && !bad; ++i) {
          if (buf[i] != kPong[c.got]) {
            bad = true;
            break;
          }
          if (++c.got == kPongLen) {
            const uint64_t t = now_ns();  // this reply's end, the next request's start
            out.request.record(t - c.t_req);
            c.got = 0;
            beat();
            if (i + 1 != r)
              bad = true;  // the client waits for each reply: nothing may follow
            else if (++c.step + 1 == uint8_t(kMessages.size()))
              c.st = St::Closing;
            if (!bad && !send_line(c, t)) break;
          }
        }
        if (c.st == St::Done) break;
        if (bad) {
          ++out.corrupt;
          finish(c);
          break;
        }
      }
    }
    if (now >= next_scan) {
      next_scan = now + 20'000'000;
      for (auto& c : cs) {
        if (c.st == St::Connecting && now - c.t0 > uint64_t(cfg.connect_timeout_s * 1e9))
          reject(c, ETIMEDOUT);
        else if ((c.st == St::Session || c.st == St::Closing) &&
                 now - c.t_conn > uint64_t(cfg.session_timeout_s * 1e9))
          lose(c, true);
      }
    }
  }
  for (auto& c : cs)
    if (c.fd >= 0) ::close(c.fd);
  ::close(ep);
}

}  // namespace ipclab::servers
