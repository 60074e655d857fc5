#pragma once
// Peer executables (Go, Rust, ...): started by the harness, they print one result record per
// line on stdout (docs/json-schema.md). The harness starts them as every child (core/process),
// pins them, times them out, measures their CPU from outside (wait4), and validates every line.
#include <cstdint>
#include <string>
#include <vector>

#include "core/base/cpu.hpp"
#include "core/stats/record.hpp"

namespace ipclab {

class Session;

struct PeerRun {
  std::vector<Record> records;
  CpuUsage cpu;             // the peer and its children, whole run
  std::string error;        // empty when the peer exited 0 with valid lines only
  std::string stderr_tail;  // last lines of its stderr, for the error message
  // Steal (core/base/cpu.hpp) read as its window opened and closed — a phased peer's, as `measure`
  // and `stop` were sent (`of_window`) — else as it started and once it was reaped: its whole run,
  // which holds its window. `span_s`: the time between the two readings.
  struct {
    StealReading from, to;
    double span_s = 0;
    bool of_window = false;
  } steal;
};

/// The harness's phases for a duration-driven peer, so that the harness's clock bounds its
/// window: the peer prints `ready` as its first line on stdout once set up (then warms up); the
/// harness writes `measure` on the peer's stdin `warmup_s` later and `stop` `duration_s` after
/// that, then closes it (an end of input is a stop too). The peer's window is the one between the
/// two lines as it sees them (docs/json-schema.md#peers).
struct PeerPhases {
  double warmup_s = 0, duration_s = 0;
};

/// Runs `argv` pinned to `cpu` (-1: unpinned); kills it after `timeout_s`. With `phases`, drives
/// its phases (PeerPhases). It is watched for progress like every side of a run (core/measure/watchdog,
/// with the stall limit of a `window_s` window): a peer prints its record only at the end, so its
/// progress is read from outside — its threads' time on CPU (schedstat), which grows while it
/// computes and at every wake-up, and stands still while it is stopped or blocked for good. A peer
/// that stands still past the limit is killed and the run fails naming it.
PeerRun run_peer(const std::vector<std::string>& argv, int cpu, double timeout_s, double window_s,
                 const PeerPhases* phases = nullptr);

/// The steal of a peer's window into `rec` (its wall_s set), over `cpu` (-1: every CPU this process
/// may use, as the peer's affinity is): over the window a phased peer's lines bounded; else over
/// its whole run, the window taken to lose the run's share (extra.steal_source says which).
void fold_peer_steal(Record& rec, const PeerRun& run, int cpu);

/// The count a count-based run of `n` operations whose window lasted `window_s` grows to, so that
/// its next window holds `duration_s` (at most `max_n`): as google/benchmark grows its iterations.
uint64_t count_to_fill(uint64_t n, double window_s, double duration_s, uint64_t max_n);

/// Runs a peer for the session's benchmark: passes `args` (what the peer needs beyond the
/// parameters, e.g. which bench), every parameter as --name=value plus --duration, --warmup and
/// --cpus, and folds its single record into the session's record (the peer's extra is merged
/// into what the mechanism already put there). `timeout_s` 0 is the session's
/// (set by --duration); a count-based peer, whose time is set by its n, passes its own. A
/// duration-driven peer (`phased`) gets its phases from the session's --warmup and --duration
/// (PeerPhases); a count-based one times its n operations itself, and is run again with a larger
/// n (count_to_fill) while its window is shorter than --duration, up to n's bound (extra.sized).
void fold_peer(Session& s, const std::string& executable, int cpu, const std::vector<std::string>& args = {},
               double timeout_s = 0, bool phased = false);

}  // namespace ipclab
