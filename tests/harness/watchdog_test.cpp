// The stall watchdog names the side that is stuck, not the one that waits on it — also when the
// waiting side went quiet first (it blocked a moment before the stuck side's last operation), so
// that it alone is past the limit when the watchdog looks.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "core/base/clock.hpp"
#include "core/measure/watchdog.hpp"

namespace ipclab {
namespace {

struct WatchedSide {
  std::atomic<uint64_t> progress{0};
  std::atomic<pid_t> tid{0};
};

TEST(Watchdog, NamesTheBusySideWhenTheWaitingSideWentQuietFirst) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  WatchedSide waiter, spinner;
  std::atomic<bool> stop{false};
  // Waits (state S) in read() on a pipe nobody writes until the end: no progress from the start.
  std::thread w([&] {
    waiter.tid = gettid();
    char c;
    (void)!read(p[0], &c, 1);
  });
  // Runs (state R) and shows progress for its first 300 ms, then spins without any.
  std::thread s([&] {
    spinner.tid = gettid();
    const uint64_t quiet_from = now_ns() + 300'000'000;
    while (!stop.load(std::memory_order_relaxed))
      if (now_ns() < quiet_from) spinner.progress.fetch_add(1, std::memory_order_relaxed);
  });
  while (!waiter.tid || !spinner.tid) std::this_thread::yield();

  Watchdog wd(1.0);  // the limit: 1 s
  wd.watch("producer", 0, -1, waiter.tid, [&] { return waiter.progress.load(); });
  wd.watch("consumer", 0, -1, spinner.tid, [&] { return spinner.progress.load(); });
  std::string why;
  const uint64_t give_up = now_ns() + 5'000'000'000ull;
  while ((why = wd.check()).empty() && now_ns() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));

  stop = true;
  (void)!write(p[1], "x", 1);
  w.join();
  s.join();
  close(p[0]);
  close(p[1]);

  // The producer passed the limit ~300 ms before the consumer: the consumer is still named.
  ASSERT_FALSE(why.empty());
  EXPECT_NE(why.find("consumer 0 (thread"), std::string::npos) << why;
  EXPECT_NE(why.find("while not waiting on a peer"), std::string::npos) << why;
  EXPECT_EQ(why.find("producer"), std::string::npos) << why;
}

TEST(Watchdog, NamesEveryStalledSideWhenNoneIsBusy) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  std::atomic<pid_t> tid{0};
  std::thread w([&] {
    tid = gettid();
    char c;
    (void)!read(p[0], &c, 1);
  });
  while (!tid) std::this_thread::yield();
  Watchdog wd(1.0);
  wd.watch("client", 0, -1, tid, [] { return uint64_t(7); });
  std::string why;
  const uint64_t give_up = now_ns() + 5'000'000'000ull;
  while ((why = wd.check()).empty() && now_ns() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  (void)!write(p[1], "x", 1);
  w.join();
  close(p[0]);
  close(p[1]);
  EXPECT_NE(why.find("stalled: client 0 (thread"), std::string::npos) << why;
  EXPECT_EQ(why.find("while not waiting"), std::string::npos) << why;
}

}  // namespace
}  // namespace ipclab
