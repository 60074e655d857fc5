#pragma once
// The echo suite's client: one thread, pinned, keeping one message in flight per connection. What
// both of its event loops share (which messages to send, checking every echoed byte, the measured
// window, watching the server, echo/ab's turns) is here; the loops themselves are `drive_epoll`
// (common.cpp) and `drive_uring` (client_uring.cpp).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/cpu.hpp"
#include "core/histogram.hpp"
#include "core/record.hpp"
#include "core/session.hpp"
#include "core/watchdog.hpp"
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
  std::vector<unsigned char> pattern;  // size + kSpread random bytes, messages are windows into it
  Record* rec = nullptr;
  uint64_t measure_at = 0, stop_at = 0;

  // The server, or echo/ab's two: connections [0, n) to servers[0], [n, 2n) to servers[1], loaded
  // in turns of slice_ns: at the end of a turn the active side's messages in flight are drained
  // (no new ones started), its slice is recorded, and the other side's connections start.
  // slice_ns = 0: one server, every connection loaded all the time.
  servers::ServerProcess* servers[2] = {nullptr, nullptr};
  uint64_t slice_ns = 0;
  std::vector<Slice> slices;  // the slices wholly inside the measured window, in order
  std::vector<size_t> kick;   // connections to send on now (filled by begin() and tick())

  std::string error;  // set once: the run failed
  Histogram hist;
  uint64_t ops = 0;
  uint64_t echoes = 0;  // every echo completed, warm-up included: the watchdog's heartbeat
  // Watches the client and the servers, all of whose progress is the echoes completed (a server
  // shows progress only through them); a stopped server is named as the cause.
  std::unique_ptr<Watchdog> watchdog;
  uint64_t t_begin = 0, t_end = 0;  // the measured window; t_end stays 0 if it never closed
  // Over the measured window, set when it closes (zero if the run failed before): this client
  // thread's CPU, and servers[0]'s.
  CpuUsage client_cpu;
  double server_cpu_s = 0;

  /// Picks connection idx's next message (a window into the pattern) and stamps its send time.
  void start_msg(size_t idx);
  /// Starts the first messages: every connection's (side 0's, in turns), into `kick`.
  void begin();
  /// Once per loop turn: opens and closes the measured window, watches the servers for death and
  /// (through `watchdog`) stalls, switches turns. The caller then sends on every connection in `kick` and clears it.
  /// False when the loop must end (the window closed, or `error` is set).
  bool tick();
  /// `n` echoed bytes arrived on connection idx: checks them against what was sent. True when
  /// they complete the message and the next one is started (the caller sends it); its round trip
  /// is recorded. On a mismatch, sets `error`, counts a corrupt message, returns false.
  bool received(size_t idx, const unsigned char* data, size_t n);

 private:
  int side_of(size_t idx) const { return slice_ns && idx >= cs.size() / 2 ? 1 : 0; }
  void start_turn(int side);
  void switch_turn(uint64_t now);
  bool measuring_ = false;
  uint64_t next_check_ = 0;
  int active_ = 0;               // the side whose turn it is
  bool draining_ = false;        // its turn is over: no new messages
  unsigned inflight_[2] = {0, 0};
  uint64_t turn_start_ = 0, turn_end_ = 0, turn_ops_ = 0;
  double turn_cpu0_ = 0;
  CpuUsage client0_;  // at the window's start
  double srv0_ = 0;
};

/// The client CPU of a run: the first of --cpus, -1 for none.
int client_cpu(const RunOptions& o);
/// The server CPU of a run: the second of --cpus (the client takes the first), -1 for none.
int server_cpu(const RunOptions& o);
/// Before a run's servers start: UsageError if the chosen client loop is not built; raises
/// RLIMIT_NOFILE for `nservers` x connections.
void prepare_client(const Params& p, int nservers);
/// Starts `launch` pinned to `cpu` (-1: unpinned); a forked `serve` gets `p`, which the caller
/// keeps alive until the server is stopped.
servers::ServerProcess start_server(const ServerLaunch& launch, int cpu, const Params& p);
/// The client of a run, pinned to the first of --cpus: `connections` connections to each of the
/// servers (two: turns of slice_ns), its loop through warm-up and measured window, connections
/// closed. The caller checks `error` and the servers, then records it with record_client.
std::unique_ptr<Client> run_client(Session& s, servers::ServerProcess* a, servers::ServerProcess* b = nullptr,
                                   uint64_t slice_ns = 0);
/// The record's part that comes from the client: echoes, bytes, window, RTT histogram, client CPU
/// (the caller adds the servers'), echoes/s, `extra.client`, placement (client and servers).
void record_client(Record& rec, const Client& cl, const Session& s);
/// After the client's loop: how `server` died, "" if it did not. When the client failed, the server
/// gets 0.2 s to die first (its death is what usually breaks the client).
std::string death_after(servers::ServerProcess& server, const std::string& client_error);
/// Fails `rec` with a server's `death` (the client's error after it in brackets), else with the
/// client's error. False when there was neither.
bool fail_run(Record& rec, const std::string& death, const std::string& client_error);
/// The server echo mechanism `m` would start with `p` (after its own checks: a Skip propagates),
/// for echo/ab; UsageError if `m` does not start its server through run_echo.
ServerLaunch launch_of(const Mechanism& m, const Params& p, const RunOptions& o);

/// The client loops: run until `tick()` says stop or `error` is set.
void drive_epoll(Client& c);
void drive_uring(Client& c);
/// False when this build has no io_uring client (no runtime library).
bool have_uring_client();

}  // namespace ipclab::echo
