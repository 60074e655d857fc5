// task<T>: lazy start, co_await join of nested tasks, results and exceptions.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "ipcrt/ipcrt.hpp"

using namespace ipcrt;

namespace {

task<int> answer() { co_return 42; }

task<int> add(int a, int b) {
  int x = co_await answer();
  co_return a + b + x;
}

task<std::string> text() { co_return std::string(100, 'x'); }

task<void> thrower() {
  throw std::runtime_error("boom");
  co_return;
}

}  // namespace

TEST(task, lazy_until_awaited) {
  bool ran = false;
  auto make = [&]() -> task<void> {
    ran = true;
    co_return;
  };
  {
    auto t = make();
    EXPECT_FALSE(ran);
  }  // destroyed without running
  EXPECT_FALSE(ran);
  sync_wait(make());
  EXPECT_TRUE(ran);
}

TEST(task, nested_await_returns_value) {
  EXPECT_EQ(sync_wait(add(1, 2)), 45);
  EXPECT_EQ(sync_wait(text()).size(), 100u);
}

TEST(task, exception_propagates_through_await) {
  auto outer = []() -> task<int> {
    try {
      co_await thrower();
    } catch (const std::runtime_error& e) {
      co_return 7;
    }
    co_return 0;
  };
  EXPECT_EQ(sync_wait(outer()), 7);
  EXPECT_THROW(sync_wait(thrower()), std::runtime_error);
}

TEST(task, explicit_runtime_block_on) {
  runtime rt(options().entries(64));
  EXPECT_EQ(rt.block_on(answer()), 42);
  EXPECT_EQ(sync_wait(rt, add(0, 0)), 42);
  EXPECT_EQ(runtime::current(), &rt);
}
