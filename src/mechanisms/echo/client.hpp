#pragma once
// The echo suite's client: one thread, pinned, keeping one message in flight per connection. What
// both of its event loops share (which messages to send, checking every echoed byte, the measured
// window, watching the server, echo/ab's turns) is here; the loops themselves are `drive_epoll`
// (common.cpp) and `drive_uring` (client_uring.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "core/cpu.hpp"
#include "core/histogram.hpp"
#include "core/record.hpp"
#include "core/session.hpp"
#include "mechanisms/echo/common.hpp"
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

/// echo/ab: one measured slice of one side.
struct Slice {
  int side = 0;
  uint64_t ops = 0, wall_ns = 0;
  double server_cpu_s = 0;
};

struct Client {
  std::vector<Conn> cs;  // connected, non-blocking
  size_t size = 0;
  const unsigned char* pattern = nullptr;  // size + kSpread random bytes
  servers::ServerProcess* server = nullptr;
  Record* rec = nullptr;
  uint64_t measure_at = 0, stop_at = 0;

  // echo/ab: two servers, connections [0, n) to side 0's and [n, 2n) to side 1's, loaded in
  // turns of slice_ns: at the end of a turn the active side's messages in flight are drained
  // (no new ones started), its slice is recorded, and the other side's connections start.
  // slice_ns = 0: one server, every connection loaded all the time.
  uint64_t slice_ns = 0;
  servers::ServerProcess* servers[2] = {nullptr, nullptr};
  std::vector<Slice> slices;       // the slices wholly inside the measured window, in order
  std::vector<size_t> kick;        // connections to send on now (filled by tick())

  std::string error;  // set once: the run failed
  Histogram hist;
  uint64_t ops = 0;
  CpuUsage client0, client1;
  double srv0 = 0, srv1 = 0;
  uint64_t t_begin = 0, t_end = 0;

  /// Picks connection idx's next message (a window into the pattern) and stamps its send time.
  void start_msg(size_t idx);
  /// The first messages: every connection's (of side 0's, in turns). The caller sends them.
  std::vector<size_t> begin();
  /// Once per loop turn: opens and closes the measured window, watches the server for death and
  /// stalls, switches turns (the caller then sends on every connection in `kick` and clears it).
  /// False when the loop must end (the window closed, or `error` is set).
  bool tick();
  /// `n` echoed bytes arrived on connection idx: checks them against what was sent. True when
  /// they complete the message and the next one is started (the caller sends it); its round trip
  /// is recorded. On a mismatch, sets `error`, counts a corrupt message, returns false.
  bool received(size_t idx, const unsigned char* data, size_t n);

 private:
  int side_of(size_t idx) const { return slice_ns && idx >= cs.size() / 2 ? 1 : 0; }
  void switch_turn(uint64_t now);
  bool measuring_ = false;
  uint64_t last_progress_ = 0, next_check_ = 0;
  int active_ = 0;               // the side whose turn it is
  bool draining_ = false;        // its turn is over: no new messages
  unsigned inflight_[2] = {0, 0};
  uint64_t turn_start_ = 0, turn_end_ = 0, turn_ops_ = 0;
  double turn_cpu0_ = 0;
};

/// The random bytes messages are cut from (size + a spread of offsets).
std::vector<unsigned char> echo_pattern(size_t size);
/// Starts `launch` pinned to `cpu` (-1: unpinned); a forked `serve` gets `p`, which the caller
/// keeps alive until the server is stopped.
servers::ServerProcess start_server(const ServerLaunch& launch, int cpu, const Params& p);
/// Opens `n` connections to 127.0.0.1:`port` (TCP_NODELAY, non-blocking), appended to `cl.cs`;
/// sets `cl.error` when one fails.
void connect_to(Client& cl, int port, size_t n);
/// The server echo mechanism `m` would start with `p` (after its own checks: a Skip propagates),
/// for echo/ab; UsageError if `m` does not start its server through run_echo.
ServerLaunch launch_of(const Mechanism& m, const Params& p, const RunOptions& o);

/// The client loops: run until `tick()` says stop or `error` is set.
void drive_epoll(Client& c);
void drive_uring(Client& c);
/// False when this build has no io_uring client (no runtime library).
bool have_uring_client();

}  // namespace ipclab::echo
