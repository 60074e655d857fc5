#include "core/base/params.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <set>

#include "core/base/error.hpp"
#include "core/machine/placement.hpp"
#include "core/model/mechanism.hpp"
#include "core/plan/runner.hpp"

using namespace ipclab;

namespace {
std::vector<ParamSpec> specs() {
  return {{.name = "size",
           .type = ParamType::Size,
           .def = "64",
           .quick = {"64", "8192"},
           .full = {"1", "64", "4K", "64K"},
           .min = 1,
           .max = 65536},
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

TEST(Params, ScaledGridIsPowersOfTwoAndTheTop) {
  EXPECT_EQ(scaled_grid(1), (std::vector<int64_t>{1}));
  EXPECT_EQ(scaled_grid(2), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(scaled_grid(6), (std::vector<int64_t>{1, 2, 4, 6}));
  EXPECT_EQ(scaled_grid(16), (std::vector<int64_t>{1, 2, 4, 8, 16}));
}

TEST(Params, PerCpuGridsScaleWithTheRunsCpusAndKeepTodaysOnTwo) {
  std::vector<ParamSpec> s = {{.name = "pairs",
                               .type = ParamType::Int,
                               .def = "1",
                               .quick = {"1", "4"},
                               .full = {"1", "2", "3", "4", "8"},
                               .min = 1,
                               .max = 64,
                               .per_cpu = 2}};
  auto values = [&](Preset p, size_t cpus, const Overrides& o = {}) {
    std::vector<int64_t> out;
    for (auto& g : expand_grid(s, p, o, cpus)) out.push_back(g.i64("pairs"));
    return out;
  };
  // Two CPUs, or an unknown count: the grids as declared.
  EXPECT_EQ(values(Preset::Quick, 2), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(values(Preset::Quick, 0), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(values(Preset::Full, 2), (std::vector<int64_t>{1, 2, 3, 4, 8}));
  // Sixteen CPUs, two a pair: up to 8; the full preset keeps its own values within that bound.
  EXPECT_EQ(values(Preset::Quick, 16), (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(values(Preset::Full, 16), (std::vector<int64_t>{1, 2, 3, 4, 8}));
  EXPECT_EQ(values(Preset::Full, 12), (std::vector<int64_t>{1, 2, 3, 4, 6}));
  // Bounded by the parameter's max, and never below one worker.
  EXPECT_EQ(values(Preset::Quick, 512).back(), 64);
  EXPECT_EQ(values(Preset::Quick, 3), (std::vector<int64_t>{1}));
  // The default preset and -p are not scaled.
  EXPECT_EQ(values(Preset::Default, 16), (std::vector<int64_t>{1}));
  Overrides o;
  parse_override("pairs=3", o);
  EXPECT_EQ(values(Preset::Quick, 16, o), (std::vector<int64_t>{3}));
}

TEST(Params, PresetValuesAreTheDeclaredListsOrTheScaledGrid) {
  using V = std::vector<std::string>;
  const ParamSpec listed{.name = "connections", .def = "16", .quick = {"16", "64"}, .full = {"1", "4"}};
  EXPECT_EQ(preset_values(listed, Preset::Default, 16), V{"16"});
  EXPECT_EQ(preset_values(listed, Preset::Quick, 16), (V{"16", "64"}));
  EXPECT_EQ(preset_values(listed, Preset::Full, 16), (V{"1", "4"}));
  const ParamSpec quick_only{.name = "q", .def = "1", .quick = {"1", "2"}};
  EXPECT_EQ(preset_values(quick_only, Preset::Full), (V{"1", "2"}));
  // A worker count with no lists of its own (servers' reactors): the default on 2 CPUs or fewer,
  // the scaled grid above; the default preset never scales.
  const ParamSpec reactors{.name = "reactors", .def = "1", .min = 1, .max = 256, .per_cpu = 1};
  EXPECT_EQ(preset_values(reactors, Preset::Quick, 2), V{"1"});
  EXPECT_EQ(preset_values(reactors, Preset::Quick, 0), V{"1"});
  EXPECT_EQ(preset_values(reactors, Preset::Quick, 6), (V{"1", "2", "4", "6"}));
  EXPECT_EQ(preset_values(reactors, Preset::Full, 8), (V{"1", "2", "4", "8"}));
  EXPECT_EQ(preset_values(reactors, Preset::Default, 8), V{"1"});
  // Two CPUs a worker (echo's reactors, each with a client thread).
  ParamSpec pairs = reactors;
  pairs.per_cpu = 2;
  EXPECT_EQ(preset_values(pairs, Preset::Quick, 16), (V{"1", "2", "4", "8"}));
  EXPECT_EQ(preset_values(pairs, Preset::Quick, 3), V{"1"});
}

TEST(Params, DuplicateValuesCollapse) {
  Overrides o;
  parse_override("size=1K,1024,1kib", o);
  EXPECT_EQ(expand_grid(specs(), Preset::Default, o).size(), 1u);
}

TEST(Params, AnAliasIsReadAsTheValueItStandsFor) {
  const ParamSpec pattern{.name = "pattern",
                          .type = ParamType::String,
                          .def = "roundtrip",
                          .choices = {"throughput", "roundtrip"},
                          .aliases = {{"pingpong", "roundtrip"}}};
  EXPECT_EQ(canonical_value(pattern, "pingpong"), "roundtrip");
  EXPECT_EQ(canonical_value(pattern, "roundtrip"), "roundtrip");
  EXPECT_THROW(canonical_value(pattern, "ping"), UsageError);
  try {
    canonical_value(pattern, "broadcast");
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    // The refusal lists the values to use, not the old names.
    EXPECT_NE(std::string(e.what()).find("throughput|roundtrip"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("pingpong"), std::string::npos) << e.what();
  }
  Overrides o;
  parse_override("pattern=pingpong,roundtrip", o);
  auto g = expand_grid({pattern}, Preset::Default, o);
  ASSERT_EQ(g.size(), 1u) << "an alias and its value are one point";
  EXPECT_EQ(g[0].path(), "pattern:roundtrip");
}

TEST(Params, BadValuesAreUsageErrors) {
  auto s = specs();
  EXPECT_THROW(canonical_value(s[0], "abc"), UsageError);
  EXPECT_THROW(canonical_value(s[0], "0"), UsageError);     // below min
  EXPECT_THROW(canonical_value(s[0], "128K"), UsageError);  // above max
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

// A choice `word:N` takes a whole number after the word (memory=node:1), written canonically; the
// word alone, a number that is not whole or not from 0, and other text are refused naming the form.
TEST(Params, ANumberedChoiceTakesAWholeNumber) {
  const ParamSpec spec{.name = "memory",
                       .type = ParamType::String,
                       .def = "first_touch",
                       .choices = {"first_touch", "writer", "node:N"}};
  EXPECT_EQ(canonical_value(spec, "node:1"), "node:1");
  EXPECT_EQ(canonical_value(spec, "node:007"), "node:7");
  EXPECT_EQ(canonical_value(spec, "writer"), "writer");
  for (const char* bad : {"node:", "node:-1", "node:x", "node:1.5", "node:+1", "node: 1", "node:1K"}) {
    try {
      canonical_value(spec, bad);
      ADD_FAILURE() << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("node:N with N a whole number from 0"), std::string::npos)
          << e.what();
    }
  }
  // Not the family's word: a value like any other, refused naming the choices.
  EXPECT_THROW(canonical_value(spec, "node"), UsageError);
  EXPECT_THROW(canonical_value(spec, "nodes:1"), UsageError);
  EXPECT_THROW(canonical_value(spec, "node:N"), UsageError);
  try {
    canonical_value(spec, "bogus");
    ADD_FAILURE();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("first_touch|writer|node:N"), std::string::npos) << e.what();
  }
  // A grid of them: each once, in the order given.
  Overrides o;
  parse_override("memory=node:1,node:01,writer", o);
  const auto grid = expand_grid({spec}, Preset::Default, o);
  ASSERT_EQ(grid.size(), 2u);
  EXPECT_EQ(grid[0].path(), "memory:node:1");
  EXPECT_EQ(grid[1].path(), "memory:writer");
}

TEST(Params, JsonHasNumbersAsNumbers) {
  Params p({{"size", "64"}, {"mode", "threads"}, {"ratio", "0.5"}});
  auto j = p.to_json();
  EXPECT_TRUE(j["size"].is_number_integer());
  EXPECT_EQ(j["size"], 64);
  EXPECT_TRUE(j["mode"].is_string());
  EXPECT_DOUBLE_EQ(j["ratio"].get<double>(), 0.5);
}

TEST(Params, IntegersAreWholeDecimalTextThatFits) {
  EXPECT_EQ(parse_integer("42"), 42);
  EXPECT_EQ(parse_integer("-7"), -7);
  EXPECT_EQ(parse_integer("010"), 10) << "decimal, not octal";
  EXPECT_EQ(parse_integer("4K", true), 4096);
  EXPECT_EQ(parse_integer("2MiB", true), 2 << 20);
  EXPECT_EQ(parse_integer("1gb", true), int64_t(1) << 30);
  for (const char* bad : {"", " 1", "1 ", "+1", "0x10", "1e3", "1.5", "1K", "abc", "9223372036854775808",
                          "-9223372036854775809", "1\n"})
    EXPECT_FALSE(parse_integer(bad).has_value()) << bad;
  for (const char* bad : {"18014398509481985K", "9999999999G", "8589934592G", "1T", "1KK", "1.5K", "K", "-K"})
    EXPECT_FALSE(parse_integer(bad, true).has_value()) << bad << ": overflow or junk must not wrap";
  EXPECT_EQ(parse_integer("8589934591G", true), int64_t(8589934591) << 30);
}

TEST(Params, RealsAreFiniteDecimalText) {
  EXPECT_DOUBLE_EQ(*parse_real("0.5"), 0.5);
  EXPECT_DOUBLE_EQ(*parse_real("1e-3"), 1e-3);
  EXPECT_DOUBLE_EQ(*parse_real("-2"), -2.0);
  for (const char* bad : {"", "nan", "NaN", "inf", "-inf", "infinity", "1e309", " 1", "1 ", "+1", "0x1p-2",
                          "0,5", "0.5s", "abc"})
    EXPECT_FALSE(parse_real(bad).has_value()) << bad;
}

TEST(Params, NumericValuesNeverWrapAndNameTheirBounds) {
  auto s = specs();
  try {
    canonical_value(s[0], "18014398509481985K");  // x 1024 wraps to 1024 in 64 bits
    FAIL() << "a wrapping size was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("from 1 to 65536"), std::string::npos) << e.what();
  }
  for (const char* bad : {"-1K", " 64", "+64", "64 ", "0x40", "1e3", "9223372036854775808"})
    EXPECT_THROW(canonical_value(s[0], bad), UsageError) << bad;
  ParamSpec ratio{.name = "ratio", .type = ParamType::Double, .def = "0.5", .min = 0, .max = 1};
  EXPECT_EQ(canonical_value(ratio, "0.25"), "0.25");
  for (const char* bad : {"nan", "inf", "2", "-0.5", "0.5x"})
    EXPECT_THROW(canonical_value(ratio, bad), UsageError) << bad;
}

TEST(Params, StringValuesArePrintableUtf8) {
  ParamSpec word{.name = "a", .type = ParamType::String, .def = "epoll"};
  EXPECT_EQ(canonical_value(word, "caf\xc3\xa9"), "caf\xc3\xa9");
  for (const char* bad : {"ep\x01oll", "ep\noll", "ep\x7foll", "ep\xffoll", "\xc0\xaf", "\xc2\x85"})
    EXPECT_THROW(canonical_value(word, bad), UsageError) << printable(bad);
  ParamSpec path{.name = "dir", .type = ParamType::String, .def = "/tmp", .path = true};
  EXPECT_THROW(canonical_value(path, "/tmp/a\nb"), UsageError);
}

TEST(Params, BriefCutsALongValueAtAWholeCharacter) {
  EXPECT_EQ(brief("harness/null"), "harness/null");
  EXPECT_EQ(brief("a\nb"), "a\\nb");
  const std::string huge(100000, 'x');
  const std::string cut = brief(huge);
  EXPECT_EQ(cut, std::string(200, 'x') + "…(+99800 bytes)");
  std::string accents;
  for (int i = 0; i < 150; ++i) accents += "\xc3\xa9";  // é, two bytes each: 300 bytes
  const std::string cut_accents = brief(accents);
  EXPECT_EQ(printable(cut_accents), cut_accents) << "no character split";
  EXPECT_NE(cut_accents.find("…(+100 bytes)"), std::string::npos) << cut_accents;
}

TEST(Params, PrintableEscapesControlsAndInvalidUtf8Only) {
  EXPECT_EQ(printable("plain — café 😀"), "plain — café 😀");
  EXPECT_EQ(printable("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(printable(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(printable("\x1b[31m\x7f"), "\\x1b[31m\\x7f");
  EXPECT_EQ(printable("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf") << "overlong form";
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80") << "UTF-16 surrogate";
  EXPECT_EQ(printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80") << "above U+10FFFF";
  EXPECT_EQ(printable("x\xe2\x82"), "x\\xe2\\x82") << "truncated sequence";
  EXPECT_EQ(printable("\xc2\x85"), "\\u{0085}") << "C1 next line";
  EXPECT_EQ(printable("\xe2\x80\xa8"), "\\u{2028}") << "line separator";
  for (std::string s : {std::string("a\nb"), std::string("\xff\n\xe2\x80\xa9")})
    EXPECT_EQ(printable(s).find_first_of("\n\r"), std::string::npos);
}

TEST(Placement, CpuListsAreCheckedBeforeTheyAreExpanded) {
  const auto allowed = allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  const std::string a = std::to_string(allowed[0]);
  EXPECT_EQ(parse_cpu_list(a), std::vector<int>{allowed[0]});
  EXPECT_EQ(parse_cpu_list(a + "-" + a), std::vector<int>{allowed[0]});
  if (allowed.size() > 1 && allowed[1] == allowed[0] + 1) {
    const std::string b = std::to_string(allowed[1]);
    EXPECT_EQ(parse_cpu_list(a + "-" + b), (std::vector<int>{allowed[0], allowed[1]}));
    EXPECT_EQ(parse_cpu_list(b + "," + a), (std::vector<int>{allowed[1], allowed[0]})) << "order is kept";
    EXPECT_THROW(parse_cpu_list(b + "-" + a), UsageError) << "reversed";
  }
  for (const std::string& bad :
       std::vector<std::string>{"", a + "," + a, a + "," + a + "-" + a, a + ",", "," + a, " " + a, "+" + a,
                                "0x0", "-1", a + "-", "0-x", "1024", "0-99999999999999999999", a + "\n"})
    EXPECT_THROW(parse_cpu_list(bad), UsageError) << printable(bad);
  // A huge range is refused by its bound, at once (expanding it first took seconds and a gigabyte).
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(parse_cpu_list("0-2147483647"), UsageError);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100));
}

TEST(Placement, LayoutsNeedDistinctCpus) {
  EXPECT_EQ(cpus_needed("unpinned"), 0);
  EXPECT_EQ(cpus_needed("same"), 1);
  EXPECT_EQ(cpus_needed("cross"), 2);
  EXPECT_THROW(cpus_needed("diagonal"), UsageError);
  EXPECT_EQ(placement_problem("cross", {0, 1}), "");
  EXPECT_EQ(placement_problem("same", {3}), "");
  EXPECT_EQ(placement_problem("unpinned", {}), "");
  EXPECT_NE(placement_problem("cross", {0}), "");
  EXPECT_NE(placement_problem("cross", {0, 0}), "") << "two entries, one CPU";
  EXPECT_NE(placement_problem("same", {}), "");
  EXPECT_THROW(cpu_for_side("cross", 1, {0, 0}), UsageError);
  EXPECT_EQ(cpu_for_side("cross", 1, {2, 5}), 5);
}

TEST(Placement, ThePlannerRefusesALayoutTheCpusCannotHold) {
  const std::vector<int> one{allowed_cpus().at(0)};
  Overrides cross;
  parse_override("placement=cross", cross);
  EXPECT_THROW(plan(select_mechanisms({"messaging/pipe"}), Preset::Default, cross, one), UsageError)
      << "asked for with -p: a usage error";
  EXPECT_EQ(plan(select_mechanisms({"messaging/pipe"}), Preset::Default, cross, {0, 1}).size(), 1u);
  // Not asked for: left out of the grid, and when nothing is left that is a usage error too.
  for (auto& b : plan(select_mechanisms({"anchors"}), Preset::Full, {}, one))
    EXPECT_NE(b.params.str_or("placement", "unpinned"), "cross") << b.name;
  EXPECT_THROW(plan(select_mechanisms({"anchors/c2c"}), Preset::Default, {}, one), UsageError);
}

TEST(Placement, ACpuMatrixRunsEachRoundTripOncePerPair) {
  Overrides o;
  parse_override("pattern=roundtrip,throughput", o);
  parse_override("size=64", o);
  const auto base =
      plan(select_mechanisms({"messaging/pipe", "messaging/shm_spsc"}), Preset::Default, o, {0, 1});
  const std::vector<int> three{0, 1, 2};  // the matrix's CPUs need not be this machine's: nothing runs
  const auto m = cpu_matrix(base, "every", three, false);
  // Two round-trip points (the throughput ones are left out), three pairs each.
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[0].cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(m[2].cpus, (std::vector<int>{1, 2}));
  for (auto& b : m) {
    EXPECT_EQ(b.params.str("placement"), "cross");
    EXPECT_EQ(b.params.str("pattern"), "roundtrip");
    EXPECT_EQ(b.params.str("cpus"), fmt::format("{},{}", b.cpus[0], b.cpus[1]));
    EXPECT_EQ(b.cpu_matrix, "every_pair");
    EXPECT_NE(b.name.find("/cpus:"), std::string::npos) << b.name;
  }
  // Points that differed only in their placement collapse into one per pair.
  Overrides both = o;
  parse_override("placement=same,cross", both);
  EXPECT_EQ(cpu_matrix(plan(select_mechanisms({"messaging/pipe"}), Preset::Default, both, {0, 1}), "every",
                       three, false)
                .size(),
            3u);
  EXPECT_THROW(cpu_matrix(base, "every", three, true), UsageError) << "-p placement with the matrix";
  EXPECT_THROW(cpu_matrix(base, "all", three, false), UsageError);
  EXPECT_THROW(cpu_matrix(base, "every", {0}, false), UsageError);
  std::vector<int> many(65);
  for (int i = 0; i < 65; ++i) many[size_t(i)] = i;
  EXPECT_THROW(cpu_matrix(base, "every", many, false), UsageError);
  // Nothing two-sided: refused.
  EXPECT_THROW(cpu_matrix(plan(select_mechanisms({"harness/null"}), Preset::Default, {}, {0, 1}), "every",
                          three, false),
               UsageError);
}

TEST(Plan, TheDefaultPresetPutsTheFirstAnswerFirstWhenTheWholeSuiteIsSelected) {
  const Suite* messaging = Registry::get().suite("messaging");
  ASSERT_TRUE(messaging && messaging->first);
  const auto& first = *messaging->first;
  const auto selected = select_mechanisms({"messaging"});
  const auto planned = plan(selected, Preset::Default, {}, {0, 1});
  const auto out = first_answers_first(planned, selected, {0, 1});
  // Every combination of the grid is possible on two CPUs for these transports.
  size_t combos = 1;
  for (auto& [_, values] : first.grid) combos *= values.size();
  const size_t n = first.mechanisms.size() * combos;
  ASSERT_GE(out.size(), n);
  std::set<std::string> names;
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_TRUE(names.insert(out[i].name).second) << out[i].name << " planned twice";
    EXPECT_EQ(out[i].first.empty(), i >= n) << out[i].name;
    if (i >= n) continue;
    EXPECT_EQ(out[i].first, first.title);
    EXPECT_NE(std::find(first.mechanisms.begin(), first.mechanisms.end(), out[i].mech->name),
              first.mechanisms.end());
    for (auto& [param, values] : first.grid)
      EXPECT_NE(std::find(values.begin(), values.end(), out[i].params.str(param)), values.end())
          << out[i].name;
  }
  // The default points the first answer already holds are not run twice; every other one still is.
  for (auto& b : planned) EXPECT_TRUE(names.count(b.name)) << b.name << " dropped";
  EXPECT_LT(out.size(), planned.size() + n) << "pipe's default point is one of the first answer's";
  // On one CPU the cross points are left out, not refused.
  const auto one = first_answers_first(plan(selected, Preset::Default, {}, {0}), selected, {0});
  size_t same = 0;
  for (auto& b : one)
    if (!b.first.empty()) {
      EXPECT_EQ(b.params.str("placement"), "same") << b.name;
      ++same;
    }
  EXPECT_EQ(same, n / 2);
  // A selection of part of the suite has no first answer: its plan as it was.
  const auto pipe = select_mechanisms({"messaging/pipe"});
  const auto alone = plan(pipe, Preset::Default, {}, {0, 1});
  const auto kept = first_answers_first(alone, pipe, {0, 1});
  ASSERT_EQ(kept.size(), alone.size());
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(kept[i].name, alone[i].name);
    EXPECT_TRUE(kept[i].first.empty());
  }
}

TEST(Filters, EmptyOrUnprintableFiltersAreRefused) {
  EXPECT_THROW(select_mechanisms({""}), UsageError);
  EXPECT_THROW(select_mechanisms({"harness/null\n"}), UsageError);
  EXPECT_THROW(select_mechanisms({"harness/\xffnull"}), UsageError);
  EXPECT_EQ(select_mechanisms({"harness/null"}).size(), 1u);
}

TEST(Registry, EveryNumericParameterHasBoundsAndAValidDefault) {
  // Unbounded numbers reach the mechanisms as overflowing timeouts and sizes; every declaration
  // says its range, and its default and preset values are in it.
  for (auto& m : Registry::get().mechanisms())
    for (auto& p : m.params) {
      if (p.type == ParamType::Int || p.type == ParamType::Size) {
        EXPECT_NE(p.min, INT64_MIN) << m.full_name() << " " << p.name;
        EXPECT_NE(p.max, INT64_MAX) << m.full_name() << " " << p.name;
      }
      EXPECT_NO_THROW(canonical_value(p, p.def)) << m.full_name() << " " << p.name;
      for (auto& v : p.quick) EXPECT_NO_THROW(canonical_value(p, v)) << m.full_name() << " " << p.name;
      for (auto& v : p.full) EXPECT_NO_THROW(canonical_value(p, v)) << m.full_name() << " " << p.name;
    }
}

TEST(Registry, EveryAliasStandsForAChoiceAndIsNotOneItself) {
  for (auto& m : Registry::get().mechanisms())
    for (auto& p : m.params)
      for (auto& [alias, value] : p.aliases) {
        const auto is_choice = [&](const std::string& v) {
          return std::find(p.choices.begin(), p.choices.end(), v) != p.choices.end();
        };
        EXPECT_TRUE(is_choice(value)) << m.full_name() << " " << p.name << ": " << alias << " -> " << value;
        EXPECT_FALSE(is_choice(alias)) << m.full_name() << " " << p.name << ": " << alias;
        EXPECT_NE(p.def, alias) << m.full_name() << " " << p.name << ": the default is written by its name";
      }
}

TEST(Params, GridsAreCountedBeforeTheyAreBuilt) {
  std::vector<ParamSpec> s = {{.name = "a", .type = ParamType::Int, .def = "1", .min = 1, .max = 1'000'000},
                              {.name = "b", .type = ParamType::Int, .def = "1", .min = 1, .max = 1'000'000}};
  auto values = [](int n) {
    std::string v = "1";
    for (int i = 2; i <= n; ++i) v += "," + std::to_string(i);
    return v;
  };
  Overrides ok, big;
  parse_override("a=" + values(100), ok);
  parse_override("b=" + values(100), ok);
  EXPECT_EQ(expand_grid(s, Preset::Default, ok).size(), kMaxGridPoints);
  parse_override("a=" + values(100), big);
  parse_override("b=" + values(101), big);
  EXPECT_THROW(expand_grid(s, Preset::Default, big), UsageError);
}

TEST(Params, SizeTextIsTheShortestTextParseIntegerReadsBack) {
  EXPECT_EQ(size_text(64), "64");
  EXPECT_EQ(size_text(1000), "1000");
  EXPECT_EQ(size_text(1024), "1K");
  EXPECT_EQ(size_text(1536), "1536");
  EXPECT_EQ(size_text(int64_t(1) << 20), "1M");
  EXPECT_EQ(size_text(int64_t(1) << 30), "1G");
  EXPECT_EQ(size_text(0), "0");
  for (int64_t v : {int64_t(0), int64_t(64), int64_t(4096), int64_t(3) << 20, int64_t(1) << 40})
    EXPECT_EQ(parse_integer(size_text(v), true), v) << v;
}

TEST(Params, RatesAreDecimalWithThousandsSuffixesAndWholePerSecond) {
  EXPECT_EQ(parse_rate("500"), 500);
  EXPECT_EQ(parse_rate("10k"), 10000);
  EXPECT_EQ(parse_rate("2.5k"), 2500);
  EXPECT_EQ(parse_rate("1.5M"), 1500000);
  EXPECT_EQ(parse_rate("1e3"), 1000);
  EXPECT_EQ(parse_rate("0.1k"), 100);
  for (const char* bad :
       {"", "0", "-5", "abc", "10K", "10kk", "2.5", "0.0001k", "nan", "inf", "k", " 10", "1e13"})
    EXPECT_FALSE(parse_rate(bad)) << bad;
  EXPECT_EQ(rate_text(10000), "10k");
  EXPECT_EQ(rate_text(2500), "2500");
  EXPECT_EQ(rate_text(2500000), "2500k");
  EXPECT_EQ(rate_text(3000000), "3M");
  for (int64_t v : {1, 999, 1000, 12345, 1500000, 100000000}) EXPECT_EQ(parse_rate(rate_text(v)), v) << v;

  const ParamSpec rate{
      .name = "rate", .type = ParamType::Rate, .def = "10k", .choices = {"auto"}, .max = 1000000};
  EXPECT_EQ(canonical_value(rate, "10000"), "10k") << "one point has one name";
  EXPECT_EQ(canonical_value(rate, "auto"), "auto");
  for (const char* bad : {"0", "-1", "fast", "2M", "Auto"})
    EXPECT_THROW(canonical_value(rate, bad), UsageError) << bad;
}

TEST(Params, AConditionalParameterExistsOnlyWhereItsConditionHolds) {
  const std::vector<ParamSpec> s = {
      {.name = "pattern", .type = ParamType::String, .def = "closed", .choices = {"closed", "rate"}},
      {.name = "rate",
       .type = ParamType::Rate,
       .def = "10k",
       .choices = {"auto"},
       .max = 1000000,
       .only_with = {"pattern", {"rate"}}},
      {.name = "slo",
       .type = ParamType::Int,
       .def = "50",
       .min = 1,
       .max = 1000,
       .only_with = {"rate", {"auto"}}}};
  auto one = expand_grid(s, Preset::Default, {});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].path(), "pattern:closed") << "left out of the name and the JSON";
  EXPECT_FALSE(one[0].to_json().contains("rate"));

  Overrides o;
  parse_override("pattern=closed,rate", o);
  parse_override("rate=1k,auto", o);
  auto g = expand_grid(s, Preset::Default, o);
  ASSERT_EQ(g.size(), 3u) << "the closed points that differ only in a dropped rate are one";
  EXPECT_EQ(g[0].path(), "pattern:closed");
  EXPECT_EQ(g[1].path(), "pattern:rate/rate:1k");
  EXPECT_EQ(g[2].path(), "pattern:rate/rate:auto/slo:50") << "a condition on a conditional parameter";
}

TEST(Params, AskingForAParameterWhereItNeverAppliesIsAUsageError) {
  const auto pipe = select_mechanisms({"messaging/pipe"});
  Overrides o;
  parse_override("rate=10k", o);
  try {
    plan(pipe, Preset::Default, o);
    ADD_FAILURE() << "rate without pattern=rate was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("pattern=rate"), std::string::npos) << e.what();
  }
  parse_override("pattern=rate", o);
  EXPECT_EQ(plan(pipe, Preset::Default, o).size(), 1u);
  parse_override("slo_p99_us=20", o);
  EXPECT_THROW(plan(pipe, Preset::Default, o), UsageError) << "slo_p99_us without rate=auto";
  Overrides bad;
  parse_override("pattern=rate", bad);
  parse_override("rate=0", bad);
  EXPECT_THROW(plan(pipe, Preset::Default, bad), UsageError);
}
