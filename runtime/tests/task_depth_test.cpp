// task<T> nested deeper than the stack could hold without symmetric transfer. Compiled with -O2
// and without the sanitizer checks that stop GCC from making the transfer a tail call, in every
// preset (runtime/CMakeLists.txt).
#include <sys/resource.h>

#include <gtest/gtest.h>

#include "ipcrt/ipcrt.hpp"

using namespace ipcrt;

namespace {

task<int> deep(int n) {
  if (n == 0) co_return 0;
  co_return 1 + co_await deep(n - 1);
}

}  // namespace

// Without symmetric transfer each level's co_await would resume the child from inside the
// parent's resume, at least one call deeper per level, and a call takes at least 16 bytes (its
// return address, the stack kept 16-byte aligned by the x86-64 ABI): RLIMIT_STACK / 16 levels
// cannot fit. With the transfer compiled as a tail call every level runs on the same frame.
TEST(task, deep_nesting_uses_symmetric_transfer) {
  rlimit rl{};
  ASSERT_EQ(getrlimit(RLIMIT_STACK, &rl), 0);
  if (rl.rlim_cur == RLIM_INFINITY)
    GTEST_SKIP() << "RLIMIT_STACK is unlimited: no depth is sure to overflow without symmetric transfer";
  const int depth = int(rl.rlim_cur / 16) + 1;
  EXPECT_EQ(sync_wait(deep(depth)), depth);
}
