#pragma once
// The echo suite's client: one thread, pinned, keeping one message in flight per connection. What
// both of its event loops share (which messages to send, checking every echoed byte, the measured
// window, watching the server) is here; the loops themselves are `drive_epoll` (common.cpp) and
// `drive_uring` (client_uring.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "core/cpu.hpp"
#include "core/histogram.hpp"
#include "core/record.hpp"
#include "mechanisms/servers/common.hpp"

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
  std::vector<Conn> cs;  // connected, non-blocking
  size_t size = 0;
  const unsigned char* pattern = nullptr;  // size + kSpread random bytes
  servers::ServerProcess* server = nullptr;
  Record* rec = nullptr;
  uint64_t measure_at = 0, stop_at = 0;

  std::string error;  // set once: the run failed
  Histogram hist;
  uint64_t ops = 0;
  CpuUsage client0, client1;
  double srv0 = 0, srv1 = 0;
  uint64_t t_begin = 0, t_end = 0;

  /// Picks connection idx's next message (a window into the pattern) and stamps its send time.
  void start_msg(size_t idx);
  /// Once per loop turn: opens and closes the measured window, watches the server for death and
  /// stalls. False when the loop must end (the window closed, or `error` is set).
  bool tick();
  /// `n` echoed bytes arrived on connection idx: checks them against what was sent. True when
  /// they complete the message; its round trip is then recorded and the next message started
  /// (the caller sends it). On a mismatch, sets `error`, counts a corrupt message, returns false.
  bool received(size_t idx, const unsigned char* data, size_t n);

 private:
  bool measuring_ = false;
  uint64_t last_progress_ = 0, next_check_ = 0;
};

/// The client loops: run until `tick()` says stop or `error` is set.
void drive_epoll(Client& c);
void drive_uring(Client& c);
/// False when this build has no io_uring client (no runtime library).
bool have_uring_client();

}  // namespace ipclab::echo
