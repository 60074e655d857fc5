// cachecalc: the calc and its verification, a racy variant the verification must catch, and one
// verified iteration of every single-threaded variant.
#include <gtest/gtest.h>

#include <vector>

#include "core/base/clock.hpp"
#include "core/base/error.hpp"
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
  calc_lean(c);
  for (const auto& k : keys()) EXPECT_EQ(c.at(k), "10001");
  EXPECT_EQ(keys().front(), "hello0");
  EXPECT_EQ(keys().back(), "hello9");
}

Params one_param(const std::string& name, const std::string& value) {
  Params p;
  p.set(name, value);
  return p;
}

// Both calcs, N times over a fresh map: every key holds 10000 + N, and they agree value for value.
TEST(CachecalcCalc, BothCalcsCountFromTenThousandAndAgree) {
  for (int n : {1, 2, 7, 2 * kTasks}) {
    Cache ref = fresh_cache(), lean = fresh_cache();
    for (int i = 0; i < n; ++i) {
      calc_reference(ref);
      calc_lean(lean);
    }
    for (const auto& k : keys()) {
      EXPECT_EQ(ref.at(k), std::to_string(10000 + n)) << k << " after " << n;
      EXPECT_EQ(lean.at(k), std::to_string(10000 + n)) << k << " after " << n;
    }
    EXPECT_EQ(ref, lean) << "after " << n;
    if (n % 2 == 0)
      EXPECT_EQ(verify(ref, n / 2), "") << n;
    else
      EXPECT_NE(verify(ref, n / 2), "") << n;  // one calc short of or past every task count
  }
}

TEST(CachecalcCalc, ReferenceCalcInsertsMissingKeysAsEmpty) {
  Cache c;  // no keys at all: the reference's calc creates them by its lookups
  calc_reference(c);
  ASSERT_EQ(c.size(), size_t(kKeys));
  for (const auto& k : keys()) EXPECT_EQ(c.at(k), "10001");
}

TEST(CachecalcCalc, BothCalcsParseAndIncrementANonEmptyValue) {
  for (CalcFn f : {CalcFn(calc_reference), CalcFn([](Cache& c) { calc_lean(c); })}) {
    Cache c = fresh_cache();
    c["hello0"] = "42";
    c["hello9"] = "-3";
    c["hello5"] = "10000";
    f(c);
    EXPECT_EQ(c.at("hello0"), "43");
    EXPECT_EQ(c.at("hello9"), "-2");
    EXPECT_EQ(c.at("hello5"), "10001");
    EXPECT_EQ(c.at("hello1"), "10001");
  }
}

TEST(CachecalcCalc, TheCalcParameterPicksTheCalc) {
  const ParamSpec spec = calc_param();
  EXPECT_EQ(spec.def, "reference");
  EXPECT_EQ(calc_of(one_param("calc", "reference")), CalcFn(calc_reference));
  const CalcFn lean = calc_of(one_param("calc", "lean"));
  EXPECT_NE(lean, CalcFn(calc_reference));
  Cache c = fresh_cache();
  c["hello3"] = "7";
  lean(c);
  EXPECT_EQ(c.at("hello3"), "8");
  EXPECT_THROW(canonical_value(spec, "fast"), UsageError);
}

TEST(CachecalcDelay, DevzeroDelayLastsAtLeastItsTimeAndZeroIsNothing) {
  const uint64_t t0 = now_ns();
  devzero_delay(200);
  EXPECT_GE(now_ns() - t0, 200'000u);
  const uint64_t t1 = now_ns();
  blocking_delay(DelayKind::Sleep, 200);
  EXPECT_GE(now_ns() - t1, 200'000u);
  devzero_delay(0);  // returns at once; nothing to assert but that it does not hang
}

TEST(CachecalcDelay, KindsAreTheVariantsOwnWithTheReferencesDefault) {
  const auto kind_spec = [](const std::string& variant) -> ParamSpec {
    const Mechanism* m = testing::find_variant(variant);
    if (!m) return {};
    for (const auto& p : m->params)
      if (p.name == "delay_kind") return p;
    ADD_FAILURE() << variant << " has no delay_kind";
    return {};
  };
  for (const char* v : {"serial", "std_mutex", "std_async", "threadpool"}) {
    const ParamSpec spec = kind_spec(v);
    EXPECT_EQ(spec.def, "devzero") << v;
    EXPECT_EQ(spec.choices, (std::vector<std::string>{"devzero", "sleep"})) << v;
    EXPECT_THROW(canonical_value(spec, "timer"), UsageError) << v;  // no event loop to time on
  }
  for (const char* v : {"asio_threadpool_strand", "asio_coroutine", "asio_coroutine_strand",
                        "asio_io_context", "ipcrt", "sharded"}) {
    const ParamSpec spec = kind_spec(v);
    if (spec.name.empty()) continue;  // not built here
    EXPECT_EQ(spec.def, "timer") << v;
  }
  EXPECT_EQ(delay_kind_of(one_param("delay_kind", "devzero")), DelayKind::Devzero);
  EXPECT_EQ(delay_kind_of(one_param("delay_kind", "sleep")), DelayKind::Sleep);
  EXPECT_EQ(delay_kind_of(one_param("delay_kind", "timer")), DelayKind::Timer);
}

TEST(CachecalcVerify, AcceptsTwoCalcsPerTask) {
  Cache c = fresh_cache();
  for (int t = 0; t < kTasks; ++t) {
    calc_lean(c);
    calc_lean(c);
  }
  EXPECT_EQ(verify(c), "");
  EXPECT_EQ(c.at("hello7"), "12000");
}

TEST(CachecalcVerify, RejectsAWrongValueMissingKeyOrGarbage) {
  Cache c = fresh_cache();
  for (int t = 0; t < 2 * kTasks; ++t) calc_lean(c);
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
  for (int t = 0; t < 2 * kTasks; ++t) calc_lean(c, mine);
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
TEST(CachecalcVariants, CalcOnlyVerifiesWithTheLeanCalc) {
  testing::expect_verified("calc_only", "8", {{"calc", "lean"}});
}
TEST(CachecalcVariants, SerialVerifies) { testing::expect_verified("serial"); }
TEST(CachecalcVariants, SerialVerifiesWithLeanCalcAndSleep) {
  testing::expect_verified("serial", "8", {{"calc", "lean"}, {"delay_kind", "sleep"}});
}
TEST(CachecalcVariants, AsioIoContextVerifies) { testing::expect_verified("asio_io_context", "64"); }
TEST(CachecalcVariants, IpcrtVerifies) { testing::expect_verified("ipcrt", "64"); }

}  // namespace
}  // namespace ipclab::cachecalc
