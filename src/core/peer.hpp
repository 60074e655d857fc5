#pragma once
// Peer executables (Go, Rust, ...): started by the harness, they print one result record per
// line on stdout (docs/json-schema.md). The harness starts them as every child (core/process),
// pins them, times them out, measures their CPU from outside (wait4), and validates every line.
#include <string>
#include <vector>

#include "core/cpu.hpp"
#include "core/record.hpp"

namespace ipclab {

class Session;

struct PeerRun {
  std::vector<Record> records;
  CpuUsage cpu;             // the peer and its children, whole run
  std::string error;        // empty when the peer exited 0 with valid lines only
  std::string stderr_tail;  // last lines of its stderr, for the error message
};

/// Runs `argv` pinned to `cpu` (-1: unpinned); kills it after `timeout_s`.
PeerRun run_peer(const std::vector<std::string>& argv, int cpu, double timeout_s);

/// Runs a peer for the session's benchmark: passes `args` (what the peer needs beyond the
/// parameters, e.g. which bench), every parameter as --name=value plus --duration, --warmup and
/// --cpus, and folds its single record into the session's record (the peer's extra is merged
/// into what the mechanism already put there). `timeout_s` 0 is the session's
/// (set by --duration); a count-based peer, whose time is set by its n, passes its own.
void fold_peer(Session& s, const std::string& executable, int cpu, const std::vector<std::string>& args = {},
               double timeout_s = 0);

}  // namespace ipclab
