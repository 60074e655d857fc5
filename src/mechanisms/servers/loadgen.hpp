#pragma once
// The servers suite's load generator: a wave of clients of the protocol, every session at once.
#include <atomic>
#include <cstdint>

#include "core/histogram.hpp"
#include "core/session.hpp"

namespace ipclab::servers {

struct LoadConfig {
  int port = 0;
  int clients = 100;
  double connect_timeout_s = 3;
  double session_timeout_s = 10;
};

struct LoadResult {
  uint64_t processed = 0, rejected = 0, lost = 0, corrupt = 0;
  uint64_t rejected_refused = 0, rejected_reset = 0, rejected_timeout = 0, rejected_other = 0;
  uint64_t lost_timeout = 0, lost_closed = 0;
  Histogram session, connect;  // ns
  /// Each request line's round trip, ns: from the moment it is queued (the clock read just before
  /// its send(), which on a connected loopback socket with room completes at once) to the moment
  /// the loop sees the last byte of its `pong\n`. One clock read per request, no extra syscall: the
  /// reply's stamp is the next request's start.
  Histogram request;
};

/// One wave on the calling thread (a Session worker): `clients` sessions started at once,
/// non-blocking connects, one epoll set; every reply checked byte by byte. Ends when every session
/// has ended (processed, rejected or lost), or early when the worker's run stops (a stall, a dead
/// server: the run has failed; its unfinished sessions count as rejected or lost). `progress`
/// counts the connects, replies and session ends: the server's heartbeat (it shows progress only
/// through them).
void run_load(const LoadConfig& cfg, Worker& w, std::atomic<uint64_t>& progress, LoadResult& out);

}  // namespace ipclab::servers
