#include "core/output/reporter.hpp"

#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "core/base/error.hpp"
#include "core/model/mechanism.hpp"
#include "core/plan/runner.hpp"
#include "core/stats/series.hpp"
#include "core/stats/statistics.hpp"

using namespace ipclab;

namespace {
Record sample(const std::string& suite = "messaging") {
  Record r;
  r.suite = suite;
  r.mechanism = "pipe";
  r.params = Params({{"size", "64"}, {"placement", "cross"}});
  r.name = suite + "/pipe/" + r.params.path();
  r.ops = 1000;
  r.bytes = 64000;
  r.wall_s = 0.5;
  r.cpu = {0.1, 0.2, 10, 2};
  auto h = std::make_unique<Histogram>();
  for (uint64_t v = 1000; v < 2000; ++v) h->record(v);
  r.latency = Latency::from("rtt", *h);
  r.placement = {"cross", {0, 1}, {{"client", 0, {0}, {0}}, {"server", 0, {1}, {1}}}};
  r.integrity = {1000, 1000, 0, 0, 0};
  return r;
}
// The plan `ipclab run FILTER -p ...` makes on two CPUs.
std::vector<PlannedBenchmark> plan_of(const std::string& filter, const Overrides& overrides = {},
                                      Preset preset = Preset::Default) {
  return plan(select_mechanisms({filter}), preset, overrides, {0, 1});
}
// A completed repetition of a planned benchmark, as run_one names it.
Record record_of(const PlannedBenchmark& b, int repetition = 0) {
  Record r = sample(b.mech->suite);
  r.name = b.name;
  r.mechanism = b.mech->name;
  r.params = b.params;
  r.repetition = repetition;
  return r;
}
// What a reporter printed to a FILE*.
std::string printed(FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  return out;
}
// The columns a line takes on a terminal: its characters, a UTF-8 sequence counted once.
size_t columns_of(const std::string& line) {
  return size_t(std::count_if(line.begin(), line.end(), [](char c) { return (c & 0xc0) != 0x80; }));
}
// The printed lines wider than `width` columns, each on a line of its own.
std::string wider_than(const std::string& out, size_t width) {
  std::string wide;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);)
    if (columns_of(line) > width) wide += fmt::format("[{}] {}\n", columns_of(line), line);
  return wide;
}
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST(Output, TheStatusShowsWhatCastsDoubtOnAnOkFigure) {
  Record it;
  it.ops = 1000;
  it.wall_s = 0.001;  // 1 us per op
  EXPECT_EQ(status_text(it), "ok");
  it.series = {{"flags", {"non_steady", "bimodal"}}};
  EXPECT_EQ(status_text(it), "ok, non-steady, bimodal");
  Record agg = it;
  agg.run_type = "aggregate";
  agg.series = nullptr;
  agg.flags = {"bimodal_repetitions"};
  agg.ci = {{"time_per_op_ns", {980.0, 1020.0}}};  // ±2% of 1000 ns
  agg.repetitions_auto = {{"target_pct", 1.0}, {"met", false}};
  agg.kernel = {{"unavailable", {{"syscalls", "tracefs is not mounted"}}}};
  EXPECT_EQ(status_text(agg),
            "ok ±2.0%, CI target ±1% missed, bimodal repetitions, counters unavailable: syscalls");
  // A failed or skipped record says why, and nothing else.
  agg.fail("lost 3");
  EXPECT_EQ(status_text(agg), "failed: lost 3");
}

TEST(Flags, EveryFlagHasItsIdWordMeaningAndRemedyOnce) {
  std::set<std::string> ids, words;
  ASSERT_EQ(flag_table().size(), size_t(Flag::CountersUnavailable) + 1) << "one entry per Flag";
  for (size_t i = 0; i < flag_table().size(); ++i) {
    const FlagInfo& f = flag_table()[i];
    EXPECT_EQ(size_t(f.flag), i) << f.id << ": the table in the order of Flag";
    EXPECT_EQ(&flag_info(f.flag), &f) << f.id;
    EXPECT_EQ(find_flag(f.id), &f) << f.id;
    for (const char* text : {f.id, f.word, f.meaning, f.remedy}) EXPECT_GT(std::strlen(text), 3u) << f.id;
    EXPECT_TRUE(ids.insert(f.id).second) << "two flags with the id " << f.id;
    EXPECT_TRUE(words.insert(f.word).second) << "two flags with the word " << f.word;
  }
  EXPECT_EQ(find_flag("no_such_flag"), nullptr);
}

TEST(Flags, EveryFlagTheHarnessRaisesIsInTheTable) {
  // The record's own: steal and short_window, as the runner raises them.
  Record r;
  r.ops = 1000;
  r.wall_s = 0.001;
  r.steal = Steal{.steal_s = 0.5, .capacity_s = 1.0, .resolution_s = 0.01, .cpus = {0}};
  flag_steal(r);
  flag_short_window(r, 0.02);
  ASSERT_EQ(r.flags.size(), 2u) << r.flags.dump();
  for (auto& f : r.flags) EXPECT_NE(find_flag(f.get<std::string>()), nullptr) << f;
  EXPECT_EQ(r.warnings[0]["remedy"], flag_info(Flag::Steal).remedy) << "the warning's remedy is the table's";
  // The series' (non_steady: a rate that halves over the window) and the repetitions' split.
  std::vector<uint64_t> t_ns, ops;
  for (int k = 0; k <= 20; ++k) t_ns.push_back(uint64_t(k) * 50'000'000);
  for (int k = 0; k < 20; ++k) ops.push_back(uint64_t(20000 - 500 * k));
  const nlohmann::json series = make_series(t_ns, ops, {});
  ASSERT_FALSE(series["flags"].empty()) << series.dump();
  for (auto& f : series["flags"]) EXPECT_NE(find_flag(f.get<std::string>()), nullptr) << f;
  std::vector<Record> reps;
  for (int i = 0; i < 8; ++i) {
    Record rep = r;
    rep.flags = nlohmann::json::array();
    rep.wall_s = i % 2 ? 0.001 : 0.002;  // two clusters, 2x apart
    rep.repetition = i;
    reps.push_back(rep);
  }
  const Record agg = aggregate_median(reps);
  ASSERT_FALSE(agg.flags.empty());
  for (auto& f : agg.flags) EXPECT_NE(find_flag(f.get<std::string>()), nullptr) << f;
  // What the status shows from elsewhere: a missed CI target, counters unavailable.
  Record shown = agg;
  shown.repetitions_auto = {{"target_pct", 1.0}, {"met", false}};
  shown.kernel = {{"unavailable", {{"syscalls", "tracefs is not mounted"}}}};
  const auto flags = record_flags(shown);
  EXPECT_TRUE(flags.count(Flag::BimodalRepetitions));
  EXPECT_TRUE(flags.count(Flag::CiTargetMissed));
  EXPECT_TRUE(flags.count(Flag::CountersUnavailable));
  // results.json names each flag that occurs, and no other, with its remedy.
  auto j = nlohmann::json::parse(output::json_document({{"kernel", "x"}}, {r, shown}));
  const auto& table = j["context"]["flags"];
  for (auto* id :
       {"steal", "short_window", "bimodal_repetitions", "ci_target_missed", "counters_unavailable"}) {
    ASSERT_TRUE(table.contains(id)) << id << table.dump();
    EXPECT_EQ(table[id]["remedy"], find_flag(id)->remedy) << id;
    EXPECT_EQ(table[id]["meaning"], find_flag(id)->meaning) << id;
  }
  EXPECT_FALSE(table.contains("non_steady")) << table.dump();
  EXPECT_TRUE(nlohmann::json::parse(output::json_document({}, {}))["context"]["flags"].empty());
}

TEST(Output, JsonRecordHasTheSchemaShape) {
  auto j = nlohmann::json::parse(output::json_document({{"kernel", "x"}}, {sample()}));
  EXPECT_EQ(j["schema_version"], 1);
  auto& b = j["benchmarks"][0];
  for (const char* k :
       {"name", "suite", "mechanism", "params", "run_type", "repetition", "status", "error", "ops", "bytes",
        "wall_s", "time_per_op_ns", "rates", "latency_ns", "cpu", "placement", "integrity", "extra"})
    EXPECT_TRUE(b.contains(k)) << k;
  EXPECT_DOUBLE_EQ(b["time_per_op_ns"].get<double>(), 500000.0);
  EXPECT_DOUBLE_EQ(b["rates"]["ops_per_s"].get<double>(), 2000.0);
  EXPECT_DOUBLE_EQ(b["cpu"]["per_op_ns"].get<double>(), 300000.0);
  EXPECT_DOUBLE_EQ(b["cpu"]["ctx_per_op"].get<double>(), 0.012);
  EXPECT_EQ(b["latency_ns"]["kind"], "rtt");
  EXPECT_EQ(b["latency_ns"]["count"], 1000);
  EXPECT_EQ(b["placement"]["sides"][1]["observed"][0], 1);
  uint64_t sum = 0;
  for (auto& c : b["latency_ns"]["histogram"]["counts"]) sum += c.get<uint64_t>();
  EXPECT_EQ(sum, 1000u);
}

TEST(Output, JsonRoundTripsThroughTheReader) {
  auto j = nlohmann::json::parse(output::json_document({}, {sample()}));
  Record back = record_from_json(j["benchmarks"][0]);
  EXPECT_EQ(back.name, sample().name);
  EXPECT_EQ(back.ops, 1000u);
  EXPECT_EQ(back.latency->p50, sample().latency->p50);
  EXPECT_EQ(back.params.str("placement"), "cross");
  // The placement, side by side (a record read back is adopted whole: --remote-role client).
  const Record want = sample();
  EXPECT_EQ(back.placement.layout, want.placement.layout);
  ASSERT_EQ(back.placement.sides.size(), want.placement.sides.size());
  for (size_t i = 0; i < want.placement.sides.size(); ++i) {
    EXPECT_EQ(back.placement.sides[i].role, want.placement.sides[i].role);
    EXPECT_EQ(back.placement.sides[i].index, want.placement.sides[i].index);
    EXPECT_EQ(back.placement.sides[i].pinned, want.placement.sides[i].pinned);
    EXPECT_EQ(back.placement.sides[i].observed, want.placement.sides[i].observed);
  }
}

// A peer's latency (peers/go contract.Hist, peers/rust Hist): exact count, mean, min and max, and
// a histogram of bucket-lowest values the quantiles come from. A quantile stays within the exact
// min and max: 407 ns in the 2-ns bucket [406, 407] reads back as 407, not the bucket's 406.
TEST(Output, APeersLatencyKeepsItsKindAndItsQuantilesWithinItsExactRange) {
  const auto j = nlohmann::json::parse(R"({"name": "runtime/timer_go", "ops": 4, "wall_s": 1e-6,
      "integrity": {"sent": 4, "received": 4},
      "latency_ns": {"kind": "batch_mean", "count": 4, "mean": 407.5, "min": 407, "max": 409,
                     "histogram": {"sub_buckets": 128, "values": [406, 408], "counts": [3, 1]}}})");
  const Record r = record_from_json(j);
  ASSERT_TRUE(r.latency.has_value());
  EXPECT_EQ(r.latency->kind, "batch_mean");
  EXPECT_EQ(r.latency->count, 4u);
  EXPECT_EQ(r.latency->min, 407u);
  EXPECT_EQ(r.latency->p50, 407u);
  EXPECT_EQ(r.latency->max, 409u);
  EXPECT_LE(r.latency->p999, 409u);
  EXPECT_GE(r.latency->p999, 408u);
}

TEST(Output, MessagingCsvStartsWithTheReferenceColumns) {
  auto header = output::csv_header({sample()});
  const std::vector<std::string> reference = {
      "backend",     "queueName",     "duration",      "messageSize", "maxMessages", "producers", "consumers",
      "nonBlocking", "randomPayload", "latencySample", "elapsedSec",  "recv",        "bytesRecv", "msgPerSec",
      "MiBps",       "p50us",         "p90us",         "p95us",       "p99us",       "p999us"};
  ASSERT_GE(header.size(), reference.size());
  EXPECT_EQ(std::vector<std::string>(header.begin(), header.begin() + 20), reference);
  auto rows = output::csv_rows(header, {sample()});
  EXPECT_EQ(rows.substr(0, 5), "pipe,");
  EXPECT_NE(rows.find(",2000.00,"), std::string::npos) << rows;  // msgPerSec, as the reference printed it
  // Every row has as many cells as the header.
  EXPECT_EQ(std::count(rows.begin(), rows.end(), ','), long(header.size() - 1));
}

TEST(Output, CsvColumnsAfterTheReferenceOnesAreSnakeCaseAndTheReferencePercentilesAreFilled) {
  const auto header = output::csv_header({sample()});
  for (size_t i = 20; i < header.size(); ++i) {
    const std::string& c = header[i];
    EXPECT_TRUE(!c.empty() && std::islower(static_cast<unsigned char>(c[0])) &&
                std::all_of(c.begin(), c.end(),
                            [](char ch) {
                              return std::islower(static_cast<unsigned char>(ch)) ||
                                     std::isdigit(static_cast<unsigned char>(ch)) || ch == '_';
                            }))
        << "column " << i << " '" << c << "' is not snake_case (docs/csv.md)";
  }
  auto cell = [&](const std::string& row, const std::string& column) {
    const size_t at = size_t(std::find(header.begin(), header.end(), column) - header.begin());
    EXPECT_LT(at, header.size()) << column;
    size_t pos = 0;
    for (size_t i = 0; i < at; ++i) pos = row.find(',', pos) + 1;
    return row.substr(pos, row.find_first_of(",\n", pos) - pos);
  };
  // A throughput row: the one-way histogram fills the reference's percentiles (1000..1999 ns).
  Record one_way = sample();
  one_way.latency->kind = "one_way";
  const std::string ow = output::csv_rows(header, {one_way});
  EXPECT_EQ(cell(ow, "p50us"), fmt::format("{:.2f}", double(one_way.latency->p50) / 1000)) << ow;
  EXPECT_EQ(cell(ow, "p999us"), fmt::format("{:.2f}", double(one_way.latency->p999) / 1000)) << ow;
  EXPECT_EQ(cell(ow, "reference_percentiles"), "histogram");
  // The reservoir's, where one was kept.
  Record res = one_way;
  res.extra["reservoir"] = {{"size", 10},     {"p50_us", 1.5},  {"p90_us", 1.9},
                            {"p95_us", 1.95}, {"p99_us", 1.99}, {"p999_us", 2.0}};
  const std::string rs = output::csv_rows(header, {res});
  EXPECT_EQ(cell(rs, "p50us"), "1.50");
  EXPECT_EQ(cell(rs, "reference_percentiles"), "reservoir");
  // A round trip has no one-way latency: empty, its RTT in lat_p50_ns.
  const std::string rtt = output::csv_rows(header, {sample()});
  EXPECT_EQ(cell(rtt, "p50us"), "");
  EXPECT_EQ(cell(rtt, "reference_percentiles"), "");
  EXPECT_EQ(cell(rtt, "lat_kind"), "rtt");
  EXPECT_EQ(cell(rtt, "lat_p50_ns"), std::to_string(sample().latency->p50));
}

TEST(Output, CsvOfOtherSuitesHasOnlyCommonColumns) {
  auto header = output::csv_header({sample("anchors")});
  EXPECT_EQ(header.front(), "name");
}

TEST(Output, CsvAppendsUnderOneHeader) {
  std::string path = ::testing::TempDir() + "/append.csv";
  std::remove(path.c_str());
  output::append_csv(path, {sample()});
  output::append_csv(path, {sample(), sample()});
  std::string text = slurp(path);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4);
  EXPECT_EQ(text.find("backend,"), 0u);
  EXPECT_EQ(text.find("backend,", 1), std::string::npos);
}

TEST(Output, AtomicWriteLeavesNoTemporary) {
  std::string path = ::testing::TempDir() + "/atomic.json";
  output::write_file_atomic(path, "{}\n");
  EXPECT_EQ(slurp(path), "{}\n");
  EXPECT_THROW(output::write_file_atomic("/nonexistent-dir/x.json", "{}"), std::exception);
}

TEST(Output, MarkdownTableHasOneRowPerAggregate) {
  Record it = sample(), agg = sample();
  agg.run_type = "aggregate";
  std::string md = output::markdown({{"cpu", {{"model", "EPYC"}, {"logical_cpus", 2}}}}, {}, {it, agg});
  EXPECT_NE(md.find("| name | time/op |"), std::string::npos) << md;
  EXPECT_EQ(std::count(md.begin(), md.end(), '`') / 2, 1) << "only the aggregate row is listed";
  EXPECT_NE(md.find("EPYC"), std::string::npos);
}

TEST(Output, MarkdownSaysWhatEachFlagItsRowsShowMeansAndWhatToDo) {
  Record agg = sample();
  agg.run_type = "aggregate";
  EXPECT_EQ(output::markdown(nlohmann::json::object(), {}, {agg}).find("What the flags mean"),
            std::string::npos)
      << "none shown";
  agg.flags = {"non_steady", "bimodal_repetitions"};
  Record it = sample();  // a repetition, not a row of the table: its flag is not listed
  it.flags = {"steal"};
  const std::string md = output::markdown(nlohmann::json::object(), {}, {it, agg});
  const size_t at = md.find("\nWhat the flags mean, and what to do:\n");
  ASSERT_NE(at, std::string::npos) << md;
  for (Flag f : {Flag::NonSteady, Flag::BimodalRepetitions}) {
    const FlagInfo& i = flag_info(f);
    EXPECT_NE(md.find(fmt::format("- **{}** (`{}`): {} — {}\n", i.word, i.id, i.meaning, i.remedy), at),
              std::string::npos)
        << i.id << "\n"
        << md;
  }
  EXPECT_EQ(md.find(flag_info(Flag::Steal).remedy, at), std::string::npos) << md;
  // The texts' commands stay code spans.
  agg.kernel = {{"unavailable", {{"syscalls", "tracefs is not mounted"}}}};
  EXPECT_NE(output::markdown(nlohmann::json::object(), {}, {agg})
                .find("(`counters_unavailable`): the kernel refused a counter — "
                      "`ipclab env` says why and how to allow it\n"),
            std::string::npos)
      << output::markdown(nlohmann::json::object(), {}, {agg});
}

// What a result file's context and a remote side send reaches results.md as text (issue 50): no
// tag, link, image or code span a renderer would act on, and the table keeps its columns.
TEST(Output, MarkdownCarriesNoMarkupFromTheMachineOrARemoteSide) {
  Record agg = sample();
  agg.run_type = "aggregate";
  agg.name = "messaging/x`y`|z";
  agg.fail("the remote side on h: <script>alert(3)</script> [click](javascript:alert(4))");
  const nlohmann::json context = {
      {"cpu", {{"model", "<script>alert(1)</script>"}, {"logical_cpus", 2}}},
      {"kernel", "\"><img src=x onerror=alert(2)>"},
      {"warnings",
       {{{"message", "<iframe src=javascript:alert(5)>"}, {"remedy", "![x](javascript:alert(6))"}}}}};
  const std::string md = output::markdown(context, {}, {agg});
  std::string unescaped;  // md less its escaped brackets: no link or image may be left in it
  for (size_t i = 0; i < md.size(); ++i)
    if (md[i] == '\\' && i + 1 < md.size() && (md[i + 1] == '[' || md[i + 1] == ']'))
      ++i;
    else
      unescaped += md[i];
  for (const char* raw : {"<script>", "<img", "<iframe", "](", "[click"})
    EXPECT_EQ(unescaped.find(raw), std::string::npos) << raw << " in\n" << md;
  EXPECT_NE(md.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos) << md;
  EXPECT_NE(md.find("\\[click\\](javascript:alert(4))"), std::string::npos) << md;
  // The name in a code span that holds its backticks; the row has as many cells as the header.
  EXPECT_NE(md.find("``messaging/x`y`/z``"), std::string::npos) << md;
  const size_t row = md.find("| ``messaging");
  ASSERT_NE(row, std::string::npos) << md;
  const std::string line = md.substr(row, md.find('\n', row) - row);
  const std::string head = md.substr(md.find("| name"), md.find('\n', md.find("| name")) - md.find("| name"));
  auto cells = [](const std::string& l) {
    int n = 0;
    for (size_t i = 0; i < l.size(); ++i) n += l[i] == '|' && (i == 0 || l[i - 1] != '\\');
    return n;
  };
  EXPECT_EQ(cells(line), cells(head)) << line;
}

TEST(Output, ObservedPlacementTextIsInTheCsv) {
  Record r = sample();
  r.placement.sides[1].observed = {1, 0};
  r.placement.sides.push_back({"server", 1, {}, {}});
  EXPECT_EQ(observed_text(r.placement), "client0@0 server0@1+0 server1@?");
  std::string path = ::testing::TempDir() + "/observed.csv";
  std::remove(path.c_str());
  output::append_csv(path, {r});
  EXPECT_NE(slurp(path).find(",client0@0 server0@1+0 server1@?,"), std::string::npos);
}

TEST(Output, ConsoleAndMarkdownShowTheSameColumnsWithTheSameFigures) {
  auto plan = plan_of("messaging/pipe", {{"size", {"64", "1K"}}});
  Record r = record_of(plan[0]);
  r.ops = 1000;
  r.wall_s = 0.5;
  r.kernel = {{"per_op", {{"syscalls", 3.25}}}};
  const std::string md = output::markdown(nlohmann::json::object(), output::table_names(plan), {r});
  FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  output::ConsoleReporter console(f, 0);
  console.begin({{"repetitions", 1}, {"kernel_counters", true}}, plan);
  console.record(r);
  const std::string out = printed(f);
  std::fclose(f);
  std::string header = "|";
  for (auto& c : output::columns()) header += " " + c.key + " |";
  EXPECT_NE(md.find(header + "\n"), std::string::npos) << md;
  // Each figure column's cell, as columns() words it, is in both tables' row.
  const nlohmann::json j = to_json(r);
  const std::string md_row = md.substr(md.find("| `messaging/pipe size:64` |"));
  // The console's header names the suite where the Markdown's says name.
  EXPECT_EQ(out.rfind("\nmessaging ", 0), 0u) << out;
  for (auto& c : output::columns()) {
    if (c.format != "name")
      EXPECT_NE(out.find(" " + c.key), std::string::npos) << "console header lacks " << c.key << ":\n" << out;
    if (c.value.empty()) continue;
    const std::string cell = output::figure_cell(c, j);
    EXPECT_NE(md_row.find("| " + cell + " |"), std::string::npos) << c.key << " " << cell << "\n" << md;
    EXPECT_NE(out.find(" " + cell), std::string::npos) << c.key << " " << cell << "\n" << out;
  }
  EXPECT_NE(out.find("3.25"), std::string::npos) << "sys/op from the kernel counters:\n" << out;
  for (auto& c : output::columns())
    if (c.key == "p50" || c.key == "latency")
      EXPECT_EQ(output::figure_cell(c, nlohmann::json::object()), "-") << "no latency: -";
}

TEST(Registry, ListJsonHoldsEverySuiteMechanismAndParameter) {
  const nlohmann::json j = nlohmann::json::parse(output::registry_json().dump());
  const Registry& reg = Registry::get();
  std::vector<std::string> suites;
  for (auto& s : j.at("suites")) {
    suites.push_back(s.at("name").get<std::string>());
    ASSERT_EQ(s.at("columns").size(), output::columns().size());
    EXPECT_EQ(s.at("columns")[1].at("key"), "time/op");
    EXPECT_EQ(s.at("columns")[1].at("value"), nlohmann::json({"time_per_op_ns"}));
  }
  EXPECT_EQ(suites, reg.suite_names()) << "every suite, in the registry's order";
  ASSERT_EQ(j.at("mechanisms").size(), reg.mechanisms().size());
  for (size_t i = 0; i < reg.mechanisms().size(); ++i) {
    const Mechanism& m = reg.mechanisms()[i];
    const nlohmann::json& e = j.at("mechanisms")[i];
    EXPECT_EQ(e.at("suite").get<std::string>() + "/" + e.at("name").get<std::string>(), m.full_name());
    ASSERT_EQ(e.at("params").size(), m.params.size()) << m.full_name();
    for (size_t k = 0; k < m.params.size(); ++k) {
      const nlohmann::json& p = e.at("params")[k];
      EXPECT_EQ(p.at("name"), m.params[k].name);
      EXPECT_EQ(p.at("type"), type_name(m.params[k].type));
      EXPECT_EQ(p.at("default"), m.params[k].def);
      EXPECT_FALSE(p.at("help").get<std::string>().empty()) << m.full_name() << " " << m.params[k].name;
      EXPECT_EQ(p.at("quick"), nlohmann::json(m.params[k].quick));
    }
  }
  const nlohmann::json one = output::registry_json({"messaging"});
  ASSERT_EQ(one.at("suites").size(), 1u);
  for (auto& m : one.at("mechanisms")) EXPECT_EQ(m.at("suite"), "messaging");
}

TEST(Output, HumanUnits) {
  EXPECT_EQ(output::human_ns(2.5), "2.50 ns");
  EXPECT_EQ(output::human_ns(1234), "1.23 us");
  EXPECT_EQ(output::human_ns(12.5e6), "12.5 ms");
  EXPECT_EQ(output::human_rate(1.5e6), "1.50M/s");
}

TEST(OutputNames, ShowTheMechanismAndOnlyWhatVaries) {
  auto plan = plan_of("messaging/pipe", {{"size", {"64", "1K"}}});
  ASSERT_EQ(plan.size(), 2u);
  auto names = output::table_names(plan);
  EXPECT_EQ(names.of(plan[0].name), "messaging/pipe size:64");
  EXPECT_EQ(names.of(plan[1].name), "messaging/pipe size:1K") << "sizes as they are typed";
  EXPECT_NE(plan[0].name.find("latency_sample:"), std::string::npos) << "the full name keeps everything";
  // What does not vary is stated once per mechanism, nothing lost.
  ASSERT_EQ(names.fixed.size(), 1u);
  EXPECT_EQ(names.fixed[0].first, "messaging/pipe");
  EXPECT_NE(names.fixed[0].second.find("latency_sample:0"), std::string::npos) << names.fixed[0].second;
  EXPECT_EQ(names.fixed[0].second.find("size:"), std::string::npos) << names.fixed[0].second;
  EXPECT_EQ(names.of("not/planned/x:1"), "not/planned/x:1");
}

TEST(OutputNames, ASingleBenchmarkShowsItsMechanism) {
  auto plan = plan_of("harness/null", {{"placement", {"same"}}});
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(output::table_names(plan).of(plan[0].name), "harness/null");
}

TEST(OutputNames, DistinctRowsStayDistinctAndVaryingIsJudgedPerMechanism) {
  // Quick grids of several suites: many mechanisms, parameters swept in some and fixed in others.
  std::vector<PlannedBenchmark> all;
  for (auto* suite : {"fileio", "messaging", "pingpong", "anchors"}) {
    auto p = plan_of(suite, {}, Preset::Quick);
    all.insert(all.end(), p.begin(), p.end());
  }
  auto names = output::table_names(all);
  std::set<std::string> shown;
  for (auto& b : all) {
    const std::string& name = names.of(b.name);
    EXPECT_EQ(name.rfind(b.mech->full_name(), 0), 0u) << name;
    EXPECT_LE(name.size(), b.name.size());
    shown.insert(name);
    // A parameter is shown exactly when its mechanism's planned values differ.
    for (auto& [k, v] : b.params.items()) {
      std::set<std::string> values;
      for (auto& o : all)
        if (o.mech == b.mech) values.insert(o.params.str(k));
      EXPECT_EQ(name.find(" " + k + ":") != std::string::npos, values.size() > 1) << name << " / " << k;
    }
  }
  EXPECT_EQ(shown.size(), all.size()) << "two rows of the table look alike";
}

TEST(OutputReporters, JsonReporterWritesTheJsonDocument) {
  auto plan = plan_of("messaging/pipe", {{"size", {"64", "1K"}}});
  std::vector<Record> records = {record_of(plan[0]), record_of(plan[1])};
  const nlohmann::json context = {{"kernel", "x"}, {"repetitions", 1}};
  const std::string path = ::testing::TempDir() + "/reporter.json";
  std::remove(path.c_str());
  output::JsonReporter json("--json", path, false);
  json.open();
  json.begin(context, plan);
  for (auto& r : records) json.record(r);
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "written at the end, not before";
  json.end(records);
  EXPECT_EQ(slurp(path), output::json_document(context, records));
}

TEST(OutputReporters, AnUnwritableTargetIsRefusedWhenTheReporterIsMade) {
  EXPECT_THROW(output::JsonReporter("--json", "/nonexistent-dir/x.json", false), UsageError);
  EXPECT_THROW(output::CsvReporter("/nonexistent-dir/x.csv", {"messaging"}, false), UsageError);
  const std::string other = ::testing::TempDir() + "/other-columns.csv";
  std::remove(other.c_str());
  output::append_csv(other, {sample("anchors")});
  EXPECT_THROW(output::CsvReporter(other, {"messaging"}, false), UsageError) << "its header is another mix";
}

TEST(OutputReporters, CsvReporterAppendsWhatAppendCsvAppends) {
  auto plan = plan_of("messaging/pipe", {{"size", {"64", "1K"}}});
  std::vector<Record> records = {record_of(plan[0]), record_of(plan[1])};
  const std::string by_reporter = ::testing::TempDir() + "/reporter.csv";
  const std::string by_function = ::testing::TempDir() + "/function.csv";
  std::remove(by_reporter.c_str());
  std::remove(by_function.c_str());
  output::CsvReporter csv(by_reporter, {"messaging"}, false);
  csv.open();
  csv.begin({}, plan);
  csv.end(records);
  output::append_csv(by_function, records);
  EXPECT_EQ(slurp(by_reporter), slurp(by_function));
  EXPECT_NE(slurp(by_reporter).find(plan[1].name), std::string::npos) << "the full name is the key";
}

TEST(OutputReporters, MarkdownShowsTableNamesAndStatesTheFixedParametersOnce) {
  auto plan = plan_of("messaging/pipe", {{"size", {"64", "1K"}}});
  std::vector<Record> records = {record_of(plan[0]), record_of(plan[1])};
  const std::string path = ::testing::TempDir() + "/reporter.md";
  output::MarkdownReporter md("--markdown", path, false);
  md.open();
  md.begin({{"repetitions", 1}}, plan);
  md.end(records);
  const std::string text = slurp(path);
  EXPECT_NE(text.find("| `messaging/pipe size:64` |"), std::string::npos) << text;
  EXPECT_NE(text.find("| `messaging/pipe size:1K` |"), std::string::npos) << text;
  EXPECT_EQ(text.find(plan[0].name), std::string::npos) << "no full name in the table";
  auto fixed = text.find("- `messaging/pipe`: `");
  ASSERT_NE(fixed, std::string::npos) << text;
  EXPECT_NE(text.find("latency_sample:0", fixed), std::string::npos) << text;
}

TEST(OutputReporters, ConsoleShowsOneRowPerPointUnderItsSuitesHeaderAndEachRepetitionWithVerbose) {
  auto plan = plan_of("messaging/pipe", {{"size", {"64", "1K"}}});
  std::vector<Record> reps = {record_of(plan[0], 0), record_of(plan[0], 1)};
  for (bool verbose : {false, true}) {
    FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    output::ConsoleReporter console(f, 0, verbose);
    console.begin({{"repetitions", 2}}, plan);
    console.record(reps[0]);
    EXPECT_EQ(printed(f).find("pipe size:64 ") != std::string::npos, verbose)
        << "a repetition's row only with --verbose:\n"
        << printed(f);
    console.record(reps[1]);
    console.record(aggregate_median(reps));
    const std::string out = printed(f);
    std::fclose(f);
    // The suite's header names it; its rows show the mechanism and what varies.
    EXPECT_EQ(out.rfind("\nmessaging ", 0), 0u) << out;
    EXPECT_NE(out.find(verbose ? "\nmessaging/pipe size:64 (median) " : "\nmessaging/pipe size:64 "),
              std::string::npos)
        << out;
    EXPECT_EQ(out.find("latency_sample"), std::string::npos) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), verbose ? 6 : 4)
        << "blank, header, rule, " << (verbose ? "three rows" : "one row") << ":\n"
        << out;
  }
}

TEST(OutputReporters, ConsoleNamesEachRowsLatencyKindAndEndsWithWhatTheyMean) {
  auto plan = plan_of("messaging/pipe", {{"size", {"64", "1K"}}});
  FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  output::ConsoleReporter console(f, 100);
  console.begin({{"repetitions", 1}}, plan);
  Record rtt = record_of(plan[0]), one_way = record_of(plan[1]);
  one_way.latency->kind = "one_way";
  one_way.flags = {"non_steady"};
  console.record(rtt);
  console.record(one_way);
  console.end({rtt, one_way});
  const std::string out = printed(f);
  std::fclose(f);
  EXPECT_NE(out.find(" latency "), std::string::npos) << "the header names the column:\n" << out;
  EXPECT_NE(out.find(" round trip "), std::string::npos) << out;
  EXPECT_NE(out.find(" one-way+q "), std::string::npos) << out;
  EXPECT_NE(out.find("\n  round trip: a request and its reply"), std::string::npos) << out;
  EXPECT_NE(out.find("\n  one-way+q: sent to received, the time queued"), std::string::npos) << out;
  EXPECT_NE(out.find("\n  non-steady: "), std::string::npos) << "a flag shown names its remedy:\n" << out;
  for (size_t at = 0, next; at < out.size(); at = next + 1) {
    next = out.find('\n', at);
    if (next == std::string::npos) next = out.size();
    // The legend lines are prose; every table line fits the 100 columns.
    if (out.compare(at, 2, "  ") != 0)
      EXPECT_LE(columns_of(out.substr(at, next - at)), 100u) << out.substr(at, next - at);
  }
}

TEST(OutputReporters, ConsoleNeverCutsANameTooLongForTheTerminal) {
  // fileio's quick grid sweeps several parameters: its names outgrow a 90-column terminal.
  auto plan = plan_of("fileio/psync", {}, Preset::Quick);
  auto names = output::table_names(plan);
  ASSERT_GT(plan.size(), 1u);
  FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  output::ConsoleReporter console(f, 90);
  console.begin({{"repetitions", 1}}, plan);
  for (auto& b : plan) console.record(record_of(b));
  const std::string out = printed(f);
  std::fclose(f);
  size_t long_names = 0;
  for (auto& b : plan) {
    // Each name whole at the start of a line (under its suite's header); one too
    // long for the line is alone on its line, its figures under it.
    const std::string name = names.of(b.name);
    const size_t at = out.find("\n" + name);
    ASSERT_NE(at, std::string::npos) << name << "\n" << out;
    if (out.compare(at + 1 + name.size(), 1, "\n") == 0) ++long_names;
  }
  EXPECT_GT(long_names, 0u) << "some names are too long for 90 columns:\n" << out;
  for (size_t at = 0, next; at < out.size(); at = next + 1) {
    next = out.find('\n', at);
    const std::string line = out.substr(at, next - at);
    if (line.find("  ok") != std::string::npos || line.rfind("fileio ", 0) == 0 || line.rfind("---", 0) == 0)
      EXPECT_LE(columns_of(line), 90u) << line;
  }
}

TEST(OutputReporters, ConsoleLinesFitTheWidthAStatusOrAReasonContinuesIndented) {
  auto plan = plan_of("messaging/pipe", {{"size", {"64", "1K", "64K"}}});
  Record flagged = record_of(plan[0]), skipped = record_of(plan[1]), plain = record_of(plan[2]);
  flagged.flags = {"non_steady", "bimodal", "steal", "short_window"};
  flagged.kernel = {{"unavailable", {{"syscalls", "tracefs is not mounted"}}}};
  skipped.status = Status::Skipped;
  skipped.error = "the library is not installed here: " + std::string(40, 'x') + " " +
                  "and a long reason that goes on, as a peer's or a kernel's can, for many words, " +
                  "naming paths such as /usr/lib/x86_64-linux-gnu/" + std::string(90, 'y') + ".so and more";
  for (size_t width : {80u, 100u}) {  // the figures alone take 78 columns: 80 is the least
    FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    output::ConsoleReporter console(f, width);
    console.begin({{"repetitions", 1}}, plan);
    for (auto* r : {&flagged, &skipped, &plain}) console.record(*r);
    console.end({flagged, skipped, plain});
    const std::string out = printed(f);
    std::fclose(f);
    EXPECT_EQ(wider_than(out, width), "") << width << " columns:\n" << out;
    // Nothing lost: the status whole, its continuations indented (words joined again by a space;
    // a word longer than a line, cut, by nothing).
    std::string joined;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("    ", 0) == 0)
        joined += (line.size() > 4 && !std::isspace(uint8_t(line[4])) ? " " : "") + line.substr(4);
      else
        joined += "\n" + line;
    }
    EXPECT_NE(joined.find(status_text(flagged)), std::string::npos) << joined;
    const std::string reason = status_text(skipped);
    std::string compact = joined, want = reason;
    std::erase(compact, ' ');
    std::erase(want, ' ');
    EXPECT_NE(compact.find(want), std::string::npos) << joined;
    // Each flag shown, once at the end, with what to do.
    for (Flag fl :
         {Flag::NonSteady, Flag::Bimodal, Flag::Steal, Flag::ShortWindow, Flag::CountersUnavailable})
      EXPECT_NE(joined.find(fmt::format("{}: {}: {}", flag_info(fl).word, flag_info(fl).meaning,
                                        std::string(flag_info(fl).remedy).substr(0, 20))),
                std::string::npos)
          << flag_info(fl).id << "\n"
          << joined;
    EXPECT_EQ(joined.find(flag_info(Flag::BimodalRepetitions).meaning), std::string::npos) << "not shown";
  }
}

TEST(OutputReporters, WrapTextBreaksAfterItsSeparatorAndNeverPassesTheWidth) {
  EXPECT_EQ(output::wrap_text("ab  ", "one, two, three", 12, 4, ", "), "ab  one,\n    two,\n    three");
  // A lead that leaves the first piece no room: it starts the next line.
  EXPECT_EQ(output::wrap_text(std::string(10, '.') + "  ", "ok, x", 12, 4, ", "), "..........\n    ok, x");
  // A piece longer than a line, between its words; a word longer than a line, cut.
  EXPECT_EQ(output::wrap_text("", "aa bb cc dd, e", 8, 2, ", "), "aa bb cc\n  dd, e");
  EXPECT_EQ(output::wrap_text("", "abcdefghij", 6, 2), "abcdef\n  ghij");
  EXPECT_EQ(output::wrap_text("", "±±±±±±±± ±", 8, 0), "±±±±±±±±\n±") << "characters, not bytes";
  EXPECT_EQ(output::wrap_text("x: ", "no width, one line", 0, 4, ", "), "x: no width, one line");
}

TEST(OutputReporters, ConsoleRepeatsTheFirstAnswerAtTheEnd) {
  auto plan = plan_of("messaging/pipe", {{"size", {"64", "1K"}}});
  plan[0].first = "First answer: pipes";  // as the default preset marks a suite's first answer
  FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  output::ConsoleReporter console(f, 100);
  console.begin({{"repetitions", 1}}, plan);
  const std::vector<Record> records = {record_of(plan[0]), record_of(plan[1])};
  for (auto& r : records) console.record(r);
  console.end(records);
  const std::string out = printed(f);
  std::fclose(f);
  const size_t again = out.find("\nFirst answer: pipes (again)\n");
  ASSERT_NE(again, std::string::npos) << out;
  EXPECT_EQ(out.rfind("\nThe rest of the run\n"), out.find("\nThe rest of the run\n")) << out;
  const std::string tail = out.substr(again);
  EXPECT_NE(tail.find("\nmessaging/pipe size:64 "), std::string::npos) << "its row again:\n" << out;
  EXPECT_EQ(tail.find("\nmessaging/pipe size:1K "), std::string::npos) << "only its rows:\n" << out;
}
