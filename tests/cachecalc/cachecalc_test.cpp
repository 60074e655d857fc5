// cachecalc: the calc and its verification, a racy variant the verification must catch, and one
// verified iteration of every single-threaded variant.
#include <gtest/gtest.h>

#include <vector>

#include "mechanisms/cachecalc/workload.hpp"
#include "run_variant.hpp"

#if __has_include(<ipcrt/ipcrt.hpp>)
#include <ipcrt/ipcrt.hpp>
#endif

namespace ipclab::cachecalc {
namespace {

TEST(CachecalcCalc, EmptyCountsAsTenThousandAndEachCalcAddsOne) {
  Cache c = fresh_cache();
  ASSERT_EQ(c.size(), size_t(kKeys));
  calc(c);
  for (const auto& k : keys()) EXPECT_EQ(c.at(k), "10001");
  EXPECT_EQ(keys().front(), "hello0");
  EXPECT_EQ(keys().back(), "hello9");
}

TEST(CachecalcVerify, AcceptsTwoCalcsPerTask) {
  Cache c = fresh_cache();
  for (int t = 0; t < kTasks; ++t) {
    calc(c);
    calc(c);
  }
  EXPECT_EQ(verify(c), "");
  EXPECT_EQ(c.at("hello7"), "12000");
}

TEST(CachecalcVerify, RejectsAWrongValueMissingKeyOrGarbage) {
  Cache c = fresh_cache();
  for (int t = 0; t < 2 * kTasks; ++t) calc(c);
  Cache wrong = c;
  wrong["hello3"] = "11999";
  EXPECT_NE(verify(wrong).find("hello3"), std::string::npos);
  Cache missing = c;
  missing.erase("hello9");
  EXPECT_NE(verify(missing), "");
  Cache garbage = c;
  garbage["hello0"] = "12000x";
  EXPECT_NE(verify(garbage), "");
}

TEST(CachecalcVerify, ChecksOnlyTheSubsetOfAShard) {
  std::vector<std::string> mine{"hello1", "hello4"};
  Cache c = fresh_cache(mine);
  for (int t = 0; t < 2 * kTasks; ++t) calc(c, mine);
  EXPECT_EQ(verify(c, kTasks, mine), "");
  EXPECT_NE(verify(c), "");  // the other keys are not there
}

#if __has_include(<ipcrt/ipcrt.hpp>)
// Racy on purpose: the read-modify-write of each calc spans the delay, so the 1000 overlapped
// tasks read the same values and overwrite each other's updates (lost updates, no data race).
ipcrt::task<void> racy_task(Cache& c) {
  std::vector<int64_t> seen;
  for (const auto& k : keys()) seen.push_back(parse_value(c[k]));
  co_await ipcrt::sleep_for(std::chrono::microseconds(8));
  for (size_t i = 0; i < seen.size(); ++i) c[keys()[i]] = std::to_string(seen[i] + 2);
}

TEST(CachecalcVerify, CatchesLostUpdatesOfARacyRuntimeVariant) {
  ipcrt::runtime rt;
  Cache c = fresh_cache();
  auto body = [&c]() -> ipcrt::task<void> {
    std::vector<ipcrt::join_handle<void>> hs;
    for (int t = 0; t < kTasks; ++t) hs.push_back(ipcrt::spawn(racy_task(c)));
    for (auto& h : hs) co_await h;
  };
  rt.block_on(body());
  const std::string err = verify(c);
  EXPECT_NE(err, "");
  EXPECT_NE(err.find("not serialised"), std::string::npos) << err;
}
#endif

TEST(CachecalcVariants, EveryVariantIsRegisteredWithHelp) {
  for (const char* n :
       {"sleep", "sleep_devzero", "calc_only", "serial", "std_mutex", "std_async", "threadpool"}) {
    const Mechanism* m = testing::find_variant(n);
    ASSERT_NE(m, nullptr) << n;
    EXPECT_FALSE(m->help.empty());
  }
  EXPECT_NE(Registry::get().suite("cachecalc"), nullptr);
}

TEST(CachecalcVariants, SleepRunsOneDelay) { testing::expect_verified("sleep"); }
TEST(CachecalcVariants, SleepDevzeroRunsOneDelay) { testing::expect_verified("sleep_devzero"); }
TEST(CachecalcVariants, CalcOnlyVerifies) { testing::expect_verified("calc_only"); }
TEST(CachecalcVariants, SerialVerifies) { testing::expect_verified("serial"); }
TEST(CachecalcVariants, AsioIoContextVerifies) { testing::expect_verified("asio_io_context", "64"); }
TEST(CachecalcVariants, IpcrtVerifies) { testing::expect_verified("ipcrt", "64"); }

}  // namespace
}  // namespace ipclab::cachecalc
