#pragma once
// Parameters shared by many mechanisms, declared once so that their names, help and presets
// agree everywhere. The harness patterns read them by these names.
#include <string>
#include <vector>

#include "core/base/params.hpp"

namespace ipclab::std_params {

/// throughput (one-way, for a duration) or roundtrip (request and echo; `pingpong`, its old
/// name, is still accepted).
ParamSpec pattern();
/// closed (the suite's closed-loop client) or rate (open loop, below): echo and servers.
ParamSpec closed_or_rate();
/// throughput | roundtrip: pattern() for transports that offer no open loop (bulk).
ParamSpec throughput_or_roundtrip();
/// The open-loop parameters, each only with pattern=rate: rate (aggregate per second, or auto:
/// the capacity search), arrivals, pace, seed, and slo_p99_us (only with rate=auto).
std::vector<ParamSpec> rate_params();
/// True when `p` asks for open-loop load (pattern=rate).
bool is_rate(const Params& p);
/// Why `p`'s messages are too small for its pattern ("" when they are not): throughput carries a
/// sequence and a timestamp (24 bytes), rate also the intended send time (32).
std::string size_problem(const Params& p);
/// True when `p` asks for round trips: pattern=roundtrip, or no pattern parameter at all.
bool is_roundtrip(const Params& p);
/// Message size in bytes.
ParamSpec size(std::vector<std::string> quick, std::vector<std::string> full, int64_t max = 65536);
/// Workers as threads of one process or as separate processes.
ParamSpec mode(std::vector<std::string> quick = {"threads", "processes"}, std::vector<std::string> full = {});
/// same / cross / unpinned (see placement.hpp); `choices` narrows it for single-sided benchmarks.
ParamSpec placement(std::vector<std::string> choices = {"same", "cross", "unpinned"},
                    std::vector<std::string> quick = {"same", "cross"});
/// Timestamp every Nth message (ours; the reference timestamps every message).
ParamSpec latency_sample();
/// Size of a reservoir of one-way latencies (the reference's latencySample); 0 = none.
ParamSpec latency_reservoir();
/// Incompressible payload derived from a hash instead of a counter (the reference's randomPayload).
ParamSpec random();
/// Where the memory two sides share goes on a machine of several NUMA nodes: first_touch (no
/// policy, the default), writer, reader, interleave, node:N (core/machine/numa.hpp, which checks the
/// value against the machine and places the memory; the planner refuses what it cannot place).
ParamSpec memory();
/// full: the sender writes and the receiver checks every byte; sample: the header, the tail and one
/// word per 4 KiB page (core/load/message.hpp) — what touching every byte costs, or a large message
/// moved without being touched.
ParamSpec verify(std::vector<std::string> quick = {"full"});

}  // namespace ipclab::std_params
