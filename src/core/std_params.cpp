#include "core/std_params.hpp"

namespace ipclab::std_params {

ParamSpec pattern() {
  // `pingpong` was this value's name until it became a suite's name too (the pingpong suite).
  return {.name = "pattern",
          .type = ParamType::String,
          .def = "roundtrip",
          .choices = {"throughput", "roundtrip"},
          .aliases = {{"pingpong", "roundtrip"}},
          .help =
              "throughput: producers send for the duration, one-way latency from the send "
              "timestamp; roundtrip (or its old name pingpong): round trips, RTT",
          .quick = {"throughput", "roundtrip"}};
}

bool is_roundtrip(const Params& p) { return p.str_or("pattern", "roundtrip") == "roundtrip"; }

ParamSpec size(std::vector<std::string> quick, std::vector<std::string> full, int64_t max) {
  return {.name = "size",
          .type = ParamType::Size,
          .def = "64",
          .help = "message size in bytes (both sides touch every byte)",
          .quick = std::move(quick),
          .full = std::move(full),
          .min = 1,
          .max = max};
}

ParamSpec mode() {
  return {.name = "mode",
          .type = ParamType::String,
          .def = "threads",
          .choices = {"threads", "processes"},
          .help = "sides as threads of one process, or as separate processes",
          .quick = {"threads", "processes"}};
}

ParamSpec placement(std::vector<std::string> choices, std::vector<std::string> quick) {
  return {.name = "placement",
          .type = ParamType::String,
          .def = choices.front(),
          .choices = choices,
          .help =
              "same: all sides on the first --cpus CPU; cross: the two sides on the first two; "
              "unpinned: the scheduler decides",
          .quick = std::move(quick),
          .full = choices};
}

ParamSpec latency_sample() {
  return {.name = "latency_sample",
          .type = ParamType::Int,
          .def = "1",
          .help = "timestamp every Nth message for the latency histogram (1 = every message)",
          .min = 1,
          .max = 1'000'000};
}

ParamSpec latency_reservoir() {
  return {.name = "latency_reservoir",
          .type = ParamType::Int,
          .def = "0",
          .help =
              "also keep a uniform sample of N one-way latencies (the POSIX mq benchmark's "
              "latencySample reservoir) for its CSV percentiles; 0 = off",
          .min = 0,
          .max = 1'000'000};
}

ParamSpec random() {
  return {.name = "random",
          .type = ParamType::Bool,
          .def = "0",
          .help = "payload derived from a hash (incompressible) instead of a counter"};
}

}  // namespace ipclab::std_params
