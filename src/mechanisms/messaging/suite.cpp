// The messaging suite's declarations: its CSV starts with the POSIX mq benchmark's exact
// columns (reference 002), so its rows line up with that project's results.
#include <fmt/format.h>

#include "core/mechanism.hpp"
#include "core/record.hpp"

namespace ipclab {
namespace {

std::vector<std::string> row(const Record& r) {
  auto us = [&](uint64_t Latency::*field) {
    return r.latency ? fmt::format("{:.3f}", double((*r.latency).*field) / 1000.0) : std::string();
  };
  double secs = r.wall_s;
  return {r.mechanism, r.extra.value("object", "-"),
          r.extra.contains("duration_s") ? fmt::format("{}", r.extra["duration_s"].get<double>()) : "",
          r.params.str_or("size", ""),
          // The depth actually used (capped to kernel limits) when the transport reported it.
          r.extra.contains("queue_depth_used") ? fmt::format("{}", r.extra["queue_depth_used"].get<int64_t>())
                                               : r.params.str_or("queue_depth", ""),
          r.params.str_or("producers", "1"), r.params.str_or("consumers", "1"),
          r.params.str_or("nonblocking", "0"), r.params.str_or("random", "0"),
          r.params.str_or("latency_sample", "1"), fmt::format("{:.6f}", secs), std::to_string(r.ops),
          std::to_string(r.bytes), fmt::format("{:.1f}", secs > 0 ? double(r.ops) / secs : 0.0),
          fmt::format("{:.3f}", secs > 0 ? double(r.bytes) / secs / 1048576.0 : 0.0), us(&Latency::p50),
          us(&Latency::p90), us(&Latency::p95), us(&Latency::p99), us(&Latency::p999)};
}

IPCLAB_REGISTER(Suite{
    .name = "messaging",
    .help = "every way to pass a message: pipes, sockets, message queues, shared memory, in-process queues",
    .csv_columns = {"backend",    "queueName", "duration",    "messageSize",   "maxMessages",
                    "producers",  "consumers", "nonBlocking", "randomPayload", "latencySample",
                    "elapsedSec", "recv",      "bytesRecv",   "msgPerSec",     "MiBps",
                    "p50us",      "p90us",     "p95us",       "p99us",         "p999us"},
    .csv_row = row,
});

}  // namespace
}  // namespace ipclab
