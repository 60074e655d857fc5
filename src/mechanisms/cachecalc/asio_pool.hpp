#pragma once
// The scaffolding the asio::thread_pool variants share: per run a pool (and, where the reference
// has one, a single-thread pool of its own for the strand) and one strand, as the reference makes
// them outside its timed loop; per iteration a fresh map, kTasks tasks started by the variant and
// a latch that the last of them releases before the map is verified. Only the pools' shape and the
// task body differ between the variants, on purpose. A header of its own so that the variants
// without Asio do not parse it.
#include <asio.hpp>

#include <latch>
#include <optional>

#include "mechanisms/cachecalc/workload.hpp"

namespace ipclab::cachecalc {

using Strand = asio::strand<asio::thread_pool::executor_type>;

/// What a task of one iteration works with; every task calls done.count_down() as its last act.
struct PoolIteration {
  asio::thread_pool& pool;  // where timers and blocking delays run
  Strand& strand;           // where the calcs run
  Cache& cache;
  std::latch& done;
  CalcFn calc;
};

/// The pools of a variant, as the reference builds them.
struct PoolShape {
  int threads = kConcurrency;  // the task pool
  bool strand_pool = false;    // the strand on a single-thread pool of its own beside it
};

/// run_iterations over an asio::thread_pool: start_task(it) is called kTasks times per iteration
/// and must start one task (post or co_spawn) without waiting for it.
template <class StartTask>
void run_on_pool(Session& s, PoolShape shape, StartTask start_task) {
  const CalcFn calc = calc_of(s.params());
  asio::thread_pool pool(shape.threads);
  std::optional<asio::thread_pool> strand_pool;
  if (shape.strand_pool) strand_pool.emplace(1);
  Strand strand = asio::make_strand(strand_pool ? strand_pool->get_executor() : pool.get_executor());
  run_iterations(s, [&] {
    Cache c = fresh_cache();
    std::latch done(kTasks);
    PoolIteration it{pool, strand, c, done, calc};
    for (int t = 0; t < kTasks; ++t) start_task(it);
    done.wait();
    return verify(c);
  });
}

}  // namespace ipclab::cachecalc
