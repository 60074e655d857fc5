#include "core/model/std_params.hpp"

#include <algorithm>

namespace ipclab::std_params {

ParamSpec pattern() {
  // `pingpong` was this value's name until it became a suite's name too (the pingpong suite).
  return {.name = "pattern",
          .type = ParamType::String,
          .def = "roundtrip",
          .choices = {"throughput", "roundtrip", "rate"},
          .aliases = {{"pingpong", "roundtrip"}},
          .help =
              "throughput: producers send for the duration, one-way latency from the send "
              "timestamp; roundtrip (or its old name pingpong): round trips, RTT; rate: producers "
              "send on a schedule (-p rate=), one-way latency from each message's intended time",
          .quick = {"throughput", "roundtrip"}};
}

ParamSpec throughput_or_roundtrip() {
  auto p = pattern();
  p.choices = {"throughput", "roundtrip"};
  p.help =
      "throughput: the sender streams messages, one-way latency from each send; roundtrip: each message is "
      "echoed back before the next, RTT";
  return p;
}

ParamSpec closed_or_rate() {
  return {.name = "pattern",
          .type = ParamType::String,
          .def = "closed",
          .choices = {"closed", "rate"},
          .help =
              "closed: the client's connections each keep their requests in flight back to back; "
              "rate: requests start on a schedule (-p rate=), latency from each one's intended time"};
}

std::vector<ParamSpec> rate_params() {
  const std::pair<std::string, std::vector<std::string>> on_rate{"pattern", {"rate"}};
  return {
      {.name = "rate",
       .type = ParamType::Rate,
       .def = "10k",
       .choices = {"auto"},
       .help = "offered load per second, all senders together (e.g. 10k, 2.5M); auto: the highest "
               "rate whose corrected p99 stays within slo_p99_us (bisection over short trials)",
       .max = 100'000'000,
       .only_with = on_rate},
      {.name = "arrivals",
       .type = ParamType::String,
       .def = "fixed",
       .choices = {"fixed", "poisson"},
       .help = "fixed gaps of 1/rate, or Poisson arrivals (exponential gaps from -p seed=)",
       .only_with = on_rate},
      {.name = "pace",
       .type = ParamType::String,
       .def = "spin",
       .choices = {"spin", "sleep", "busy"},
       .help = "how a sender waits for a send time: sleep until a margin before it, then spin (the margin: "
               "the wake-up lateness p99.9, measured before the run); sleep only; or busy: spin all the "
               "way (no wake-up delay, a whole CPU per sender)",
       .only_with = on_rate},
      {.name = "seed",
       .type = ParamType::Int,
       .def = "1",
       .help = "seed of the Poisson arrivals (sender i uses seed + i)",
       .min = 0,
       .max = 1'000'000'000'000,
       .only_with = on_rate},
      {.name = "slo_p99_us",
       .type = ParamType::Double,
       .def = "unloaded",
       .choices = {"unloaded"},
       .help = "rate=auto: the corrected p99 latency bound, microseconds; unloaded: 3 x the "
               "transport's own p99 at a low rate (the search's first trial, 1000/s)",
       .min = 1,
       .max = 10'000'000,
       .only_with = {"rate", {"auto"}}}};
}

bool is_rate(const Params& p) { return p.str_or("pattern", "") == "rate"; }

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

ParamSpec mode(std::vector<std::string> quick, std::vector<std::string> full) {
  return {.name = "mode",
          .type = ParamType::String,
          .def = "threads",
          .choices = {"threads", "processes"},
          .help = "sides as threads of one process, or as separate processes",
          .quick = std::move(quick),
          .full = std::move(full)};
}

ParamSpec placement(std::vector<std::string> choices, std::vector<std::string> quick) {
  // Where two sides can cross CPUs they can also be placed by class (core/machine/placement.hpp); the
  // preset grids keep their layouts (a class the machine lacks would only add skipped points).
  std::vector<std::string> full = choices;
  const bool two = std::find(choices.begin(), choices.end(), "cross") != choices.end();
  if (two)
    for (const char* c : {"smt", "llc", "cross_llc", "cross_numa"}) choices.push_back(c);
  return {
      .name = "placement",
      .type = ParamType::String,
      .def = choices.front(),
      .choices = choices,
      .help = two ? "same: all sides on the first --cpus CPU; cross: the two sides on the first two; smt, "
                    "llc, cross_llc, cross_numa: on the pair of --cpus in that class (one core, one "
                    "last-level cache, one NUMA node, two nodes) nearest its median measured round trip "
                    "(`ipclab topo`); unpinned: the scheduler decides"
                  : "same: all sides on the first --cpus CPU; unpinned: the scheduler decides",
      .quick = std::move(quick),
      .full = full};
}

ParamSpec latency_sample() {
  return {.name = "latency_sample",
          .type = ParamType::Int,
          .def = "0",
          .help =
              "timestamp every Nth message for the latency histogram (1 = every message); 0 = every "
              "message unless the two clock reads would cost over 2% of one, as the warm-up timed it "
              "(the N used: extra.latency_sample)",
          .min = 0,
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

std::string size_problem(const Params& p) {
  const int64_t size = p.i64("size");
  if (is_rate(p) && size < 32)
    return "pattern=rate needs size >= 32 (sequence, timestamps and intended send time travel in the "
           "message)";
  if (!is_rate(p) && !is_roundtrip(p) && size < 24)
    return "throughput needs size >= 24 (sequence and timestamp travel in the message)";
  return "";
}

ParamSpec memory() {
  return {.name = "memory",
          .type = ParamType::String,
          .def = "first_touch",
          .choices = {"first_touch", "writer", "reader", "interleave", "node:N"},
          .help =
              "NUMA node of the memory the two sides share: first_touch: where it is first touched (no "
              "policy); writer / reader: bound to the node of the writer's (producer, client, host) / "
              "reader's (consumer, server, guest) CPU; interleave: page by page over every node with "
              "memory; node:N: bound to node N. The record states where the kernel put the pages "
              "(extra.memory_nodes)"};
}

ParamSpec verify(std::vector<std::string> quick) {
  return {.name = "verify",
          .type = ParamType::String,
          .def = "full",
          .choices = {"full", "sample"},
          .help =
              "full: the sender writes and the receiver checks every byte; sample: the header, the tail "
              "and one word per 4 KiB page (what touching every byte costs)",
          .quick = std::move(quick),
          .full = {"full", "sample"}};
}

}  // namespace ipclab::std_params
