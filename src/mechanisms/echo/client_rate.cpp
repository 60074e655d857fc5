// The echo client's open-loop loop (pattern=rate, core/run/openloop.hpp), on epoll. Requests start on
// the schedule of Arrivals at the run's aggregate rate, the connections taking them in turn, however
// many are still in flight on each (TCP pipelines them). A server echoes a connection's bytes in
// order, so each connection keeps a FIFO of its requests in flight: every echoed byte is checked
// against the oldest's, which completes when all of its bytes are back. Its round trip is timed from
// its intended start (corrected, the worker's histogram) and from its actual one (raw), and the
// start's lateness is the scheduling error.
//
// A due request is never held behind reading: the loop starts whatever is due before each event it
// handles. It waits for the next start in epoll_pwait2, reading what arrives meanwhile: pace=sleep
// blocks there until the start, pace=spin blocks until the calibrated margin before it
// (PacingFloor::margin_ns, the machine's wake-up lateness) and then polls without
// blocking. A request late on its schedule starts at once and keeps its intended time; one whose
// connection is still writing the previous (its socket buffer full) waits for it, late.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <deque>

#include "core/base/clock.hpp"
#include "core/load/arrivals.hpp"
#include "mechanisms/echo/client.hpp"

namespace ipclab::echo {
namespace {

constexpr uint64_t kMaxWaitNs = 20'000'000;   // the longest wait: the phases are followed between
constexpr uint64_t kDrainNs = 1'000'000'000;  // after the window, for its requests still in flight
constexpr size_t kReadChunk = 65536;          // several pipelined echoes per recv
constexpr int kBatch = 16;                    // requests started in a row

struct InFlight {
  uint64_t seq, intended, actual;
  bool measured;  // started inside the measured window
};

class RateLoop {
 public:
  RateLoop(Client& cl, int ep, uint64_t window_ns)
      : cl_(cl), ep_(ep), window_ns_(window_ns), fifo_(cl.cs.size()), rbuf_(std::max(cl.size, kReadChunk)) {}

  /// Starts the request intended at `due` on the connection whose turn it is. False when that
  /// connection is still writing its previous request (it waits for EPOLLOUT), or on an error.
  bool start(uint64_t due) {
    Conn& c = cl_.cs[turn_];
    if (c.msg && c.sent < cl_.size) return false;
    const bool measured = cl_.worker->measuring();
    const uint64_t at = now_ns();
    c.msg = cl_.message(turn_, c.seq);
    c.sent = 0;
    fifo_[turn_].push_back({c.seq++, due, at, measured});
    if (measured) {
      cl_.worker->out().rate.sent_one(due, at);
      ++measured_in_flight_;
    }
    const size_t idx = turn_;
    turn_ = (turn_ + 1) % cl_.cs.size();
    return pump(cl_, ep_, idx);
  }

  /// Handles one readiness report of connection idx: writes, reads and checks. False on an error.
  bool handle(const epoll_event& ev) {
    const size_t idx = ev.data.u64;
    if ((ev.events & EPOLLOUT) && !pump(cl_, ep_, idx)) return false;
    if (!(ev.events & (EPOLLIN | EPOLLERR | EPOLLHUP))) return true;
    Conn& c = cl_.cs[idx];
    const ssize_t r = ::recv(c.fd, rbuf_.data(), rbuf_.size(), 0);
    if (r < 0 && errno == EAGAIN) return true;
    if (r <= 0) {
      cl_.error = r == 0 ? "the server closed a connection" : fmt::format("recv: {}", strerror(errno));
      return false;
    }
    const uint64_t t = now_ns();
    auto& fifo = fifo_[idx];
    WorkerResult& out = cl_.worker->out();
    for (size_t off = 0; off < size_t(r);) {
      if (fifo.empty()) {
        ++out.integrity.corrupt;
        cl_.error =
            fmt::format("connection {}: {} bytes echoed beyond the requests sent", idx, size_t(r) - off);
        return false;
      }
      const InFlight& f = fifo.front();
      const size_t n = std::min(size_t(r) - off, cl_.size - c.got);
      if (std::memcmp(rbuf_.data() + off, cl_.message(idx, f.seq) + c.got, n) != 0) {
        ++out.integrity.corrupt;
        cl_.error = fmt::format("connection {} message {}: echoed bytes differ from those sent", idx, f.seq);
        return false;
      }
      off += n;
      c.got += n;
      if (c.got < cl_.size) break;
      c.got = 0;
      complete(f, t);
      fifo.pop_front();
    }
    return true;
  }

  uint64_t measured_in_flight() const { return measured_in_flight_; }

 private:
  // Request `f` came back whole at `t`.
  void complete(const InFlight& f, uint64_t t) {
    cl_.echoes.store(cl_.echoes.load(std::memory_order_relaxed) + 1,
                     std::memory_order_relaxed);  // one writer
    if (!f.measured) return;
    --measured_in_flight_;
    WorkerResult& out = cl_.worker->out();
    out.record_latency(t > f.intended ? t - f.intended : 0);
    out.rate.received(f.intended, f.actual, t, window_ns_);
    // The record's ops are the requests started inside the window, counted as they complete
    // (also after it: dropping the window's last requests would drop the latest), as the
    // messaging pattern counts the messages sent inside it: ops, latencies and `sent` agree.
    ++out.ops;
    out.bytes += cl_.size;
    ++out.integrity.sent;
    ++out.integrity.received;
  }

  Client& cl_;
  int ep_;
  uint64_t window_ns_;
  std::vector<std::deque<InFlight>> fifo_;  // per connection, oldest first; the newest may be partly written
  std::vector<unsigned char> rbuf_;
  size_t turn_ = 0;  // the connection of the next request
  uint64_t measured_in_flight_ = 0;
};

timespec span(uint64_t ns) { return {time_t(ns / 1'000'000'000), long(ns % 1'000'000'000)}; }

}  // namespace

void drive_epoll_rate(Client& cl, const RateSpec& spec, int64_t rate, uint64_t window_ns, int sender,
                      int senders) {
  const int ep = cl.epoll_set();
  if (ep < 0) return;
  RateLoop loop(cl, ep, window_ns);
  std::vector<epoll_event> evs(256);
  // This client's share of the rate on a schedule of its own, dealt to its connections in turn.
  least_timer_slack();
  Arrivals arrivals = spec.arrivals_for(rate, sender, senders, now_ns());
  uint64_t due = arrivals.next();
  bool blocked = false;  // the due request waits for its connection's socket buffer
  // Starts the requests due by now, at most kBatch: a client behind its schedule still reads and
  // follows the phases between batches.
  auto start_due = [&] {
    blocked = false;
    int n = 0;
    for (uint64_t now = now_ns(); due <= now && n < kBatch; now = now_ns(), ++n) {
      if (!loop.start(due)) {
        blocked = cl.error.empty();
        return cl.error.empty();
      }
      due = arrivals.next();
    }
    return true;
  };
  auto wait = [&](uint64_t ns) {
    const timespec ts = span(ns);
    const int k = epoll_pwait2(ep, evs.data(), int(evs.size()), &ts, nullptr);
    if (k < 0 && errno != EINTR) cl.error = fmt::format("epoll_pwait2: {}", strerror(errno));
    return std::max(k, 0);
  };

  while (cl.tick()) {
    if (!start_due()) break;
    uint64_t ns = kMaxWaitNs;  // blocked: until EPOLLOUT
    if (!blocked) {
      const uint64_t now = now_ns();
      ns = std::min(ns, due > now ? due - now : 0);
      if (spec.pace == Pace::Spin) ns = ns > spec.floor.margin_ns ? ns - spec.floor.margin_ns : 0;
      if (spec.pace == Pace::Busy) ns = 0;  // polls all the way
    }
    const int k = wait(ns);
    for (int e = 0; e < k && cl.error.empty(); ++e)
      if (!start_due() || !loop.handle(evs[size_t(e)])) break;
  }

  // What the schedule made due inside the window but was not started: the one drawn, and more.
  RateTrace& trace = cl.worker->out().rate;
  const uint64_t stop = cl.worker->window_end();
  if (trace.sent && due <= stop) ++trace.overdue;
  trace.stopped(arrivals, stop);

  // The window is over: its requests still in flight come back (for at most kDrainNs), none starts.
  // The stall watchdog watches this too (the heartbeat); an aborted session ends it.
  const uint64_t end = now_ns() + kDrainNs;
  for (uint64_t now = now_ns();
       cl.error.empty() && loop.measured_in_flight() > 0 && now < end && !cl.worker->abort_requested();
       now = now_ns()) {
    cl.worker->running();
    const int k = wait(std::min(end - now, kMaxWaitNs));
    for (int e = 0; e < k && cl.error.empty(); ++e)
      if (!loop.handle(evs[size_t(e)])) break;
  }
  ::close(ep);
}

}  // namespace ipclab::echo
