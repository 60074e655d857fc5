// The load generator: every client in one epoll loop on the calling thread, so that 10,000
// sessions cost 10,000 sockets and a few hundred bytes each, not 10,000 threads. The clock times
// each session and connect and enforces their time-outs; the run's window is the Session's.
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <system_error>
#include <vector>

#include "core/base/clock.hpp"
#include "mechanisms/servers/loadgen.hpp"
#include "mechanisms/servers/protocol.hpp"

namespace ipclab::servers {
namespace {

enum class St : uint8_t { Connecting, Session, Closing, Done };

struct Client {
  int fd = -1;
  St st = St::Done;
  bool measured = false;  // open loop: started inside the measured window
  uint8_t step = 0;       // index of the message whose reply is awaited
  uint8_t got = 0;        // bytes of that reply received
  uint32_t gen = 0;       // the slot's session count: an event of an earlier session is stale
  uint64_t t0 = 0, t_conn = 0;
  uint64_t t_req = 0;  // when the awaited request was queued
  uint64_t t_due = 0;  // open loop: the intended start (0 in a wave)
};

constexpr uint64_t kScanNs = 20'000'000;  // time-outs are checked this often

// The sessions in flight: their sockets in one epoll set, each session's state machine, its
// time-outs, and what it ends as. Slots are reused as sessions end (open loop).
class Clients {
 public:
  // `warm` / `measured`: where the unmeasured and the measured sessions count (the same in a wave);
  // `trace`: the open loop's raw latencies (nullptr in a wave).
  Clients(const LoadConfig& cfg, std::atomic<uint64_t>& progress, LoadResult& warm, LoadResult& measured,
          RateTrace* trace, uint64_t window_ns)
      : cfg_(cfg), progress_(progress), res_{&warm, &measured}, trace_(trace), window_ns_(window_ns) {
    for (auto& m : kMessages) lines_.push_back(m + "\n");
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    if (ep_ < 0) throw std::system_error(errno, std::generic_category(), "epoll_create1");
    addr_.sin_family = AF_INET;
    addr_.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (!cfg.address.empty() && inet_pton(AF_INET, cfg.address.c_str(), &addr_.sin_addr) != 1)
      throw std::runtime_error("server address '" + cfg.address + "' is not IPv4");
    addr_.sin_port = htons(uint16_t(cfg.port));
    next_scan_ = now_ns() + kScanNs;
  }
  ~Clients() {
    for (auto& c : cs_)
      if (c.fd >= 0) ::close(c.fd);
    ::close(ep_);
  }
  Clients(const Clients&) = delete;
  Clients& operator=(const Clients&) = delete;

  void reserve(size_t n) { cs_.reserve(n); }
  size_t open() const { return open_; }

  /// Starts a session (a non-blocking connect) intended at `due` (0: a wave's); returns the clock
  /// at its connect call.
  uint64_t start(uint64_t due, bool measured) {
    uint32_t i;
    if (!free_.empty()) {
      i = free_.back();
      free_.pop_back();
    } else {
      i = uint32_t(cs_.size());
      cs_.emplace_back();
    }
    Client& c = cs_[i];
    c = Client{.st = St::Connecting, .measured = measured, .gen = c.gen + 1, .t_due = due};
    ++open_;
    res(c).peak_open = std::max<uint64_t>(res(c).peak_open, open_);
    ++res(c).started;
    c.t0 = now_ns();
    c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c.fd < 0) throw std::system_error(errno, std::generic_category(), "socket (client)");
    int r = ::connect(c.fd, reinterpret_cast<sockaddr*>(&addr_), sizeof addr_);
    const int err = r == 0 ? 0 : errno;
    epoll_event ev{.events = EPOLLOUT, .data = {.u64 = key(c, i)}};
    epoll_ctl(ep_, EPOLL_CTL_ADD, c.fd, &ev);
    if (r == 0)
      connected(c, i, now_ns());
    else if (err != EINPROGRESS)
      reject(c, err);
    return c.t0;
  }

  /// Serves what arrives within `wait_ns` (0: what is there now), then the time-outs when due.
  void serve(uint64_t wait_ns) {
    // No session open (an open loop between sparse arrivals): the server owes nothing, so it cannot
    // be stalled; its heartbeat says so, or a gap longer than the stall limit would look like one.
    if (open_ == 0) beat();
    const timespec ts{.tv_sec = time_t(wait_ns / 1'000'000'000u), .tv_nsec = long(wait_ns % 1'000'000'000u)};
    int k = epoll_pwait2(ep_, evs_, kEvents, &ts, nullptr);
    if (k < 0 && errno != EINTR) throw std::system_error(errno, std::generic_category(), "epoll_pwait2");
    const uint64_t now = now_ns();
    for (int e = 0; e < k; ++e) event(evs_[e], now);
    if (now >= next_scan_) {
      next_scan_ = now + kScanNs;
      for (auto& c : cs_) {
        if (c.st == St::Connecting && now - c.t0 > uint64_t(cfg_.connect_timeout_s * 1e9))
          reject(c, ETIMEDOUT);
        else if ((c.st == St::Session || c.st == St::Closing) &&
                 now - c.t_conn > uint64_t(cfg_.session_timeout_s * 1e9))
          lose(c, true);
      }
    }
  }

  /// The run stopped before these sessions ended: what has not ended never will.
  void abandon() {
    for (auto& c : cs_) {
      if (c.st == St::Connecting)
        reject(c, ECONNRESET);
      else if (c.st != St::Done)
        lose(c, false);
    }
  }

 private:
  static constexpr int kEvents = 1024;
  static uint64_t key(const Client& c, uint32_t i) { return uint64_t(c.gen) << 32 | i; }
  LoadResult& res(const Client& c) { return *res_[c.measured]; }

  // One writer, this thread: a relaxed store, no read-modify-write.
  void beat() { progress_.store(progress_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }

  void finish(Client& c) {
    if (c.fd >= 0) ::close(c.fd);  // close also removes it from the epoll set
    c.fd = -1;
    c.st = St::Done;
    --open_;
    free_.push_back(uint32_t(&c - cs_.data()));
    beat();
  }
  void reject(Client& c, int err) {
    LoadResult& r = res(c);
    ++r.rejected;
    if (err == ECONNREFUSED)
      ++r.rejected_refused;
    else if (err == ECONNRESET)
      ++r.rejected_reset;
    else if (err == ETIMEDOUT)
      ++r.rejected_timeout;
    else
      ++r.rejected_other;
    finish(c);
  }
  void lose(Client& c, bool timeout) {
    LoadResult& r = res(c);
    ++r.lost;
    ++(timeout ? r.lost_timeout : r.lost_closed);
    finish(c);
  }
  bool send_line(Client& c, uint64_t now) {
    const std::string& l = lines_[c.step];
    c.t_req = now;
    const ssize_t sent = ::send(c.fd, l.data(), l.size(), MSG_NOSIGNAL);
    if (sent != ssize_t(l.size())) {  // a few bytes into an empty socket buffer: only a dead peer refuses
      lose(c, false);
      return false;
    }
    return true;
  }
  void connected(Client& c, uint32_t i, uint64_t now) {
    c.t_conn = now;
    // The kernel completes a connect into the listen backlog whether or not the server runs: in a
    // wave it shows the wave under way, but an open loop's new connects would keep a frozen
    // server's heartbeat going, so there only replies and session ends count.
    if (!c.t_due) beat();
    res(c).connect.record(now - c.t0);
    c.st = St::Session;
    c.step = 0;
    c.got = 0;
    if (!send_line(c, now_ns())) return;
    epoll_event ev{.events = EPOLLIN, .data = {.u64 = key(c, i)}};
    epoll_ctl(ep_, EPOLL_CTL_MOD, c.fd, &ev);
  }
  // The server closed a session that sent its `exit`: it is complete.
  void ended(Client& c, uint64_t now) {
    LoadResult& r = res(c);
    if (c.t_due) {
      r.session.record(now > c.t_due ? now - c.t_due : 0);
      if (c.measured) trace_->received(c.t_due, c.t0, now, window_ns_);
    } else {
      r.session.record(now - c.t_conn);
    }
    ++r.processed;
    finish(c);
  }

  void event(const epoll_event& ev, uint64_t now) {
    const auto i = uint32_t(ev.data.u64);
    if (i >= cs_.size()) return;
    Client& c = cs_[i];
    if (c.st == St::Done || c.gen != uint32_t(ev.data.u64 >> 32)) return;
    if (c.st == St::Connecting) {
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err)
        reject(c, err);
      else if (ev.events & EPOLLOUT)
        connected(c, i, now);
      return;
    }
    // Session or Closing: drain what arrived, checking every byte against `pong\n`.
    char buf[256];
    for (;;) {
      ssize_t r = ::recv(c.fd, buf, sizeof buf, 0);
      if (r < 0) {
        if (errno == EAGAIN || errno == EINTR) break;
        lose(c, false);  // reset mid-session
        break;
      }
      if (r == 0) {
        if (c.st == St::Closing)
          ended(c, now);
        else
          lose(c, false);
        break;
      }
      bool bad = c.st == St::Closing;
      for (ssize_t k = 0; k < r && !bad; ++k) {
        if (buf[k] != kPong[c.got]) {
          bad = true;
          break;
        }
        if (++c.got == kPongLen) {
          const uint64_t t = now_ns();  // this reply's end, the next request's start
          res(c).request.record(t - c.t_req);
          c.got = 0;
          beat();
          if (k + 1 != r)
            bad = true;  // the client waits for each reply: nothing may follow
          else if (++c.step + 1 == uint8_t(kMessages.size()))
            c.st = St::Closing;
          if (!bad && !send_line(c, t)) break;
        }
      }
      if (c.st == St::Done) break;
      if (bad) {
        ++res(c).corrupt;
        finish(c);
        break;
      }
    }
  }

  const LoadConfig& cfg_;
  std::atomic<uint64_t>& progress_;
  LoadResult* res_[2];
  RateTrace* trace_;
  uint64_t window_ns_;
  std::vector<std::string> lines_;
  int ep_ = -1;
  sockaddr_in addr_{};
  std::vector<Client> cs_;
  std::vector<uint32_t> free_;
  size_t open_ = 0;
  uint64_t next_scan_ = 0;
  epoll_event evs_[kEvents];
};

}  // namespace

void run_load(const LoadConfig& cfg, Worker& w, std::atomic<uint64_t>& progress, LoadResult& out) {
  Clients cs(cfg, progress, out, out, nullptr, 0);
  cs.reserve(size_t(cfg.clients));
  for (int i = 0; i < cfg.clients; ++i) {
    // Tens of thousands of connects take seconds: the wave shows it is under way meanwhile (the
    // server can be judged by its replies only once they are all started).
    if (i % 256 == 255) {
      w.running();
      progress.store(progress.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    }
    cs.start(0, false);
  }
  while (cs.open() > 0) {
    if (!w.running()) {  // the run stopped mid-wave: what has not ended never will
      cs.abandon();
      break;
    }
    cs.serve(kScanNs);
  }
}

void run_open_loop(const LoadConfig& cfg, const OpenLoop& ol, Worker& w, std::atomic<uint64_t>& progress,
                   LoadResult& warm, LoadResult& measured) {
  // A start time that has passed is met at once, up to this many in a row: a rate far beyond the
  // load generator's still serves replies and sees the stop in between.
  constexpr int kBurst = 64;
  auto& out = w.out();
  Clients cs(cfg, progress, warm, measured, &out.rate, ol.window_ns);
  w.ready();
  least_timer_slack();
  Arrivals arrivals = ol.spec.arrivals_for(ol.rate, 0, 1, now_ns());
  uint64_t due = arrivals.next();
  while (w.running()) {
    const bool measuring = w.measuring();
    for (int k = 0; k < kBurst && due <= now_ns(); ++k, due = arrivals.next()) {
      if (cs.open() >= ol.max_open) {  // not held back until one ends: that would close the loop
        ++(measuring ? measured : warm).over_cap;
        continue;
      }
      const uint64_t at = cs.start(due, measuring);
      if (measuring) out.rate.sent_one(due, at);
    }
    // Until the next start time, the replies are served: a spinning pace polls the epoll set for
    // the last margin (as pace_until's: the calibrated wake-up lateness, PacingFloor::margin_ns), a
    // sleeping one waits in it to the time itself (its wake-up's delay shows
    // as the scheduling error). At most one scan period, for the time-outs and the stop.
    const uint64_t now = now_ns();
    uint64_t left = due > now ? due - now : 0;
    if (const uint64_t margin = ol.spec.floor.margin_ns; ol.spec.pace == Pace::Spin)
      left = left > margin ? left - margin : 0;
    if (ol.spec.pace == Pace::Busy) left = 0;  // polls all the way
    cs.serve(std::min(left, kScanNs));
  }
  // What the schedule made due inside the window but was not started: the one drawn, and more.
  const uint64_t stop = w.window_end();
  if (out.rate.sent && due <= stop) ++out.rate.overdue;
  out.rate.stopped(arrivals, stop);
  // The sessions started before the stop are served to their end (each bounded by its time-outs),
  // unless the run aborts.
  while (cs.open() > 0) {
    w.running();  // the heartbeat: this worker is not stuck
    if (w.abort_requested()) {
      cs.abandon();
      break;
    }
    cs.serve(kScanNs);
  }
}

}  // namespace ipclab::servers
