#pragma once
#include <string>
// The servers suite's load generator: clients of the protocol, either one wave of them started at
// once (closed) or sessions arriving on a schedule (pattern=rate, open loop).
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/measure/session.hpp"
#include "core/run/openloop.hpp"
#include "core/stats/histogram.hpp"

namespace ipclab::servers {

struct LoadConfig {
  int port = 0;
  std::string address;  // the server's IPv4 address ("": 127.0.0.1; another host's with --remote)
  int clients = 100;
  double connect_timeout_s = 3;
  double session_timeout_s = 10;
};

struct LoadResult {
  uint64_t processed = 0, rejected = 0, lost = 0, corrupt = 0;
  uint64_t rejected_refused = 0, rejected_reset = 0, rejected_timeout = 0, rejected_other = 0;
  uint64_t lost_timeout = 0, lost_closed = 0;
  /// Wave: from the connect's completion to the server's close, ns. Open loop: from the session's
  /// intended start to the server's close (coordinated omission corrected).
  Histogram session, connect;
  /// Each request line's round trip, ns: from the moment it is queued (the clock read just before
  /// its send(), which on a connected loopback socket with room completes at once) to the moment
  /// the loop sees the last byte of its `pong\n`. One clock read per request, no extra syscall: the
  /// reply's stamp is the next request's start.
  Histogram request;
  /// Open loop: sessions started, sessions due while `max_open` were open (not started: the point
  /// is saturated), and the most open at once.
  uint64_t started = 0, over_cap = 0, peak_open = 0;
};

/// One wave on the calling thread (a Session worker): `clients` sessions started at once,
/// non-blocking connects, one epoll set; every reply checked byte by byte. Ends when every session
/// has ended (processed, rejected or lost), or early when the worker's run stops (a stall, a dead
/// server: the run has failed; its unfinished sessions count as rejected or lost). `progress`
/// counts the connects, replies and session ends: the server's heartbeat (it shows progress only
/// through them).
void run_load(const LoadConfig& cfg, Worker& w, std::atomic<uint64_t>& progress, LoadResult& out);

/// The open loop's schedule and bounds.
struct OpenLoop {
  RateSpec spec;
  int64_t rate = 0;     // sessions per second
  size_t max_open = 0;  // sessions open at once, at most
  uint64_t window_ns = 0;
};

/// pattern=rate on the calling thread (a Session worker): from ready() until the run stops, each
/// session (connect, the requests one by one, close, as in a wave) starts at its intended time
/// (core/load/arrivals), or at once when that has passed, whether or not earlier ones have ended;
/// replies are served while it waits. Sessions started in the measured window go to `measured`
/// (their corrected latency) and w.out().rate (the raw one, from the connect call, and the
/// scheduling error); the others to `warm`. A session due while `max_open` are open is not
/// started: counted in over_cap (the point is saturated, not held back). After the stop, the
/// sessions in flight are served to their end, each bounded by its time-outs; a run that aborts
/// abandons them (counted as rejected or lost).
void run_open_loop(const LoadConfig& cfg, const OpenLoop& ol, Worker& w, std::atomic<uint64_t>& progress,
                   LoadResult& warm, LoadResult& measured);

}  // namespace ipclab::servers
