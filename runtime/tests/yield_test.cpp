// yield: FIFO round-robin order among ready tasks; a lone task's yield goes on at once, and still
// lets I/O completions and timers in.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "ipcrt/ipcrt.hpp"

using namespace ipcrt;

TEST(yield, round_robin_order) {
  std::vector<int> order;
  auto worker = [&](int id) -> task<void> {
    for (int i = 0; i < 3; ++i) {
      order.push_back(id);
      co_await yield();
    }
  };
  auto main_task = [&]() -> task<void> {
    auto a = spawn(worker(0));
    auto b = spawn(worker(1));
    auto c = spawn(worker(2));
    co_await a;
    co_await b;
    co_await c;
  };
  sync_wait(main_task());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 1, 2}));
}

TEST(yield, many_yields_single_task) {
  auto main_task = []() -> task<int> {
    int n = 0;
    for (int i = 0; i < 100000; ++i) {
      co_await yield();
      ++n;
    }
    co_return n;
  };
  EXPECT_EQ(sync_wait(main_task()), 100000);
}

// A task that yields in a loop with nothing else ready takes the fast path, and still lets a
// sleeping task's timer and an I/O completion in: both end the loop.
TEST(yield, a_lone_yielding_task_still_lets_timers_and_io_in) {
  bool slept = false, nop_done = false;
  auto sleeper = [&]() -> task<void> {
    co_await sleep_for(std::chrono::milliseconds(2));
    slept = true;
  };
  auto io = [&]() -> task<void> {
    co_await async_nop();
    nop_done = true;
  };
  auto main_task = [&]() -> task<long> {
    auto a = spawn(sleeper());
    auto b = spawn(io());
    long yields = 0;
    while (!slept || !nop_done) {
      co_await yield();
      ++yields;
    }
    co_await a;
    co_await b;
    co_return yields;
  };
  EXPECT_GT(sync_wait(main_task()), 0);
  EXPECT_TRUE(slept);
  EXPECT_TRUE(nop_done);
}

// With another task ready, yield still goes through the queue: the other task runs in between.
TEST(yield, another_ready_task_runs_between_two_yields) {
  std::vector<int> order;
  auto other = [&]() -> task<void> {
    order.push_back(1);
    co_return;
  };
  auto main_task = [&]() -> task<void> {
    order.push_back(0);
    auto h = spawn(other());
    co_await yield();
    order.push_back(2);
    co_await yield();  // nothing else ready: goes on at once
    order.push_back(3);
    co_await h;
  };
  sync_wait(main_task());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

// With no timer armed the fast path asks the ring whether anything is due (ring::quiet) instead of
// counting a budget: a read that another thread completes later must still end the loop, through
// the flag the kernel raises for deferred completions (or the CQE itself).
TEST(yield, a_lone_yielding_task_sees_a_read_completed_by_another_thread) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  bool got = false;
  auto reader = [&]() -> task<void> {
    char c = 0;
    const int n = co_await async_read(fds[0], &c, 1, uint64_t(-1));
    got = n == 1 && c == 'x';
  };
  auto main_task = [&]() -> task<bool> {
    auto a = spawn(reader());
    co_await yield();  // the read is submitted and waits for data
    std::thread writer([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      EXPECT_EQ(write(fds[1], "x", 1), 1);
    });
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!got && std::chrono::steady_clock::now() < give_up) co_await yield();
    writer.join();
    if (!got) {  // unblock the read so the task can end, and fail
      EXPECT_EQ(write(fds[1], "y", 1), 1);
      co_await a;
      co_return false;
    }
    co_await a;
    co_return true;
  };
  EXPECT_TRUE(sync_wait(main_task()));
  close(fds[0]);
  close(fds[1]);
}
