// The messaging suite's declarations: its CSV starts with the POSIX mq benchmark's exact
// columns (reference 002), each with that program's meaning, so its rows line up with that
// project's results; our own figures follow in columns of our own.
#include <fmt/format.h>

#include "core/model/mechanism.hpp"
#include "core/stats/record.hpp"

namespace ipclab {
namespace {

// The first 20 columns mean what the reference's (its mq_benchmark.cpp) meant; ours follow.
std::vector<std::string> row(const Record& r) {
  auto hist_us = [&](uint64_t Latency::*field) {
    return r.latency ? fmt::format("{:.3f}", double((*r.latency).*field) / 1000.0) : std::string();
  };
  // The reference's percentiles came from its reservoir (it wrote nan without one): ours from the
  // reservoir where latency_reservoir > 0 kept samples, else from the full histogram of the
  // one-way latencies (within 1%); a round trip has no one-way latency, and leaves them empty.
  // reference_percentiles says which.
  const nlohmann::json res = r.extra.value("reservoir", nlohmann::json::object());
  const bool from_res = res.contains("p50_us");
  const bool from_hist = !from_res && r.latency && r.latency->count && r.latency->kind == "one_way";
  auto ref_us = [&](const char* key, uint64_t Latency::*field) {
    if (from_res) return res.contains(key) ? fmt::format("{:.2f}", res[key].get<double>()) : std::string();
    return from_hist ? fmt::format("{:.2f}", double((*r.latency).*field) / 1000.0) : std::string();
  };
  const double secs = r.wall_s;
  // It named its one mechanism `mqueue`; the other transports have no reference name.
  const std::string backend = r.mechanism == "posix_mq" ? "mqueue" : r.mechanism;
  return {backend, r.extra.value("object", "-"),
          r.extra.contains("duration_s") ? fmt::format("{}", r.extra["duration_s"].get<double>()) : "",
          r.params.str_or("size", ""),
          // The depth asked for, as the reference wrote it (it capped the queue silently).
          r.params.str_or("queue_depth", ""), r.params.str_or("producers", "1"),
          r.params.str_or("consumers", "1"), r.params.str_or("nonblocking", "0"),
          r.params.str_or("random", "0"), std::to_string(res.value("size", uint64_t(0))),
          fmt::format("{:.6f}", secs), std::to_string(r.ops), std::to_string(r.bytes),
          fmt::format("{:.2f}", secs > 0 ? double(r.ops) / secs : 0.0),
          fmt::format("{:.2f}", secs > 0 ? double(r.bytes) / 1048576.0 / secs : 0.0),
          ref_us("p50_us", &Latency::p50), ref_us("p90_us", &Latency::p90), ref_us("p95_us", &Latency::p95),
          ref_us("p99_us", &Latency::p99), ref_us("p999_us", &Latency::p999),
          // Ours.
          from_res    ? "reservoir"
          : from_hist ? "histogram"
                      : "",
          // The stride used (latency_sample=0 lets the client choose it), else the one asked.
          r.extra.contains("latency_sample") ? fmt::format("{}", r.extra["latency_sample"].get<uint64_t>())
                                             : r.params.str_or("latency_sample", "1"),
          r.extra.contains("queue_depth_used") ? fmt::format("{}", r.extra["queue_depth_used"].get<int64_t>())
                                               : "",
          hist_us(&Latency::p50), hist_us(&Latency::p90), hist_us(&Latency::p95), hist_us(&Latency::p99),
          hist_us(&Latency::p999)};
}

IPCLAB_REGISTER(Suite{
    .name = "messaging",
    .help = "every way to pass a message: pipes, sockets, message queues, shared memory, in-process queues",
    .plots = {"rate_vs_size", "bandwidth_vs_size", "roundtrip_cdf", "cpu_per_message", "placement_rates"},
    .scaling = {"producers"},
    .tables = with_open_loop_tables({{.id = "throughput",
                                      .title = "Throughput: producers send as fast as consumers take",
                                      .where = "pattern=throughput",
                                      .figures = {{"messages/s", "rate"},
                                                  {"MiB/s", "rate_number:MiB_per_s"},
                                                  {"one-way p50", "latency:p50"},
                                                  {"one-way p99", "latency:p99"},
                                                  {"CPU/message", "cpu"},
                                                  {"ctx/message", "ctx"}}},
                                     {.id = "roundtrip",
                                      .title = "Round trips: one request in flight, echoed back",
                                      .where = "pattern=roundtrip",
                                      .figures = {{"round trips/s", "rate"},
                                                  {"RTT p50", "latency:p50"},
                                                  {"RTT p99", "latency:p99"},
                                                  {"CPU/round trip", "cpu"},
                                                  {"ctx/round trip", "ctx"}}}},
                                    "message", "each producer sends on a schedule"),
    .answers = {"small_message_latency", "small_message_rate"},
    .headline = true,
    .csv_columns = {"backend", "queueName", "duration", "messageSize", "maxMessages", "producers",
                    "consumers", "nonBlocking", "randomPayload", "latencySample", "elapsedSec", "recv",
                    "bytesRecv", "msgPerSec", "MiBps", "p50us", "p90us", "p95us", "p99us", "p999us",
                    // Ours (docs/csv.md): where the reference's percentiles came from, the timestamp
                    // stride, the depth used, percentiles of the full histogram.
                    "reference_percentiles", "latency_sample", "queue_depth_used", "hist_p50_us",
                    "hist_p90_us", "hist_p95_us", "hist_p99_us", "hist_p999_us"},
    .csv_row = row,
    .first =
        Suite::FirstAnswer{
            .title = "First answer: the main transports with 64-byte messages, both sides on one CPU (same) "
                     "and on two (cross), round trips and throughput",
            .mechanisms = {"pipe", "unix_stream", "tcp", "udp", "posix_mq", "shm_spsc"},
            .grid = {{"size", {"64"}},
                     {"placement", {"same", "cross"}},
                     {"pattern", {"roundtrip", "throughput"}}},
        },
});

}  // namespace
}  // namespace ipclab
