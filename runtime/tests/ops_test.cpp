// One test per op family: nop, read/write, openat/close/fsync, accept/connect, recv/send.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cstring>
#include <string>

#include "helpers.hpp"
#include "ipcrt/ipcrt.hpp"

using namespace ipcrt;

TEST(ops, nop_round_trip) {
  auto main_task = []() -> task<void> {
    for (int i = 0; i < 1000; ++i) EXPECT_EQ(co_await async_nop(), 0);
    EXPECT_EQ(runtime::current()->in_flight(), 0u);
  };
  sync_wait(main_task());
}

TEST(ops, read_write_file) {
  int fd = ipcrt_test::temp_file();
  ASSERT_GE(fd, 0);
  auto main_task = [fd]() -> task<void> {
    const char msg[] = "hello io_uring";
    EXPECT_EQ(co_await async_write(fd, msg, sizeof msg, 0), int(sizeof msg));
    EXPECT_EQ(co_await async_fsync(fd), 0);
    char buf[64] = {};
    EXPECT_EQ(co_await async_read(fd, buf, sizeof buf, 0), int(sizeof msg));
    EXPECT_STREQ(buf, msg);
    EXPECT_EQ(co_await async_read(fd, buf, 4, 6), 4);
    EXPECT_EQ(std::string(buf, 4), "io_u");
    EXPECT_EQ(co_await async_read(-1, buf, 4, 0), -EBADF);
  };
  sync_wait(main_task());
  close(fd);
}

TEST(ops, openat_close) {
  auto main_task = []() -> task<void> {
    int fd = co_await async_openat(AT_FDCWD, "/proc/self/stat", O_RDONLY);
    EXPECT_GE(fd, 0);
    char buf[16];
    EXPECT_GT(co_await async_read(fd, buf, sizeof buf, 0), 0);
    EXPECT_EQ(co_await async_close(fd), 0);
    EXPECT_EQ(co_await async_openat(AT_FDCWD, "/nonexistent/ipcrt", O_RDONLY), -ENOENT);
  };
  sync_wait(main_task());
}

TEST(ops, accept_connect_send_recv) {
  sockaddr_in addr;
  int lfd = ipcrt_test::listen_loopback(addr);
  ASSERT_GE(lfd, 0);
  auto main_task = [&]() -> task<void> {
    auto server = spawn([](int l) -> task<std::string> {
      sockaddr_in peer{};
      socklen_t len = sizeof peer;
      int c = co_await async_accept(l, reinterpret_cast<sockaddr*>(&peer), &len);
      EXPECT_GE(c, 0);
      EXPECT_EQ(peer.sin_family, AF_INET);
      char buf[32] = {};
      int n = co_await async_recv(c, buf, sizeof buf);
      EXPECT_EQ(co_await async_send(c, buf, n), n);
      co_await async_close(c);
      co_return std::string(buf, n);
    }(lfd));
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_EQ(co_await async_connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(co_await async_send(s, "ping", 4), 4);
    char buf[8] = {};
    EXPECT_EQ(co_await async_recv(s, buf, sizeof buf), 4);
    EXPECT_EQ(std::string(buf, 4), "ping");
    EXPECT_EQ(co_await async_recv(s, buf, sizeof buf), 0);  // server closed
    EXPECT_EQ(co_await server, "ping");
    co_await async_close(s);
  };
  sync_wait(main_task());
  close(lfd);
}

TEST(ops, concurrent_ops_batch_in_one_turn) {
  int fd = ipcrt_test::temp_file();
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 64 * 4096), 0);
  auto main_task = [fd]() -> task<void> {
    std::vector<join_handle<int>> hs;
    for (int i = 0; i < 64; ++i)
      hs.push_back(spawn([](int f, int i) -> task<int> {
        char buf[4096];
        std::memset(buf, i, sizeof buf);
        int w = co_await async_write(f, buf, sizeof buf, uint64_t(i) * 4096);
        char back[4096];
        int r = co_await async_read(f, back, sizeof back, uint64_t(i) * 4096);
        co_return (w == 4096 && r == 4096 && std::memcmp(buf, back, 4096) == 0) ? 1 : 0;
      }(fd, i)));
    int ok = 0;
    for (auto& h : hs) ok += co_await h;
    EXPECT_EQ(ok, 64);
  };
  sync_wait(main_task());
  close(fd);
}
