// yield: FIFO round-robin order among ready tasks.
#include <gtest/gtest.h>

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
