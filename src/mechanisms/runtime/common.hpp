#pragma once
// Shared by the runtime suite's mechanisms: one file per benchmark kind per runtime
// (<bench>_ipcrt.cpp, <bench>_asio.cpp), each a count-based workload timed by Session::measure,
// which repeats the count until the window holds --duration.
// What every run checks is the same: how many results arrived and what they add up to.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/base/params.hpp"
#include "core/stats/record.hpp"

namespace ipclab {
class Session;
}

namespace ipclab::rt {

/// What a run observed: results counted, their sum, and results that came out of order.
struct Tally {
  // count and sum kept apart: side by side, GCC 12 (-O3) pairs their two adds into one vector
  // add through memory, a store-forwarding chain that cost 1.4 ns per yield on AMD Zen — more
  // than ipcrt's yield itself — where two scalar adds cost nothing measurable.
  uint64_t count = 0, disorder = 0, sum = 0;
  /// Counts `got` where `want` was due (a channel message, a task's result).
  void take(uint64_t got, uint64_t want) {
    ++count;
    sum += got;
    disorder += got != want;
  }
};

/// Sum of 0..n-1: what n tasks returning their index, or n messages numbered from 0, add up to.
constexpr uint64_t index_sum(uint64_t n) { return n * (n - 1) / 2; }

/// The integrity verdict of `got` against the expected count and sum: a shortfall is `lost`, a
/// surplus `duplicated`, a wrong sum or an out-of-order result `corrupt`.
Integrity verify(uint64_t want_count, uint64_t want_sum, const Tally& got);

/// What a run of a bench on a count `c` (of its `n`) must show: the operations it does, and the
/// count and sum of the results it returns.
struct Expect {
  uint64_t ops, count, sum;
};
/// c operations returning their indexes 0..c-1: what spawn, switch, channel and timer return.
constexpr Expect indexed(uint64_t c) { return {c, c, index_sum(c)}; }

/// The size, in steps, of one timed batch of a body of `steps` steps: the smallest power of two (at
/// most `steps`) whose run lasts 100 times what timing it costs — a clock read (clock_read_ns) and
/// starting the body again (the intercept of the runs of 1 and 2 steps, the least of 3 each) — so
/// that timing in batches costs the run under 1%, whatever this machine's clock and the body's
/// speed. `time_ns(m)` runs the body on m steps and returns its time. The Go and Rust peers find
/// theirs the same way (peers/go/rtbench BatchUnits, peers/rust/common batch_units).
uint64_t batch_steps(uint64_t steps, const std::function<double(uint64_t)>& time_ns);

/// Runs a pass of `n` through Session::measure (warm-up, then timed passes until the window holds
/// --duration; ops = `expect(n).ops` per pass of the window). A pass runs `body` on `n` in batches
/// of batch_steps steps of `step` (found by untimed runs before the warm-up; the last batch takes
/// what is left): a batch restarts the body, so `step` keeps what `n` shapes whole — spawn's
/// `batch` of tasks in flight, a channel's `capacity`. One clock read between two batches: each
/// batch's time per op (ns) is one sample of the record's latency, kind batch_mean, and the
/// batches tile the pass. Every run's tally is verified against `expect` and folded into the
/// record's integrity (sent/received: the window's batches'); extra.batch_units is a batch's part
/// of `n`.
void measure_counted(Session& s, uint64_t n, uint64_t step, const std::function<Expect(uint64_t)>& expect,
                     const std::function<Tally(uint64_t)>& body);

/// The timeout of a peer's run (the Go and Rust peers), whose time is set by n (times pairs, if
/// the bench has them; fold_peer grows it with n when it runs the peer again to fill --duration): the
/// session's timeout plus, for the warm-up and the timed run, 20 µs per operation (the benches take 0.01–3
/// µs, so this covers a loaded machine), or 2 ms plus the delay per operation where `ms_timer` (a timer that
/// ticks in whole milliseconds: Go's netpoller, Tokio's and Monoio's wheels). Only a stuck peer reaches it.
double peer_timeout_s(const Session& s, bool ms_timer);
/// The same for `ops` operations of any count-based body (measure_counted's deadline).
double counted_timeout_s(const Session& s, double ops, bool ms_timer);

/// `n`, the count of operations, with each bench's preset grid (the same for every runtime, so
/// that `runtime/<bench>_*` runs the same points side by side).
ParamSpec spawn_n();
ParamSpec switch_n();
ParamSpec channel_n();
ParamSpec pairs_n();
ParamSpec timer_n();
/// Channel capacity, the same for both runtimes.
ParamSpec capacity_param();
/// Producer/consumer pairs of channel_pairs.
ParamSpec pairs_param();
/// Timer delay in microseconds.
ParamSpec delay_param();
/// Spawned tasks in flight at once (spawn+join goes in batches of this many).
ParamSpec batch_param();
/// How the bench's root task is driven (issue 20: measured as each runtime's authors measure
/// it): `block_on` runs it as the runtime's root future / main task (condy-bench's way: Monoio's
/// yields inside block_on), `spawned` spawns it onto the runtime's scheduler and waits for it
/// from the root, so each step goes through the run queue.
ParamSpec drive_param();
/// drive_param() as the non-switch benches take it: its quick grid only the default, so that the
/// quick preset does not double (the switch benches take both values).
ParamSpec drive_param_default_quick();
/// True when the run's `drive` is `spawned`.
bool drive_spawned(const Params& p);
/// Tasks of the many-task switch (switch_many_<rt>): N tasks yielding round-robin, n switches in
/// all, so the driver's cost per poll is shared by N tasks.
ParamSpec tasks_param();
/// The many-task switch's rule for its params ("" when they can run): n switches shared by
/// `tasks` tasks, n/tasks each (n rounded down to a multiple of tasks), so tasks may not exceed n.
std::string switch_many_check(const Params& p);
/// A many-task switch task's result: its index and the yields it did, (index + 1) * per_task when
/// it did them all; a result joined to the wrong task or a lost yield shows.
constexpr uint64_t switch_many_result(uint64_t index, uint64_t yields, uint64_t per_task) {
  return index * per_task + yields;
}

}  // namespace ipclab::rt
