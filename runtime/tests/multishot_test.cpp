// Multishot accept and multishot recv with a provided buffer ring (buf_ring over liburing 2.3).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "helpers.hpp"
#include "ipcrt/ipcrt.hpp"

using namespace ipcrt;

TEST(multishot, accept_many_connections_one_sqe) {
  if (!features::get().multishot_accept) GTEST_SKIP() << "multishot accept needs Linux 5.19";
  sockaddr_in addr;
  int lfd = ipcrt_test::listen_loopback(addr);
  ASSERT_GE(lfd, 0);
  std::vector<int> clients;
  for (int i = 0; i < 5; ++i) clients.push_back(ipcrt_test::connect_blocking(addr));
  auto main_task = [lfd]() -> task<int> {
    auto acc = async_accept_multishot(lfd);
    int got = 0;
    for (int i = 0; i < 5; ++i) {
      int fd = co_await acc.next();
      EXPECT_GE(fd, 0);
      if (fd >= 0) {
        ++got;
        co_await async_close(fd);
      }
    }
    EXPECT_TRUE(acc.active());
    acc.cancel();
    EXPECT_LT(co_await acc.next(), 0);  // the final CQE ends the stream
    EXPECT_FALSE(acc.active());
    co_return got;
  };
  EXPECT_EQ(sync_wait(main_task()), 5);
  for (int c : clients) close(c);
  close(lfd);
}

TEST(multishot, abandoned_accept_stream_closes_queued_fds) {
  if (!features::get().multishot_accept) GTEST_SKIP() << "multishot accept needs Linux 5.19";
  sockaddr_in addr;
  int lfd = ipcrt_test::listen_loopback(addr);
  ASSERT_GE(lfd, 0);
  const int before = ipcrt_test::open_fd_count();
  std::vector<int> clients;
  {
    runtime rt;
    auto body = [&]() -> task<void> {
      auto acc = async_accept_multishot(lfd);
      for (int i = 0; i < 3; ++i) clients.push_back(ipcrt_test::connect_blocking(addr));
      co_await sleep_for(std::chrono::milliseconds(20));  // let CQEs queue up unread
      co_await yield();
    };
    rt.block_on(body());
  }
  for (int c : clients) close(c);
  EXPECT_EQ(ipcrt_test::open_fd_count(), before);  // accepted-but-untaken fds were closed
  close(lfd);
}

TEST(multishot, recv_with_buffer_ring) {
  const auto& f = features::get();
  if (!f.recv_multishot || !f.buf_ring)
    GTEST_SKIP() << "multishot recv / provided buffer rings need Linux 6.0";
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  runtime rt;
  buf_ring br(rt, 7, 8, 64);
  auto main_task = [&]() -> task<std::string> {
    auto rs = async_recv_multishot(sv[0], br);
    std::string all;
    auto writer = spawn([](int fd) -> task<void> {
      for (int i = 0; i < 20; ++i) {
        std::string m = "msg" + std::to_string(i) + ";";
        co_await async_send(fd, m.data(), m.size());
        co_await yield();
      }
      shutdown(fd, SHUT_WR);
    }(sv[1]));
    for (;;) {
      recv_result r = co_await rs.next();
      if (r.res <= 0) {
        EXPECT_EQ(r.res, 0);  // EOF
        break;
      }
      auto d = r.buf.data();
      all.append(reinterpret_cast<const char*>(d.data()), d.size());
    }  // each provided_buffer goes back to the ring here
    co_await writer;
    co_return all;
  };
  std::string expect;
  for (int i = 0; i < 20; ++i) expect += "msg" + std::to_string(i) + ";";
  EXPECT_EQ(rt.block_on(main_task()), expect);
  close(sv[0]);
  close(sv[1]);
}

TEST(multishot, recv_reports_enobufs_when_ring_empty) {
  const auto& f = features::get();
  if (!f.recv_multishot || !f.buf_ring)
    GTEST_SKIP() << "multishot recv / provided buffer rings need Linux 6.0";
  int sv[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  runtime rt;
  buf_ring br(rt, 3, 2, 16);
  auto body = [&]() -> task<void> {
    auto rs = async_recv_multishot(sv[0], br);
    std::vector<provided_buffer> held;
    for (int i = 0; i < 3; ++i) {
      co_await async_send(sv[1], "0123456789abcdef", 16);
      recv_result r = co_await rs.next();
      if (r.res == -ENOBUFS) co_return;  // expected once both buffers are held
      EXPECT_EQ(r.res, 16);
      held.push_back(std::move(r.buf));
    }
    ADD_FAILURE() << "expected -ENOBUFS with every buffer held";
  };
  rt.block_on(body());
  close(sv[0]);
  close(sv[1]);
}
