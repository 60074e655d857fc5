#include "core/params.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

using namespace ipclab;

namespace {
std::vector<ParamSpec> specs() {
  return {{.name = "size", .type = ParamType::Size, .def = "64", .quick = {"64", "8192"},
           .full = {"1", "64", "4K", "64K"}, .min = 1, .max = 65536},
          {.name = "mode", .type = ParamType::String, .def = "threads", .choices = {"threads", "processes"}},
          {.name = "flag", .type = ParamType::Bool, .def = "0"}};
}
}  // namespace

TEST(Params, DefaultGridIsOnePoint) {
  auto g = expand_grid(specs(), Preset::Default, {});
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].path(), "size:64/mode:threads/flag:0");
}

TEST(Params, PresetsPickTheirLists) {
  EXPECT_EQ(expand_grid(specs(), Preset::Quick, {}).size(), 2u);
  auto full = expand_grid(specs(), Preset::Full, {});
  ASSERT_EQ(full.size(), 4u);
  EXPECT_EQ(full[2].str("size"), "4096");  // sizes are canonical byte counts
  EXPECT_EQ(full[3].str("size"), "65536");
}

TEST(Params, OverridesMakeACartesianProductInDeclarationOrder) {
  Overrides o;
  parse_override("size=64,256", o);
  parse_override("mode=threads,processes", o);
  auto g = expand_grid(specs(), Preset::Quick, o);
  ASSERT_EQ(g.size(), 4u);
  EXPECT_EQ(g[0].path(), "size:64/mode:threads/flag:0");
  EXPECT_EQ(g[1].path(), "size:64/mode:processes/flag:0");
  EXPECT_EQ(g[3].path(), "size:256/mode:processes/flag:0");
}

TEST(Params, DuplicateValuesCollapse) {
  Overrides o;
  parse_override("size=1K,1024,1kib", o);
  EXPECT_EQ(expand_grid(specs(), Preset::Default, o).size(), 1u);
}

TEST(Params, BadValuesAreUsageErrors) {
  auto s = specs();
  EXPECT_THROW(canonical_value(s[0], "abc"), UsageError);
  EXPECT_THROW(canonical_value(s[0], "0"), UsageError);       // below min
  EXPECT_THROW(canonical_value(s[0], "128K"), UsageError);    // above max
  EXPECT_THROW(canonical_value(s[0], "12x"), UsageError);
  EXPECT_THROW(canonical_value(s[1], "fibers"), UsageError);  // not a choice
  EXPECT_THROW(canonical_value(s[2], "maybe"), UsageError);
  EXPECT_EQ(canonical_value(s[2], "yes"), "1");
  EXPECT_EQ(canonical_value(s[0], "32K"), "32768") << "size suffixes are powers of 1024";
  Overrides o;
  EXPECT_THROW(parse_override("size", o), UsageError);
  EXPECT_THROW(parse_override("=1", o), UsageError);
  EXPECT_THROW(parse_override("size=1,,2", o), UsageError);
}

TEST(Params, JsonHasNumbersAsNumbers) {
  Params p({{"size", "64"}, {"mode", "threads"}, {"ratio", "0.5"}});
  auto j = p.to_json();
  EXPECT_TRUE(j["size"].is_number_integer());
  EXPECT_EQ(j["size"], 64);
  EXPECT_TRUE(j["mode"].is_string());
  EXPECT_DOUBLE_EQ(j["ratio"].get<double>(), 0.5);
}
