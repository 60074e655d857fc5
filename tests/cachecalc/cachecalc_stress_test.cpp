// cachecalc, concurrent: a racy 8-thread variant the verification must catch, and one verified
// iteration of every multi-threaded variant (built into the ThreadSanitizer binary too).
#include <gtest/gtest.h>

#include <mutex>
#include <thread>
#include <vector>

#include "mechanisms/cachecalc/workload.hpp"
#include "run_variant.hpp"

namespace ipclab::cachecalc {
namespace {

// Racy on purpose, yet free of data races: each access holds the lock, but a calc's read and
// its write are two critical sections with the delay between them, so updates get lost.
TEST(CachecalcStress, CatchesLostUpdatesOfEightThreadsWithASplitLock) {
  Cache c = fresh_cache();
  std::mutex m;
  std::vector<std::thread> threads;
  for (int w = 0; w < kConcurrency; ++w)
    threads.emplace_back([&, w] {
      for (int t = w; t < kTasks; t += kConcurrency) {
        std::vector<int64_t> seen;
        {
          std::lock_guard g(m);
          for (const auto& k : keys()) seen.push_back(parse_value(c[k]));
        }
        sleep_delay(8);
        std::lock_guard g(m);
        for (size_t i = 0; i < seen.size(); ++i) c[keys()[i]] = std::to_string(seen[i] + 2);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_NE(verify(c), "");
}

TEST(CachecalcStress, StdMutexVerifies) { testing::expect_verified("std_mutex"); }
TEST(CachecalcStress, StdAsyncVerifies) { testing::expect_verified("std_async"); }
TEST(CachecalcStress, ThreadpoolVerifies) { testing::expect_verified("threadpool"); }
TEST(CachecalcStress, ThreadpoolVerifiesWithAPoolPerRunAndSleep) {
  testing::expect_verified("threadpool", "8", {{"pool", "per_run"}, {"delay_kind", "sleep"}});
}
TEST(CachecalcStress, StdAsyncVerifiesWithTheLeanCalc) {
  testing::expect_verified("std_async", "8", {{"calc", "lean"}});
}
TEST(CachecalcStress, StdMutexVerifiesWithSleep) {
  testing::expect_verified("std_mutex", "8", {{"delay_kind", "sleep"}});
}
TEST(CachecalcStress, AsioThreadpoolStrandVerifiesWithDevzero) {
  testing::expect_verified("asio_threadpool_strand", "8", {{"delay_kind", "devzero"}});
}
TEST(CachecalcStress, AsioCoroutineVerifiesWithSleepAndTheLeanCalc) {
  testing::expect_verified("asio_coroutine", "8", {{"delay_kind", "sleep"}, {"calc", "lean"}});
}
TEST(CachecalcStress, AsioThreadpoolStrandVerifies) { testing::expect_verified("asio_threadpool_strand"); }
TEST(CachecalcStress, AsioCoroutineVerifies) { testing::expect_verified("asio_coroutine"); }
TEST(CachecalcStress, AsioCoroutineStrandVerifies) { testing::expect_verified("asio_coroutine_strand"); }
TEST(CachecalcStress, ShardedVerifies) { testing::expect_verified("sharded"); }
TEST(CachecalcStress, ShardedVerifiesAtTheLongDelay) { testing::expect_verified("sharded", "64"); }

}  // namespace
}  // namespace ipclab::cachecalc
