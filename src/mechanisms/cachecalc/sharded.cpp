// cachecalc/sharded: one ipcrt runtime per CPU of --cpus, each owning a slice of the keys
// (shared-nothing, the pattern the reference showed with Seastar's sharded service). Compiled
// only when the build links ipcrt.
//
// A calc touches all 10 keys, so a task is routed to every shard that owns keys: shard k runs
// calc -> delay -> calc over its own keys only, with no lock. Shard 0 coordinates an iteration:
// it hands the other shards their start over MSG_RING (runtime::post), runs its own slice, and
// collects their "done" the same way; then it verifies the merged map.
#if __has_include(<ipcrt/ipcrt.hpp>)
#include <ipcrt/ipcrt.hpp>

#include <algorithm>
#include <future>
#include <latch>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/machine/placement.hpp"
#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"
#include "mechanisms/cachecalc/workload.hpp"

namespace ipclab::cachecalc {
namespace {

// Cache-line aligned: shard 0 rewrites its own map header every iteration while the others read
// theirs, and neighbouring Shards in the vector would otherwise share a line.
struct alignas(64) Shard {
  std::vector<std::string> keys;  // the keys this shard owns: hello<i> with i % shards == index
  Cache cache;
  ipcrt::runtime* rt = nullptr;
  std::thread thread;
};

ipcrt::task<void> shard_task(Shard& sh, std::chrono::microseconds delay) {
  calc_lean(sh.cache, sh.keys);
  co_await ipcrt::sleep_for(delay);
  calc_lean(sh.cache, sh.keys);
}

// One shard's part of an iteration, on that shard's thread.
ipcrt::task<void> slice(Shard& sh, std::chrono::microseconds delay) {
  sh.cache = fresh_cache(sh.keys);
  std::vector<ipcrt::join_handle<void>> tasks;
  tasks.reserve(kTasks);
  for (int t = 0; t < kTasks; ++t) tasks.push_back(ipcrt::spawn(shard_task(sh, delay)));
  for (auto& h : tasks) co_await h;
}

ipcrt::task<void> remote_slice(Shard& sh, Shard& coord, ipcrt::channel<int>& done,
                               std::chrono::microseconds delay) {
  co_await slice(sh, delay);
  coord.rt->post([&done] {
    int one = 1;
    done.try_send(one);
  });
}

// Runs verified iterations on shard 0 until the session stops the run (the worker's loop, handed
// to shard 0 so that iterations follow each other there as in one thread).
ipcrt::task<void> coordinate(std::vector<Shard>& shards, std::chrono::microseconds delay, Iterations& it) {
  ipcrt::channel<int> done(int(shards.size()));
  while (it.next()) {
    for (size_t k = 1; k < shards.size(); ++k)
      shards[k].rt->spawn_detached(remote_slice(shards[k], shards[0], done, delay));
    co_await slice(shards[0], delay);
    for (size_t k = 1; k < shards.size(); ++k) co_await done.recv();
    // The MSG_RING hand-offs order every shard's writes before these reads.
    std::string error;
    for (auto& sh : shards)
      if (error = verify(sh.cache, kTasks, sh.keys); !error.empty()) break;
    it.done(error);
  }
}

// The worker waits on `p`, which outlives every shard thread; a failed iteration is its exception.
ipcrt::task<void> report(std::vector<Shard>& shards, std::chrono::microseconds delay, Iterations& it,
                         std::promise<void>& p) {
  try {
    co_await coordinate(shards, delay, it);
    p.set_value();
  } catch (...) {
    p.set_exception(std::current_exception());
  }
}

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "sharded",
    .help = "ours, the reference's BM_SeastarShardedCacheParallel pattern: one ipcrt runtime per "
            "--cpus CPU (pinned, at most 10), keys partitioned across them (hello<i> on shard "
            "i mod N); every task runs calc -> sleep_for timer -> calc on each shard's own keys, "
            "no lock; shard 0 starts and collects the others over MSG_RING and verifies the merge. "
            "The calc is always the lean one over the shard's own keys (the reference's calc walks "
            "all 10 keys, which no shard owns), so there is no calc parameter; delay_kind is timer "
            "only: a blocking delay would serialise a shard's 1000 waits",
    .params = {delay_param(),
               delay_kind_param({"timer"}),
               {.name = "idle_poll_us",
                .type = ParamType::Int,
                .def = "1000",
                .help = "how long an idle shard polls its ring before it sleeps (0 = sleep at once); "
                        "polling keeps the pinned CPU across the hand-offs between iterations "
                        "(1000: covers the harness's gap between iterations here; 0/200/1000 gave "
                        "0.79/0.67/0.60x calc_only at load 1)",
                .min = 0,
                .max = 100'000}},
    .workload =
        [](Session& s) {
          const auto delay = std::chrono::microseconds(s.params().i64("delay_us"));
          const auto idle_poll = unsigned(s.params().i64("idle_poll_us"));
          std::vector<int> cpus = s.options().cpus;
          if (cpus.empty()) cpus = allowed_cpus();
          const size_t n = std::clamp<size_t>(cpus.size(), 1, kKeys);
          std::vector<Shard> shards(n);
          for (int i = 0; i < kKeys; ++i) shards[size_t(i) % n].keys.push_back(keys()[size_t(i)]);

          std::latch started(ptrdiff_t(n) + 1);
          std::vector<std::string> setup_error(n);
          for (size_t k = 0; k < n; ++k)
            shards[k].thread = std::thread([&, k] {
              try {
                pin_current_thread(cpus[k]);
              } catch (const std::exception& e) {
                setup_error[k] = e.what();
              }
              ipcrt::runtime rt(ipcrt::options().idle_poll_us(idle_poll));
              shards[k].rt = &rt;
              started.arrive_and_wait();
              rt.run();
            });
          started.arrive_and_wait();
          struct Joiner {
            std::vector<Shard>& shards;
            ~Joiner() {
              for (auto& sh : shards) sh.rt->stop();
              for (auto& sh : shards) sh.thread.join();
            }
          } joiner{shards};
          for (auto& e : setup_error)
            if (!e.empty()) throw std::runtime_error("cachecalc/sharded: " + e);

          run_worker(s, [&](Worker& w) {
            Iterations it(w);
            std::promise<void> p;
            auto f = p.get_future();
            w.ready();
            shards[0].rt->spawn_detached(report(shards, delay, it, p));
            f.get();
          });
          s.record().extra["shards"] = n;
        },
});

}  // namespace
}  // namespace ipclab::cachecalc
#endif
