// Cancellation and lifetime: a cancelled or destroyed task with an operation in flight leaks no
// op state and the kernel never writes into its freed frame (run this under ASan).
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>

#include "helpers.hpp"
#include "ipcrt/ipcrt.hpp"

using namespace ipcrt;
using namespace std::chrono_literals;

TEST(cancel, cancel_task_blocked_in_recv) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  auto main_task = [&]() -> task<void> {
    auto h = spawn([](int fd) -> task<int> {
      char buf[64];
      int r = co_await async_recv(fd, buf, sizeof buf);
      EXPECT_EQ(r, -ECANCELED);
      // Once cancelled, later operations fail fast instead of blocking.
      int r2 = co_await async_recv(fd, buf, sizeof buf);
      co_return r2;
    }(sv[0]));
    co_await yield();
    co_await yield();
    h.cancel();
    EXPECT_EQ(co_await h, -ECANCELED);
    EXPECT_EQ(runtime::current()->in_flight(), 0u);
  };
  sync_wait(main_task());
  close(sv[0]);
  close(sv[1]);
}

TEST(cancel, cancel_long_sleep_returns_promptly) {
  auto main_task = []() -> task<void> {
    auto h = spawn([]() -> task<int> { co_return co_await sleep_for(1h); }());
    co_await sleep_for(1ms);
    const auto t0 = std::chrono::steady_clock::now();
    h.cancel();
    EXPECT_EQ(co_await h, -ECANCELED);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  };
  sync_wait(main_task());
}

namespace {
task<int> sleep_long() { co_return co_await sleep_for(1h); }
task<int> outer_sleep() { co_return co_await sleep_long(); }
}  // namespace

TEST(cancel, cancel_nested_task_op) {
  auto main_task = []() -> task<void> {
    auto h = spawn(outer_sleep());
    co_await yield();
    h.cancel();
    EXPECT_EQ(co_await h, -ECANCELED);
  };
  sync_wait(main_task());
}

TEST(cancel, destroyed_task_with_read_in_flight_never_gets_written) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  {
    runtime rt;
    rt.block_on([](int fd) -> task<void> {
      spawn([](int f) -> task<void> {
        char frame_buf[256];  // lives in the frame the runtime is about to free
        co_await async_read(f, frame_buf, sizeof frame_buf, -1);
        ADD_FAILURE() << "read must not complete into a destroyed task";
      }(fd))
          .detach();
      co_await yield();
      co_await async_nop();  // make sure the read has been submitted
    }(p[0]));
    EXPECT_EQ(rt.in_flight(), 1u);
  }  // runtime destroys the frame: the read is cancelled and its CQE awaited first
  char junk[256];
  std::memset(junk, 0xee, sizeof junk);
  EXPECT_EQ(write(p[1], junk, sizeof junk), ssize_t(sizeof junk));
  EXPECT_EQ(read(p[0], junk, sizeof junk), ssize_t(sizeof junk));  // data is still in the pipe
  close(p[0]);
  close(p[1]);
}

TEST(cancel, abandoned_timeout_state_returns_to_pool) {
  runtime rt;
  for (int round = 0; round < 200; ++round) {
    rt.block_on([]() -> task<void> {
      auto h = spawn([]() -> task<void> { co_await sleep_for(1h); }());
      co_await yield();
      h.cancel();
      co_await h;
    }());
  }
  EXPECT_EQ(rt.in_flight(), 0u);
}

TEST(cancel, linked_timeout_then_reuse_buffer) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  runtime rt;
  auto body = [&]() -> task<void> {
    for (int i = 0; i < 50; ++i) {
      char buf[32];
      EXPECT_EQ(co_await async_recv(sv[0], buf, sizeof buf).timeout(100us), -ECANCELED);
    }
    EXPECT_EQ(write(sv[1], "x", 1), 1);
    char buf[4];
    EXPECT_EQ(co_await async_recv(sv[0], buf, sizeof buf), 1);
  };
  rt.block_on(body());
  EXPECT_EQ(rt.in_flight(), 0u);
  close(sv[0]);
  close(sv[1]);
}

TEST(cancel, runtime_teardown_with_many_pending_ops) {
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  const int fds_before = ipcrt_test::open_fd_count();
  {
    runtime rt;
    auto body = [&]() -> task<void> {
      for (int i = 0; i < 100; ++i) {
        spawn([](int fd, int k) -> task<void> {
          char buf[128];
          if (k % 2)
            co_await async_recv(fd, buf, sizeof buf);
          else
            co_await sleep_for(1h);
        }(sv[0], i))
            .detach();
      }
      co_await async_nop();
    };
    rt.block_on(body());
  }
  EXPECT_EQ(ipcrt_test::open_fd_count(), fds_before);
  close(sv[0]);
  close(sv[1]);
}
