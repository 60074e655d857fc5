#pragma once
// The echo suite (reference 003's echo server): a server process pinned to one CPU, and one
// event-driven client thread pinned to the other that keeps one message in flight per connection
// (pattern=closed) or starts requests on a schedule (pattern=rate, open loop), verifies every
// echoed byte and times each round trip. The server is the mechanism's `server`
// hook: a function forked from the harness, or any executable that follows the contract in
// docs/echo.md; its workload is run_echo. With reactors=k (the servers that run several: epoll,
// uring) the server runs k reactor threads, each pinned with a SO_REUSEPORT listener of its own,
// and the client k threads, the connections dealt among them (common.cpp has the CPU layout).
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/model/mechanism.hpp"

namespace ipclab::echo {

/// The suite's common parameters (connections, size, client), then `extra`.
std::vector<ParamSpec> suite_params(std::vector<ParamSpec> extra = {});
/// The suite's check (Mechanism::check) of echo/`name`: `multi_reactor` for a server that runs as
/// several reactors (a forked `serve` of one listener, run on each reactor thread); the others
/// refuse reactors > 1. reactors=k runs k client threads, each with a connection at least.
std::function<std::string(const Params&)> suite_check(const std::string& name, bool multi_reactor);
/// Runs one echo benchmark: start the mechanism's server, run the client through the Session's
/// warm-up and measured window, verify, stop; with pattern=rate, one such run per point of
/// run_rate (each trial of rate=auto too).
void run_echo(Session& s);

/// Largest message: servers size their buffers from it.
inline constexpr int64_t kMaxSize = 65536;

/// Provided buffers for `connections` connections of `size`-byte messages (the io_uring server
/// and client): four per connection (one in a send, the rest for what arrives meanwhile) of the
/// message size rounded up to a power of two between 4 KiB and kMaxSize, at most 64 MiB in all;
/// small buffers keep the set the kernel copies into warm in cache, a bigger message spans several.
struct BufferPlan {
  size_t buf_size;
  unsigned entries;  // a power of two, at least 64
};
inline BufferPlan provided_buffers(size_t size, size_t connections) {
  const size_t buf = std::clamp<size_t>(std::bit_ceil(size), 4096, size_t(kMaxSize));
  const auto cap = unsigned(std::bit_floor((size_t(64) << 20) / buf));
  return {buf, std::clamp<unsigned>(std::bit_ceil(unsigned(connections) * 4), 64, std::max(64u, cap))};
}

/// Asio echo server over its io_uring backend (a separate translation unit: that backend is a
/// compile-time choice of Asio's headers).
void serve_asio_io_uring(int listen_fd, const Params& p);
/// echo/uring loop=raw: the hand-written liburing event loop (uring_raw.cpp).
void serve_uring_raw(int listen_fd, const Params& p);

}  // namespace ipclab::echo
