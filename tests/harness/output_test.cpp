#include "core/output/output.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/mechanism.hpp"

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
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST(Output, JsonRecordHasTheSchemaShape) {
  auto j = nlohmann::json::parse(output::json_document({{"kernel", "x"}}, {sample()}));
  EXPECT_EQ(j["schema_version"], 1);
  auto& b = j["benchmarks"][0];
  for (const char* k : {"name", "suite", "mechanism", "params", "run_type", "repetition", "status",
                        "error", "ops", "bytes", "wall_s", "time_per_op_ns", "rates", "latency_ns",
                        "cpu", "placement", "integrity", "extra"})
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
}

TEST(Output, MessagingCsvStartsWithTheReferenceColumns) {
  auto header = output::csv_header({sample()});
  const std::vector<std::string> reference = {
      "backend", "queueName", "duration", "messageSize", "maxMessages", "producers", "consumers",
      "nonBlocking", "randomPayload", "latencySample", "elapsedSec", "recv", "bytesRecv",
      "msgPerSec", "MiBps", "p50us", "p90us", "p95us", "p99us", "p999us"};
  ASSERT_GE(header.size(), reference.size());
  EXPECT_EQ(std::vector<std::string>(header.begin(), header.begin() + 20), reference);
  auto rows = output::csv_rows(header, {sample()});
  EXPECT_EQ(rows.substr(0, 5), "pipe,");
  EXPECT_NE(rows.find(",2000.0,"), std::string::npos) << rows;  // msgPerSec
  // Every row has as many cells as the header.
  EXPECT_EQ(std::count(rows.begin(), rows.end(), ','), long(header.size() - 1));
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
  std::string md = output::markdown({{"cpu", {{"model", "EPYC"}, {"logical_cpus", 2}}}}, {it, agg});
  EXPECT_NE(md.find("| benchmark |"), std::string::npos);
  EXPECT_EQ(std::count(md.begin(), md.end(), '`') / 2, 1) << "only the aggregate row is listed";
  EXPECT_NE(md.find("EPYC"), std::string::npos);
}

TEST(Output, ObservedPlacementTextIsTheSameInCsvAndMarkdown) {
  Record r = sample();
  r.placement.sides[1].observed = {1, 0};
  r.placement.sides.push_back({"server", 1, {}, {}});
  EXPECT_EQ(observed_text(r.placement), "client0@0 server0@1+0 server1@?");
  std::string path = ::testing::TempDir() + "/observed.csv";
  std::remove(path.c_str());
  output::append_csv(path, {r});
  EXPECT_NE(slurp(path).find(",client0@0 server0@1+0 server1@?,"), std::string::npos);
  std::string md = output::markdown(nlohmann::json::object(), {r});
  EXPECT_NE(md.find("cross client0@0 server0@1+0 server1@?"), std::string::npos);
}

TEST(Output, HumanUnits) {
  EXPECT_EQ(output::human_ns(2.5), "2.50 ns");
  EXPECT_EQ(output::human_ns(1234), "1.23 us");
  EXPECT_EQ(output::human_ns(12.5e6), "12.5 ms");
  EXPECT_EQ(output::human_rate(1.5e6), "1.50M/s");
}
