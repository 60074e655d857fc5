#pragma once
// The Asio side of the runtime suite: Debian's standalone Asio 1.22 (header-only), C++20
// coroutines (awaitable), one io_context run by the calling thread. Every comparison task is
// co_spawn'ed on an io_context(1) -- concurrency hint 1: one thread runs it -- and the io_context is
// run to completion, so run() returning is the join of the whole run.
#include <cstddef>
#include <exception>
#include <functional>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/channel.hpp>
#include <asio/io_context.hpp>
#include <asio/use_awaitable.hpp>

#include "mechanisms/runtime/common.hpp"

namespace ipclab::rt {

/// Runs `ctx` until it has no work left, ready to be run again.
inline void run_to_completion(asio::io_context& ctx) {
  ctx.restart();
  ctx.run();
}

/// What a bench's completion handlers call once they have taken a coroutine's result: the
/// driver's join (nothing under block_on, where run() returning is the join).
using asio_done = std::function<void()>;
/// Co_spawns a bench's `k` coroutines on ctx, each with a completion handler that ends by calling
/// `done` (which lives until they have all completed: a handler may keep a reference to it).
using asio_start = std::function<void(asio::io_context& ctx, const asio_done& done)>;

/// A completion handler for co_spawn of an awaitable<void> that ends with `done`.
inline auto then(const asio_done& done) {
  return [done](std::exception_ptr e) {
    if (e) std::rethrow_exception(e);
    done();
  };
}

namespace detail {
// Asio 1.22 has no join handle: the root co_spawns the bench's coroutines, each completion handler
// posts one token to a channel of capacity k, and the root receives k tokens. (The token carries
// a dummy value: 1.22's channel_traits are ambiguous for a bare void(error_code).)
inline asio::awaitable<void> joining_root(asio::io_context& ctx, size_t k, const asio_start& start) {
  asio::experimental::channel<void(asio::error_code, bool)> joined(ctx, k);
  const asio_done done = [&joined] { joined.try_send(asio::error_code{}, true); };
  start(ctx, done);
  for (size_t i = 0; i < k; ++i) co_await joined.async_receive(asio::use_awaitable);
}
}  // namespace detail

/// Runs a bench's k coroutines to completion as `drive` says. block_on (Asio has no block_on: the
/// closest is condy-bench's way for its Asio switch and channel): they are co_spawn'ed directly on
/// ctx and run() drives them; run() returning is their join. spawned: a root coroutine
/// on ctx co_spawns them onto the same io_context and co_awaits their k completions (a channel
/// receive each), so the bench runs under a task that joins it, as the other runtimes' spawned
/// drive does.
inline void run_driven(asio::io_context& ctx, bool spawned, size_t k, const asio_start& start) {
  const asio_done nothing = [] {};
  if (spawned)
    asio::co_spawn(ctx, detail::joining_root(ctx, k, start), then(nothing));
  else
    start(ctx, nothing);
  run_to_completion(ctx);
}

}  // namespace ipclab::rt
