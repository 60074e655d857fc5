#pragma once
// Parameters shared by many mechanisms, declared once so that their names, help and presets
// agree everywhere. The harness patterns read them by these names.
#include <string>
#include <vector>

#include "core/params.hpp"

namespace ipclab::std_params {

/// throughput (one-way, for a duration) or roundtrip (request and echo; `pingpong`, its old
/// name, is still accepted).
ParamSpec pattern();
/// True when `p` asks for round trips: pattern=roundtrip, or no pattern parameter at all.
bool is_roundtrip(const Params& p);
/// Message size in bytes.
ParamSpec size(std::vector<std::string> quick, std::vector<std::string> full, int64_t max = 65536);
/// Workers as threads of one process or as separate processes.
ParamSpec mode();
/// same / cross / unpinned (see placement.hpp); `choices` narrows it for single-sided benchmarks.
ParamSpec placement(std::vector<std::string> choices = {"same", "cross", "unpinned"},
                    std::vector<std::string> quick = {"same", "cross"});
/// Timestamp every Nth message (ours; the reference timestamps every message).
ParamSpec latency_sample();
/// Size of a reservoir of one-way latencies (the reference's latencySample); 0 = none.
ParamSpec latency_reservoir();
/// Incompressible payload derived from a hash instead of a counter (the reference's randomPayload).
ParamSpec random();

}  // namespace ipclab::std_params
