// Registered files and fixed buffers: fixed-file ops, read_fixed/write_fixed, close_direct.
#include <gtest/gtest.h>

#include <cstring>

#include "helpers.hpp"
#include "ipcrt/ipcrt.hpp"

using namespace ipcrt;

TEST(fixed, registered_file_table_from_options) {
  if (!features::get().registered_files) GTEST_SKIP() << "sparse registered files not supported";
  int fd = ipcrt_test::temp_file();
  ASSERT_GE(fd, 0);
  runtime rt(options().registered_files(4));
  int fds[1] = {fd};
  ASSERT_EQ(rt.update_files(2, fds), 1);
  rt.block_on([]() -> task<void> {
    const char msg[] = "fixed-file";
    EXPECT_EQ(co_await async_write(fixed_file{2}, msg, sizeof msg, 0), int(sizeof msg));
    char buf[32] = {};
    EXPECT_EQ(co_await async_read(fixed_file{2}, buf, sizeof buf, 0), int(sizeof msg));
    EXPECT_STREQ(buf, msg);
    EXPECT_EQ(co_await async_fsync(fixed_file{2}), 0);
    EXPECT_EQ(co_await async_close(fixed_file{2}), 0);
    EXPECT_LT(co_await async_read(fixed_file{2}, buf, sizeof buf, 0), 0);  // slot now empty
  }());
  close(fd);
}

TEST(fixed, register_files_replaces_table) {
  if (!features::get().registered_files) GTEST_SKIP() << "registered files not supported";
  int fd = ipcrt_test::temp_file();
  ASSERT_GE(fd, 0);
  runtime rt;
  int fds[2] = {fd, fd};
  ASSERT_EQ(rt.register_files(fds), 0);
  rt.block_on([]() -> task<void> {
    EXPECT_EQ(co_await async_write(fixed_file{1}, "ab", 2, 0), 2);
    char buf[2];
    EXPECT_EQ(co_await async_read(fixed_file{0}, buf, 2, 0), 2);
    EXPECT_EQ(buf[1], 'b');
  }());
  close(fd);
}

TEST(fixed, read_write_fixed_buffers) {
  if (!features::get().fixed_buffers) GTEST_SKIP() << "fixed buffers not supported";
  int fd = ipcrt_test::temp_file();
  ASSERT_GE(fd, 0);
  runtime rt(options().fixed_buffers(2, 8192).registered_files(1));
  int fds[1] = {fd};
  ASSERT_EQ(rt.update_files(0, fds), 1);
  rt.block_on([](runtime& r) -> task<void> {
    auto out = r.fixed_buffer(0);
    auto in = r.fixed_buffer(1);
    EXPECT_EQ(out.size(), 8192u);
    std::memset(out.data(), 0x5a, out.size());
    EXPECT_EQ(co_await async_write_fixed(fixed_file{0}, out.data(), 8192, 0, 0), 8192);
    EXPECT_EQ(co_await async_read_fixed(fixed_file{0}, in.data(), 8192, 0, 1), 8192);
    EXPECT_EQ(std::memcmp(out.data(), in.data(), 8192), 0);
    // Plain fd with a fixed buffer works too.
    EXPECT_EQ(co_await async_read_fixed(fixed_file{0}, in.data() + 100, 100, 0, 1), 100);
  }(rt));
  close(fd);
}
