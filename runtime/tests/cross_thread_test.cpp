// Cross-thread: post and spawn onto another runtime (MSG_RING, or eventfd from a plain thread),
// and mt_channel between runtimes on two threads. Run under TSan.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "ipcrt/ipcrt.hpp"

using namespace ipcrt;

namespace {

// A runtime running on its own thread until stop().
class runtime_thread {
 public:
  explicit runtime_thread(const options& opt = options()) {
    std::promise<runtime*> ready;
    auto fut = ready.get_future();
    th_ = std::thread([&ready, opt] {
      runtime rt(opt);
      ready.set_value(&rt);
      rt.run();
    });
    rt_ = fut.get();
  }
  ~runtime_thread() {
    rt_->stop();
    th_.join();
  }
  runtime& get() { return *rt_; }

 private:
  std::thread th_;
  runtime* rt_;
};

}  // namespace

TEST(cross_thread, post_from_plain_thread_uses_eventfd) {
  runtime_thread b;
  std::promise<std::thread::id> ran_on;
  b.get().post([&] { ran_on.set_value(std::this_thread::get_id()); });
  EXPECT_NE(ran_on.get_future().get(), std::this_thread::get_id());
}

TEST(cross_thread, post_from_runtime_uses_msg_ring) {
  if (!features::get().msg_ring)
    GTEST_SKIP() << "IORING_OP_MSG_RING not supported; eventfd path covered elsewhere";
  runtime_thread b;
  std::atomic<int> hits{0};
  runtime a;
  auto body = [&]() -> task<void> {
    for (int i = 0; i < 1000; ++i) b.get().post([&] { hits.fetch_add(1, std::memory_order_relaxed); });
    while (hits.load(std::memory_order_relaxed) < 1000) co_await sleep_for(std::chrono::microseconds(100));
  };
  a.block_on(body());
  EXPECT_EQ(hits.load(), 1000);
}

// A shard-style runtime that polls before it sleeps still takes posts, spawns and timers.
TEST(cross_thread, idle_polling_runtime_takes_posts_spawns_and_timers) {
  runtime_thread b(options().idle_poll_us(200));
  std::promise<int> result;
  b.get().spawn_detached([](std::promise<int>& out) -> task<void> {
    co_await sleep_for(std::chrono::microseconds(50));  // shorter than the poll: fired while polling
    co_await sleep_for(std::chrono::milliseconds(2));   // longer: polls, then sleeps in the kernel
    out.set_value(7);
  }(result));
  EXPECT_EQ(result.get_future().get(), 7);
  runtime a;
  std::atomic<int> hits{0};
  a.block_on([&]() -> task<void> {
    for (int round = 0; round < 50; ++round) {
      b.get().post([&] { hits.fetch_add(1, std::memory_order_relaxed); });
      while (hits.load(std::memory_order_relaxed) <= round)
        co_await sleep_for(std::chrono::microseconds(round % 2 ? 10 : 500));
    }
  }());
  EXPECT_EQ(hits.load(), 50);
}

TEST(cross_thread, spawn_detached_on_other_runtime) {
  runtime_thread b;
  std::promise<int> result;
  b.get().spawn_detached([](std::promise<int>& out) -> task<void> {
    co_await sleep_for(std::chrono::milliseconds(1));
    int n = co_await async_nop();
    out.set_value(n + 5);
  }(result));
  EXPECT_EQ(result.get_future().get(), 5);
}

TEST(cross_thread, mt_channel_between_runtimes) {
  for (std::size_t cap : {std::size_t(0), std::size_t(8)}) {
    mt_channel<int> ch(cap);
    std::promise<long> sum;
    runtime_thread b;
    b.get().spawn_detached([](mt_channel<int>& c, std::promise<long>& out) -> task<void> {
      long s = 0;
      while (auto v = co_await c.recv()) s += *v;
      out.set_value(s);
    }(ch, sum));
    runtime a;
    a.block_on([](mt_channel<int>& c) -> task<void> {
      for (int i = 1; i <= 20000; ++i) EXPECT_TRUE(co_await c.send(i));
      c.close();
    }(ch));
    EXPECT_EQ(sum.get_future().get(), 20000L * 20001 / 2) << "capacity " << cap;
  }
}

TEST(cross_thread, mt_channel_ping_pong) {
  mt_channel<int> ping(0), pong(0);
  runtime_thread b;
  b.get().spawn_detached([](mt_channel<int>& in, mt_channel<int>& out) -> task<void> {
    while (auto v = co_await in.recv()) co_await out.send(*v + 1);
    out.close();
  }(ping, pong));
  runtime a;
  const int last = a.block_on([](mt_channel<int>& out, mt_channel<int>& in) -> task<int> {
    int v = 0;
    for (int i = 0; i < 2000; ++i) {
      co_await out.send(v);
      v = *co_await in.recv();
    }
    out.close();
    co_return v;
  }(ping, pong));
  EXPECT_EQ(last, 2000);
}

TEST(cross_thread, many_threads_post_concurrently) {
  runtime_thread b;
  std::atomic<int> hits{0};
  std::vector<std::thread> ths;
  for (int t = 0; t < 4; ++t)
    ths.emplace_back([&] {
      for (int i = 0; i < 500; ++i) b.get().post([&] { hits.fetch_add(1, std::memory_order_relaxed); });
    });
  for (auto& t : ths) t.join();
  std::promise<void> done;
  b.get().post([&] { done.set_value(); });
  done.get_future().wait();
  EXPECT_EQ(hits.load(), 2000);
}
