// Feature probe and ring setup fallback.
#include <gtest/gtest.h>

#include "ipcrt/ipcrt.hpp"

using namespace ipcrt;

TEST(features, probe_is_consistent) {
  const features& f = features::get();
  ASSERT_TRUE(f.io_uring) << "io_uring unavailable";
  if (f.defer_taskrun) EXPECT_TRUE(f.single_issuer);
  EXPECT_FALSE(f.describe().empty());
  EXPECT_EQ(&f, &features::get());
}

TEST(features, runtime_uses_best_setup_flags) {
  const features& f = features::get();
  runtime rt;
  const unsigned flags = rt.io().setup_flags();
  if (f.defer_taskrun)
    EXPECT_TRUE(flags & IORING_SETUP_DEFER_TASKRUN);
  else if (f.coop_taskrun)
    EXPECT_TRUE(flags & IORING_SETUP_COOP_TASKRUN);
}

TEST(features, fallback_without_defer_taskrun) {
  runtime rt(options().defer_taskrun(false).entries(32));
  EXPECT_FALSE(rt.io().setup_flags() & IORING_SETUP_DEFER_TASKRUN);
  EXPECT_EQ(rt.block_on([]() -> task<int> { co_return co_await async_nop(); }()), 0);
}

TEST(features, sqpoll_runtime) {
  if (!features::get().sqpoll) GTEST_SKIP() << "IORING_SETUP_SQPOLL not permitted";
  runtime rt(options().sqpoll(true, 50).entries(32));
  EXPECT_TRUE(rt.io().setup_flags() & IORING_SETUP_SQPOLL);
  EXPECT_EQ(rt.block_on([]() -> task<int> {
    int sum = 0;
    for (int i = 0; i < 100; ++i) sum += co_await async_nop();
    co_await sleep_for(std::chrono::milliseconds(1));
    co_return sum;
  }()),
            0);
}

TEST(features, one_runtime_per_thread) {
  runtime rt;
  EXPECT_THROW(runtime second, std::logic_error);
  EXPECT_EQ(runtime::current(), &rt);
}
