// anchors/c2c: each layout runs, every round trip it counts came back whole, and the split
// layout's further lines are checked (a message whose lines disagree is corrupt).
#include <gtest/gtest.h>

#include "../workload_support.hpp"

namespace ipclab {
namespace {

Record run_c2c(Overrides o) {
  o["placement"] = {"unpinned"};  // runs on any machine, one CPU or many
  return test::run_point("anchors/c2c", std::move(o));
}

TEST(C2c, EachLayoutCompletesRoundTripsWithNothingLost) {
  for (const Overrides& o : std::vector<Overrides>{{{"layout", {"shared"}}},
                                                   {{"layout", {"split"}}, {"lines", {"1"}}},
                                                   {{"layout", {"split"}}, {"lines", {"3"}}}}) {
    const Record r = run_c2c(o);
    SCOPED_TRACE(r.name);
    EXPECT_EQ(r.status, Status::Ok) << r.error;
    EXPECT_GT(r.ops, 0u);
    EXPECT_TRUE(r.integrity.clean()) << r.integrity.text();
    EXPECT_GE(r.integrity.received, r.ops);
    EXPECT_EQ(r.integrity.sent, r.integrity.received);
  }
}

TEST(C2c, LinesMeansSomethingOnlyWithTheSplitLayout) {
  EXPECT_THROW(
      plan(select_mechanisms({"anchors/c2c"}), Preset::Default, {{"layout", {"shared"}}, {"lines", {"2"}}}),
      UsageError);
  const auto split =
      plan(select_mechanisms({"anchors/c2c"}), Preset::Default, {{"layout", {"split"}}, {"lines", {"2"}}});
  ASSERT_EQ(split.size(), 1u);
  EXPECT_NE(split[0].name.find("layout:split/lines:2"), std::string::npos) << split[0].name;
}

}  // namespace
}  // namespace ipclab
