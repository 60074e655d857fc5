#pragma once
// The echo suite (reference 003's echo server): a server process pinned to one CPU, and one
// event-driven client thread pinned to the other that keeps one message in flight per connection,
// verifies every echoed byte and times each round trip. The server side is pluggable: a function
// forked from the harness, or any executable that follows the contract in docs/echo.md.
#include <functional>
#include <string>
#include <vector>

#include "core/mechanism.hpp"

namespace ipclab::echo {

/// How to start the server: `serve` runs in a forked child (listen_fd already bound), or `argv`
/// is exec'd (it binds 127.0.0.1:0 itself and prints its port on stdout).
struct ServerLaunch {
  std::function<void(int listen_fd, const Params& p)> serve;
  std::vector<std::string> argv;
};

/// The suite's common parameters (connections, size, duration-driven), then `extra`.
std::vector<ParamSpec> suite_params(std::vector<ParamSpec> extra = {});
/// Runs one echo benchmark: start the server, warm up, measure, verify, stop.
void run_echo(Session& s, const ServerLaunch& launch);

/// Largest message: servers size their buffers from it.
inline constexpr int64_t kMaxSize = 65536;

/// Asio echo server over its io_uring backend (a separate translation unit: that backend is a
/// compile-time choice of Asio's headers).
void serve_asio_io_uring(int listen_fd, const Params& p);
/// echo/uring loop=raw: the hand-written liburing event loop (uring_raw.cpp).
void serve_uring_raw(int listen_fd, const Params& p);

}  // namespace ipclab::echo
