#pragma once
// P producer/consumer pairs over Asio experimental::channel, shared by channel_asio and
// channel_pairs_asio. Pair p's message i carries p*n + i.
#include <memory>
#include <vector>

#include <asio/experimental/channel.hpp>

#include "mechanisms/runtime/asio.hpp"

namespace ipclab::rt {

using asio_channel = asio::experimental::channel<void(asio::error_code, uint64_t)>;

inline asio::awaitable<void> asio_producer(asio_channel& ch, uint64_t first, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) co_await ch.async_send(asio::error_code{}, first + i, asio::use_awaitable);
}

// Receives exactly n: Asio's channel close cancels what is still buffered, so the count is fixed.
inline asio::awaitable<void> asio_consumer(asio_channel& ch, uint64_t first, uint64_t n, Tally& t) {
  for (uint64_t i = 0; i < n; ++i) t.take(co_await ch.async_receive(asio::use_awaitable), first + i);
}

/// Runs `pairs` pairs of n messages each on `ctx`, driven as `spawned` says (the consumers are
/// what the driver joins: each ends after its producer's last message); the tally's sum is
/// index_sum(pairs * n).
inline Tally asio_pairs(asio::io_context& ctx, bool spawned, uint64_t pairs, uint64_t n, size_t cap) {
  std::vector<std::unique_ptr<asio_channel>> chans;
  Tally t;
  run_driven(ctx, spawned, pairs, [&](asio::io_context& c, const asio_done& done) {
    for (uint64_t p = 0; p < pairs; ++p) {
      chans.push_back(std::make_unique<asio_channel>(c, cap));
      asio::co_spawn(c, asio_consumer(*chans.back(), p * n, n, t), then(done));
      asio::co_spawn(c, asio_producer(*chans.back(), p * n, n), then([] {}));
    }
  });
  return t;
}

}  // namespace ipclab::rt
