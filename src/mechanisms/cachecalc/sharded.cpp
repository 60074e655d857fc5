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

#include "core/clock.hpp"
#include "core/mechanism.hpp"
#include "core/placement.hpp"
#include "core/session.hpp"
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

ipcrt::task<void> task(Shard& sh, std::chrono::microseconds delay) {
  calc(sh.cache, sh.keys);
  co_await ipcrt::sleep_for(delay);
  calc(sh.cache, sh.keys);
}

// One shard's part of an iteration, on that shard's thread.
ipcrt::task<void> slice(Shard& sh, std::chrono::microseconds delay) {
  sh.cache = fresh_cache(sh.keys);
  std::vector<ipcrt::join_handle<void>> tasks;
  tasks.reserve(kTasks);
  for (int t = 0; t < kTasks; ++t) tasks.push_back(ipcrt::spawn(task(sh, delay)));
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

struct Outcome {
  uint64_t iterations = 0;
  std::string error;
};

ipcrt::task<Outcome> coordinate(std::vector<Shard>& shards, std::chrono::microseconds delay,
                                uint64_t end_ns);

// The measuring thread waits on `p`, which outlives every shard thread.
ipcrt::task<void> report(std::vector<Shard>& shards, std::chrono::microseconds delay,
                         uint64_t end_ns, std::promise<Outcome>& p) {
  p.set_value(co_await coordinate(shards, delay, end_ns));
}

// Runs verified iterations until `end_ns` (at least one), on shard 0.
ipcrt::task<Outcome> coordinate(std::vector<Shard>& shards, std::chrono::microseconds delay,
                                uint64_t end_ns) {
  Outcome out;
  ipcrt::channel<int> done(int(shards.size()));
  do {
    for (size_t k = 1; k < shards.size(); ++k)
      shards[k].rt->spawn_detached(remote_slice(shards[k], shards[0], done, delay));
    co_await slice(shards[0], delay);
    for (size_t k = 1; k < shards.size(); ++k) co_await done.recv();
    ++out.iterations;
    // The MSG_RING hand-offs order every shard's writes before these reads.
    for (auto& sh : shards)
      if (out.error = verify(sh.cache, kTasks, sh.keys); !out.error.empty()) co_return out;
  } while (now_ns() < end_ns);
  co_return out;
}

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "sharded",
    .help = "ours, the reference's BM_SeastarShardedCacheParallel pattern: one ipcrt runtime per "
            "--cpus CPU (pinned, at most 10), keys partitioned across them (hello<i> on shard "
            "i mod N); every task runs calc -> sleep_for timer -> calc on each shard's own keys, "
            "no lock; shard 0 starts and collects the others over MSG_RING and verifies the merge",
    .params = {delay_param(),
               {.name = "idle_poll_us", .type = ParamType::Int, .def = "1000",
                .help = "how long an idle shard polls its ring before it sleeps (0 = sleep at once); "
                        "polling keeps the pinned CPU across the hand-offs between iterations "
                        "(1000: covers the harness's gap between iterations here; 0/200/1000 gave "
                        "0.79/0.67/0.60x calc_only at load 1)",
                .min = 0, .max = 100'000}},
    .workload = [](Session& s) {
      const auto delay = std::chrono::microseconds(s.params().i64("delay_us"));
      const auto idle_poll = unsigned(s.params().i64("idle_poll_us"));
      std::vector<int> cpus = s.options().cpus;
      if (cpus.empty()) cpus = allowed_cpus();
      const size_t n = std::clamp<size_t>(cpus.size(), 1, kKeys);
      std::vector<Shard> shards(n);
      for (int i = 0; i < kKeys; ++i) shards[size_t(i) % n].keys.push_back(keys()[size_t(i)]);

      std::latch started(ptrdiff_t(n) + 1);
      std::promise<Outcome> passes[2];  // warm-up, measured
      int pass = 0;
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

      const auto& o = s.options();
      bool warm = o.warmup_s > 0;
      Outcome result;
      s.measure([&] {
        const bool measured = !warm;
        warm = false;
        const uint64_t end = now_ns() + uint64_t((measured ? o.duration_s : o.warmup_s) * 1e9);
        std::promise<Outcome>& p = passes[pass++];
        auto f = p.get_future();
        shards[0].rt->spawn_detached(report(shards, delay, end, p));
        Outcome got = f.get();
        if (measured) result.iterations = got.iterations;
        if (result.error.empty()) result.error = got.error;
      });
      Record& r = s.record();
      r.ops = result.iterations;
      r.extra["tasks_per_iteration"] = kTasks;
      r.extra["shards"] = n;
      if (!result.error.empty()) {
        ++r.integrity.corrupt;
        r.fail(result.error);
      }
    },
});

}  // namespace
}  // namespace ipclab::cachecalc
#endif
