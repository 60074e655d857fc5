#pragma once
// P producer/consumer pairs over ipcrt channels, shared by channel_ipcrt and channel_pairs_ipcrt.
#include <memory>
#include <vector>

#include <ipcrt/ipcrt.hpp>

#include "mechanisms/runtime/common.hpp"

namespace ipclab::rt {

// Pair p's message i carries p*n + i, so a message crossing to another pair is caught too.
inline ipcrt::task<void> ipcrt_producer(ipcrt::channel<uint64_t>& ch, uint64_t first, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) co_await ch.send(first + i);
  ch.close();
}

inline ipcrt::task<Tally> ipcrt_consumer(ipcrt::channel<uint64_t>& ch, uint64_t first) {
  Tally t;
  while (auto v = co_await ch.recv()) t.take(*v, first + t.count);
  co_return t;
}

/// Runs `pairs` pairs of n messages each; the tally's sum is index_sum(pairs * n).
inline ipcrt::task<Tally> ipcrt_pairs(uint64_t pairs, uint64_t n, size_t cap) {
  std::vector<std::unique_ptr<ipcrt::channel<uint64_t>>> chans;
  std::vector<ipcrt::join_handle<void>> producers;
  std::vector<ipcrt::join_handle<Tally>> consumers;
  for (uint64_t p = 0; p < pairs; ++p) {
    chans.push_back(std::make_unique<ipcrt::channel<uint64_t>>(cap));
    consumers.push_back(ipcrt::spawn(ipcrt_consumer(*chans.back(), p * n)));
    producers.push_back(ipcrt::spawn(ipcrt_producer(*chans.back(), p * n, n)));
  }
  Tally all;
  for (auto& h : producers) co_await h;
  for (auto& h : consumers) {
    const Tally t = co_await h;
    all.count += t.count;
    all.sum += t.sum;
    all.disorder += t.disorder;
  }
  co_return all;
}

}  // namespace ipclab::rt
