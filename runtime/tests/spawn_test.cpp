// spawn / join / detach: ordering, results, detached completion and frame reuse.
#include <gtest/gtest.h>

#include <vector>

#include "ipcrt/ipcrt.hpp"

using namespace ipcrt;

namespace {

task<int> square(int x) {
  co_await yield();
  co_return x* x;
}

}  // namespace

TEST(spawn, join_returns_result) {
  auto main_task = []() -> task<int> {
    auto h = spawn(square(9));
    co_return co_await h;
  };
  EXPECT_EQ(sync_wait(main_task()), 81);
}

TEST(spawn, join_after_completion) {
  auto main_task = []() -> task<int> {
    auto h = spawn([]() -> task<int> { co_return 5; }());
    for (int i = 0; i < 3; ++i) co_await yield();
    EXPECT_TRUE(h.done());
    co_return co_await h;
  };
  EXPECT_EQ(sync_wait(main_task()), 5);
}

TEST(spawn, many_tasks_join_in_order) {
  auto main_task = []() -> task<long> {
    std::vector<join_handle<int>> hs;
    for (int i = 0; i < 1000; ++i) hs.push_back(spawn(square(i)));
    long sum = 0;
    for (auto& h : hs) sum += co_await h;
    co_return sum;
  };
  long expect = 0;
  for (long i = 0; i < 1000; ++i) expect += i * i;
  EXPECT_EQ(sync_wait(main_task()), expect);
}

TEST(spawn, detached_task_runs_to_completion) {
  int count = 0;
  auto worker = [](int* c) -> task<void> {
    co_await yield();
    ++*c;
  };
  auto main_task = [&]() -> task<void> {
    for (int i = 0; i < 10; ++i) spawn(worker(&count)).detach();
    {
      auto dropped = spawn(worker(&count));  // dropping the handle detaches too
    }
    for (int i = 0; i < 5; ++i) co_await yield();
  };
  sync_wait(main_task());
  EXPECT_EQ(count, 11);
}

struct tracker {
  int* live;
  explicit tracker(int* l) : live(l) { ++*live; }
  ~tracker() { --*live; }
};

task<void> sleep_forever(int* live) {
  tracker t(live);
  for (;;) co_await sleep_for(std::chrono::hours(1));
}

task<void> spawn_sleepers(int* live) {
  for (int i = 0; i < 4; ++i) spawn(sleep_forever(live)).detach();
  co_await yield();
  co_await yield();
}

TEST(spawn, runtime_destroys_unfinished_detached_tasks) {
  int live = 0;
  {
    runtime rt;
    rt.block_on(spawn_sleepers(&live));
    EXPECT_EQ(live, 4);
  }
  EXPECT_EQ(live, 0);
}

task<void> join_forever(int* live) {
  auto inner = spawn(sleep_forever(live));
  co_await inner;
}

task<void> spawn_joiners(int* live) {
  // Joiners and joinees are interleaved in the runtime's list, in both orders.
  auto first = spawn(sleep_forever(live));
  spawn(join_forever(live)).detach();
  spawn(join_forever(live)).detach();
  first.detach();
  co_await yield();
  co_await yield();
}

TEST(spawn, runtime_teardown_with_joined_unfinished_tasks) {
  int live = 0;
  {
    runtime rt;
    rt.block_on(spawn_joiners(&live));
    EXPECT_EQ(live, 3);
  }
  EXPECT_EQ(live, 0);
}

TEST(spawn, join_rethrows) {
  auto main_task = []() -> task<bool> {
    auto h = spawn([]() -> task<int> {
      throw std::logic_error("x");
      co_return 1;
    }());
    try {
      co_await h;
    } catch (const std::logic_error&) {
      co_return true;
    }
    co_return false;
  };
  EXPECT_TRUE(sync_wait(main_task()));
}
