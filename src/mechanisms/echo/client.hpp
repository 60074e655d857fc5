#pragma once
// The echo suite's client, a Session worker: one thread, pinned, keeping one message in flight per
// connection (with reactors=k, k such clients, each with its share of the connections). What both of its
// event loops share (which messages to send, checking every echoed byte, following the Session's phases,
// counting into the worker's slot) is here; the loops themselves are `drive_epoll` (client.cpp) and
// `drive_uring` (client_uring.cpp). With pattern=rate the client is open loop instead: `drive_epoll_rate`
// (client_rate.cpp).
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "core/measure/session.hpp"
#include "core/run/openloop.hpp"

namespace ipclab::echo {

struct Conn {
  int fd = -1;
  uint64_t seq = 0;
  size_t sent = 0, got = 0;
  uint64_t t_send = 0;
  const unsigned char* msg = nullptr;
  bool want_out = false;  // epoll loop: EPOLLOUT armed
};

struct Client {
  /// `size`-byte messages; the random pattern they are taken from is made here.
  explicit Client(size_t size);
  ~Client();  // closes the connections
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  std::vector<Conn> cs;  // connected, non-blocking
  size_t size = 0;
  std::vector<unsigned char> pattern;  // size + kSpread random bytes, messages are windows into it
  std::vector<size_t> kick;            // connections to send on now (filled by begin())
  std::string error;                   // set once: the loop ends and the worker fails with it
  /// Every echo completed, warm-up included: the server's heartbeat (it shows progress only
  /// through the echoes), read by the Session's watchdog.
  std::atomic<uint64_t> echoes{0};
  Worker* worker = nullptr;  // the Session worker that runs the loop

  /// Opens `n` connections to 127.0.0.1:`port` (TCP_NODELAY, non-blocking), or to `address` (a
  /// server on another host, --remote); sets `error` when one fails.
  void connect(int port, size_t n, const std::string& address = "");
  /// An epoll set watching every connection for input (event data: its index), for the epoll
  /// loops; -1 with `error` set when it cannot be made.
  int epoll_set();
  /// Starts every connection's first message, into `kick`.
  void begin();
  /// Once per loop turn: follows the Session's phases (Worker::running). False when the loop must
  /// end: the run stopped, or `error` is set.
  bool tick();
  /// `n` echoed bytes arrived on connection idx: checks them against what was sent. True when
  /// they complete the message and the next one is started (the caller sends it); a message
  /// completed in the measured window is counted, its round trip recorded. On a mismatch, sets
  /// `error`, counts a corrupt message, returns false.
  bool received(size_t idx, const unsigned char* data, size_t n);
  /// Message `seq` of connection idx: a window into `pattern` at an offset that changes with every
  /// message and connection, so a byte from a stale, duplicated or foreign message does not
  /// compare equal.
  const unsigned char* message(size_t idx, uint64_t seq) const;

 private:
  void start_msg(size_t idx);
  bool measuring_ = false;
};

/// The client loops: run until `tick()` says stop or `error` is set.
void drive_epoll(Client& c);
void drive_uring(Client& c);
/// pattern=rate: requests start on the schedule of `spec` at `rate` per second, all clients
/// together — client `sender` of `senders` an equal share on a schedule of its own
/// (RateSpec::arrivals_for) — its connections taken in turn, whatever is in flight on them
/// (client_rate.cpp). `window_ns`: the run's --duration (RateTrace::received).
void drive_epoll_rate(Client& c, const RateSpec& spec, int64_t rate, uint64_t window_ns, int sender,
                      int senders);
/// Writes what is left of connection idx's message (Conn::msg from Conn::sent); arms EPOLLOUT on
/// `ep` while the socket buffer is full. False, with `error` set, when the send fails.
bool pump(Client& c, int ep, size_t idx);
/// False when this build has no io_uring client (no runtime library).
bool have_uring_client();

}  // namespace ipclab::echo
