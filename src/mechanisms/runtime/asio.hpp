#pragma once
// The Asio side of the runtime suite: Debian's standalone Asio 1.22 (header-only), C++20
// coroutines (awaitable), one io_context run by the calling thread. Every comparison task is
// co_spawn'ed on an io_context(1) -- concurrency hint 1: one thread runs it -- and the io_context is
// run to completion, so run() returning is the join of the whole run.
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/use_awaitable.hpp>

#include "mechanisms/runtime/common.hpp"

namespace ipclab::rt {

/// Runs `ctx` until it has no work left, ready to be run again.
inline void run_to_completion(asio::io_context& ctx) {
  ctx.restart();
  ctx.run();
}

}  // namespace ipclab::rt
