// Timers: sleep_for ordering and duration, linked timeouts on operations.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <vector>

#include "ipcrt/ipcrt.hpp"

using namespace ipcrt;
using namespace std::chrono_literals;
using clk = std::chrono::steady_clock;

TEST(timer, sleep_for_waits_at_least) {
  auto main_task = []() -> task<void> {
    const auto t0 = clk::now();
    EXPECT_EQ(co_await sleep_for(20ms), 0);
    EXPECT_GE(clk::now() - t0, 20ms);
  };
  sync_wait(main_task());
}

TEST(timer, sleeps_fire_in_deadline_order) {
  std::vector<int> order;
  auto sleeper = [&](int ms) -> task<void> {
    co_await sleep_for(std::chrono::milliseconds(ms));
    order.push_back(ms);
  };
  auto main_task = [&]() -> task<void> {
    auto a = spawn(sleeper(30));
    auto b = spawn(sleeper(10));
    auto c = spawn(sleeper(20));
    co_await a;
    co_await b;
    co_await c;
  };
  sync_wait(main_task());
  EXPECT_EQ(order, (std::vector<int>{10, 20, 30}));
}

TEST(timer, zero_sleep_completes) {
  auto main_task = []() -> task<void> {
    for (int i = 0; i < 100; ++i) EXPECT_EQ(co_await sleep_for(0ns), 0);
  };
  sync_wait(main_task());
}

TEST(timer, linked_timeout_cancels_blocked_read) {
  if (!features::get().link_timeout) GTEST_SKIP() << "IORING_OP_LINK_TIMEOUT not supported";
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  auto main_task = [&]() -> task<void> {
    char buf[8];
    const auto t0 = clk::now();
    int r = co_await async_read(p[0], buf, sizeof buf, -1).timeout(20ms);
    EXPECT_EQ(r, -ECANCELED);
    EXPECT_GE(clk::now() - t0, 15ms);
    // A read that completes in time is unaffected by its deadline.
    EXPECT_EQ(write(p[1], "hi", 2), 2);
    r = co_await with_timeout(async_read(p[0], buf, sizeof buf, -1), 1s);
    EXPECT_EQ(r, 2);
  };
  sync_wait(main_task());
  close(p[0]);
  close(p[1]);
}

TEST(timer, sleep_until_past_deadline_returns_immediately) {
  auto main_task = []() -> task<void> {
    const auto t0 = clk::now();
    EXPECT_EQ(co_await sleep_until(clk::now() - 1s), 0);
    EXPECT_LT(clk::now() - t0, 500ms);
  };
  sync_wait(main_task());
}
