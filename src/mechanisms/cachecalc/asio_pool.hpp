#pragma once
// The scaffolding the asio::thread_pool variants share: one pool of kConcurrency threads per run,
// and per iteration a fresh map, a new strand, kTasks tasks started by the variant and a latch
// that the last of them releases before the map is verified. Only the task body differs between
// the variants, on purpose. A header of its own so that the variants without Asio do not parse it.
#include <asio.hpp>

#include <latch>

#include "mechanisms/cachecalc/workload.hpp"

namespace ipclab::cachecalc {

using Strand = asio::strand<asio::thread_pool::executor_type>;

/// What a task of one iteration works with; every task calls done.count_down() as its last act.
struct PoolIteration {
  asio::thread_pool& pool;
  Strand& strand;
  Cache& cache;
  std::latch& done;
};

/// run_iterations over an asio::thread_pool: start_task(it) is called kTasks times per iteration
/// and must start one task (post or co_spawn) without waiting for it.
template <class StartTask>
void run_on_pool(Session& s, StartTask start_task) {
  asio::thread_pool pool(kConcurrency);
  run_iterations(s, [&] {
    Cache c = fresh_cache();
    Strand strand = asio::make_strand(pool.get_executor());
    std::latch done(kTasks);
    PoolIteration it{pool, strand, c, done};
    for (int t = 0; t < kTasks; ++t) start_task(it);
    done.wait();
    return verify(c);
  });
}

}  // namespace ipclab::cachecalc
