#pragma once
// A session is one repetition of one benchmark. It owns the measurement: workers (threads or
// processes) coordinated through phases (warm-up, measure, stop), their CPU windows, histograms
// and integrity counters, folded into the record at the end.
#include <sys/types.h>

#include <atomic>
#include <bitset>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/base/cancel.hpp"
#include "core/base/clock.hpp"
#include "core/base/cpu.hpp"
#include "core/load/rate_trace.hpp"
#include "core/measure/antagonist.hpp"
#include "core/measure/watchdog.hpp"
#include "core/model/mechanism.hpp"
#include "core/ownership/deadline.hpp"
#include "core/stats/histogram.hpp"
#include "core/stats/record.hpp"

namespace ipclab {

namespace numa {
struct Policy;
}
namespace remote {
class Link;  // core/remote/remote.hpp, a room above: carried here, never used
}

struct RunOptions {
  double duration_s = 1.0;
  double warmup_s = 0.2;
  int repetitions = 3;
  // --repetitions auto (core/plan/runner.hpp) when ci_target_pct > 0: repeat each benchmark until the
  // 95% CI half-width of its median time per op is within ci_target_pct % of that median, from
  // kAutoMinRepetitions up to max_repetitions.
  double ci_target_pct = 0;
  int max_repetitions = 30;
  std::vector<int> cpus;  // --cpus, or every allowed CPU
  // --kernel-counters: count system calls, switches, migrations and page faults (core/measure/kcounters).
  // Off by default: the kernel's counting slows blocking round trips (docs/methodology.md).
  bool kernel_counters = false;
  // --antagonist: interference run through every measured window (core/measure/antagonist.hpp).
  std::vector<AntagonistSpec> antagonists;
  // Under antagonists, each repetition paired with a quiet one, in ABBA order (core/plan/runner.hpp:
  // run_plan); off (--unpaired) for runs that pair otherwise (`ipclab ab`'s slices).
  bool quiet_pairs = true;
  // --remote: the link to the other host (core/remote/remote.hpp), borrowed for the run from whoever
  // opened it (cmd_run; on the remote host, its link back for --remote-role client), which outlives
  // every session of the run. nullptr: both sides run here.
  remote::Link* remote = nullptr;
  double timeout_s() const { return 10.0 + 3.0 * (duration_s + warmup_s); }
};

/// The fewest repetitions --repetitions auto runs: below five the bootstrap interval of a median
/// is too coarse to be worth a stopping rule.
constexpr int kAutoMinRepetitions = 5;

enum Phase : int { kInit = 0, kWarmup = 1, kMeasure = 2, kStop = 3 };

/// The most workers one run has. Their result slots are sized to each run (Control), so this is a
/// sanity bound, not a cost: a pair or a reactor per core of a large machine, twice over.
constexpr int kMaxWorkers = 1024;
/// The CPUs a worker's observed set can name (Linux's NR_CPUS of distribution kernels).
constexpr int kMaxCpusSeen = 8192;
constexpr int kMaxPeersTracked = 16;  // producers whose sequences a consumer tracks
/// The measured window of a run_workers run is cut into this many equal time slices, each with its
/// own ops and latency figures (the record's `series`, core/stats/series.hpp).
constexpr int kSlices = 20;

/// What one worker reports. Lives in memory shared with forked workers, so it is a plain struct.
struct WorkerResult {
  Histogram hist;
  uint64_t ops = 0, bytes = 0;
  Integrity integrity;
  CpuUsage cpu;  // measured window only
  // Nanoseconds it waited on a run queue over its measured window (runnable, not running:
  // schedstat, of its thread, or of its process's threads when its CPU is the process's); -1
  // where the kernel keeps no schedstat.
  int64_t wait_ns = -1;
  std::bitset<kMaxCpusSeen> cpus_seen;  // the CPUs it was seen on
  int pinned = -1;
  // Per-producer counts seen by a consumer, checked by the coordinator against what was sent.
  uint64_t seen_count[kMaxPeersTracked] = {};
  uint64_t seen_seqsum[kMaxPeersTracked] = {};
  RateTrace rate;  // open-loop runs only (core/run/openloop.hpp)
  // Heartbeat for the stall watchdog: the worker's iteration count, a relaxed store per
  // iteration (no read-modify-write, no clock read), and the thread that runs it.
  std::atomic<uint64_t> progress{0};
  std::atomic<int> tid{0};
  std::atomic<int> finished{0};
  std::atomic<int> readied{0};  // its set-up (Worker::ready) is done: the endpoint or file opened
  uint64_t t_done = 0;          // when it finished inside the measured window (0: it did not)
  uint64_t latency_sample = 0;  // every how many operations it took latency stamps (Stamping; 0: none)
  // The worker's own measured window: when it saw the measure phase and when it saw the stop (or
  // finished), each between two of its operations — the run's window for workers of whole
  // operations (WorkerSpec::whole_ops). Atomic: the coordinator follows a process_cpu worker's.
  std::atomic<uint64_t> t_open{0}, t_close{0};
  char error[512] = {};
  // The time series: the slice this worker is in (Worker::running follows Control::slice), its
  // `ops` as it entered each slice (ops_at[0] stays 0), and the coarse image of its latency
  // histogram as it entered each slice (lat_at[0] stays empty): a slice's latencies are the
  // difference of two images. Taken at the slice boundaries, so that recording a latency costs no
  // more than it did without a series (a second histogram per latency slowed fast transports by
  // up to 14%).
  int slice = 0;
  uint64_t ops_at[kSlices] = {};
  CoarseHistogram lat_at[kSlices];

  /// Records one latency into the worker's histogram.
  void record_latency(uint64_t ns) { hist.record(ns); }
};

/// The block every worker of a session shares with the coordinator, its workers' result slots after
/// it: one per worker of the run (a WorkerResult is some 200 KB), in shared anonymous memory, so
/// that the same block serves threads and forked processes alike (make_control).
struct Control {
  std::atomic<int> phase{kInit};
  std::atomic<int> ready{0};
  std::atomic<int> abort{0};
  std::atomic<int> producers_left{0};
  std::atomic<int> consumers_left{0};
  std::atomic<int> warming{0};          // workers whose warm-up work is not done (Worker::hold_warmup)
  std::atomic<uint64_t> window_end{0};  // when the measured window closed (now_ns; 0: not yet)
  std::atomic<int> slice{0};   // the measured window's current slice, 0..kSlices-1 (set by the coordinator)
  uint64_t min_window_ns = 0;  // a whole_ops worker's window lasts at least this (--duration)
  int workers = 0;             // slots after the block
  size_t bytes = 0;            // the mapping, block and slots

  WorkerResult* slots();
  WorkerResult& slot(int i) { return slots()[i]; }
};
struct Unmap {
  void operator()(Control* c) const;
};
using ControlBlock = std::unique_ptr<Control, Unmap>;
/// A Control with `workers` slots, constructed in a new shared anonymous mapping.
ControlBlock make_control(int workers);

/// The in-worker view: phase transitions, CPU window, and the slot to report into.
class Worker {
 public:
  /// `process_cpu`: its CPU window is the process's (RUSAGE_SELF) — a forked worker, or a thread
  /// whose work runs on threads of its own; `whole_ops`: see WorkerSpec.
  Worker(Control& ctl, WorkerResult& out, bool process_cpu, bool whole_ops = false)
      : ctl_(ctl), out_(out), who_(process_cpu ? RUSAGE_SELF : RUSAGE_THREAD), whole_ops_(whole_ops) {}

  /// Call once per iteration: false once the run is over. Takes the CPU snapshots at the
  /// transitions into and out of the measured phase, and samples the CPU in use.
  bool running() {
    int ph = ctl_.phase.load(std::memory_order_acquire);
    if (ph != seen_) [[unlikely]]
      ph = transition(ph);
    if (const int sl = ctl_.slice.load(std::memory_order_relaxed); sl != slice_) [[unlikely]]
      enter_slice(sl);
    out_.progress.store(++iter_, std::memory_order_relaxed);  // the watchdog's heartbeat
    if ((iter_ & 1023) == 0) [[unlikely]]
      sample_cpu();
    return ph != kStop;
  }
  /// Announces that this worker's setup is done and waits for the coordinator's start.
  void ready();
  bool measuring() const { return seen_ == kMeasure; }
  int phase() const { return seen_; }
  /// For a worker whose warm-up is a piece of work rather than a time (a wave of sessions): call
  /// before ready(). The measured window then opens only once it has called warmed() — after
  /// --warmup, and in a run bounded by its work (Session::until_done) as soon as it has — so that
  /// no warm-up work runs inside the window.
  void hold_warmup();
  void warmed();
  /// Closes the CPU window if the worker ends before it saw the stop phase.
  void finish();
  WorkerResult& out() { return out_; }
  /// When the measured window closed, once the worker has seen the stop (Control::window_end): an
  /// open-loop sender counts what its schedule made due up to then (RateTrace::stopped).
  uint64_t window_end() const { return ctl_.window_end.load(std::memory_order_acquire); }
  /// True once the run must end at once (a side failed, died or stalled): a side that waits or
  /// spins without calling running() polls this and throws Aborted.
  bool abort_requested() const { return ctl_.abort.load(std::memory_order_relaxed) != 0; }
  /// The phase the coordinator has set now (phase() is the one this worker last took): for
  /// threads of the worker's own that follow the run without a Worker of theirs.
  int phase_now() const { return ctl_.phase.load(std::memory_order_acquire); }
  /// For the throughput pattern's ends: each producer (consumer) leaves once; true for the last
  /// of them, which then tells the consumers to stop (counts what the others received).
  bool last_producer_left() { return ctl_.producers_left.fetch_sub(1, std::memory_order_acq_rel) == 1; }
  bool last_consumer_left() { return ctl_.consumers_left.fetch_sub(1, std::memory_order_acq_rel) == 1; }
  /// Another worker's slot (by its place among the run's WorkerSpecs), for counts the last
  /// consumer checks against the producers' once they have left.
  const WorkerResult& peer_slot(int i) const { return ctl_.slot(i); }
  void sample_cpu();

 private:
  int transition(int ph);  // returns the phase the worker takes (see WorkerSpec::whole_ops)
  void enter_slice(int sl);
  Control& ctl_;
  WorkerResult& out_;
  int who_;
  bool whole_ops_;
  int seen_ = kInit;
  int slice_ = 0;  // the slice seen last (WorkerResult::slice)
  std::optional<SchedStat> schedstat() const {
    return who_ == RUSAGE_THREAD ? thread_schedstat() : process_schedstat();
  }
  void close_window();  // the window's CPU, run-queue wait and end into the slot
  uint64_t iter_ = 0;
  CpuUsage begin_;
  std::optional<SchedStat> wait_begin_;  // the run-queue wait as the window opened
  bool open_ = false;
  bool holding_ = false;  // hold_warmup() without warmed() yet
};

/// Which of a loop's operations take latency stamps (two clock reads each): every `asked`-th; or,
/// with asked 0 (`-p latency_sample=0`, the default), every one unless the two reads would cost more
/// than kShare of an operation as the warm-up timed it, and then every Nth, N the fewest that keeps
/// them within it. The clock's cost is this machine's (clock_read_ns), so a spinning ring is not
/// slowed by a quarter by its own stamps, while a kernel transport keeps every one. Without a
/// warm-up, every operation. The N used goes to the worker's slot (extra.latency_sample).
class Stamping {
 public:
  static constexpr double kShare = 0.02;
  static constexpr uint64_t kMaxEvery = 1024;
  Stamping(uint64_t asked, WorkerResult& out) : every_(asked), out_(out) { out_.latency_sample = asked; }
  /// Call once per operation with Worker::measuring() and the operation's number: whether to stamp it.
  bool timed(bool measuring, uint64_t k) {
    if (!every_) [[unlikely]] {
      if (!measuring) {
        if (!warm_ops_++) warm_start_ = now_ns();
        return false;
      }
      every_ = warm_ops_ ? every_for(double(now_ns() - warm_start_) / double(warm_ops_), clock_read_ns()) : 1;
      out_.latency_sample = every_;
    }
    return measuring && k % every_ == 0;
  }
  /// N for an operation of `op_ns` and a clock read of `clock_ns` (1 when op_ns is unknown).
  static uint64_t every_for(double op_ns, double clock_ns);

 private:
  uint64_t every_;
  WorkerResult& out_;
  uint64_t warm_ops_ = 0, warm_start_ = 0;
};

/// A worker to start: where it runs and what it does.
struct WorkerSpec {
  std::string role;
  int index = 0;
  int cpu = -1;  // -1 = unpinned
  std::function<void(Worker&)> body;
  bool process = false;  // a forked process (also when run_workers is asked for processes), else a thread
  /// Heartbeat for the stall watchdog in place of the worker's own (Worker::running): for a worker
  /// whose body cannot show progress per iteration — a pingpong guest process, whose threads
  /// answer the hosts — the count of what its work completes (see Session::worker_progress).
  std::function<uint64_t()> progress;
  /// A thread whose operations run on threads of its own (a pool, a runtime's): its CPU window is
  /// the whole process's (RUSAGE_SELF), less the coordinator's own polling over that window. At
  /// most one per run (two would each charge the whole process).
  bool process_cpu = false;
  /// Its operations are long (a cachecalc iteration: a millisecond to tens): the run's measured
  /// window is its own — from the boundary between two operations at which it saw the measure
  /// phase to the one at which it saw the stop — so that the window holds whole operations only,
  /// and lasts at least --duration (one that reaches the stop before its window does, or without
  /// having measured, measures one more operation, and so on; Control::min_window_ns). With several
  /// such workers, from the first opening to the last closing; used only when every worker of the
  /// run is one.
  bool whole_ops = false;
  /// Its ops and latencies go into its slot as they happen (Worker::running between them), so
  /// that they can be told apart by time slice. False for a worker that tallies on its own and
  /// folds the tally in at the end (fileio's, the servers' load generator): the run then has no
  /// series.
  bool series = true;
  /// A transport pattern's sender (Role::Producer) or receiver (Role::Consumer), counted for
  /// Worker::last_producer_left and last_consumer_left; none for the workers of other patterns.
  std::optional<Role> transport_role;
};

class Process;
class KernelCounters;

/// What the workers of a run_workers run reported, in the order of its WorkerSpecs: for figures
/// of a mechanism's own once the run is over.
using WorkerResults = std::span<const WorkerResult>;

/// An external process taking part in a session — a server, a pingpong guest, a peer executable:
/// started by the caller (core/process), watched by the session like a worker. Its death fails
/// the run; its progress, when given, feeds the stall watchdog; its CPU over the measured window
/// is charged to the record.
struct PeerSpec {
  std::string role;
  int index = 0;
  Process* process = nullptr;  // owned by the caller; must outlive run_workers
  int cpu = -1;                // where the caller pinned it (-1: unpinned), for the record
  /// Heartbeat: a count that grows while the peer serves (often its clients' count, since the
  /// peer's answers are what completes them). Empty: only its death is watched.
  std::function<uint64_t()> progress;
  /// Its CPU since it started (CpuUsage); empty: Process::cpu_seconds (schedstat, one figure —
  /// charged as system time). Sampled by the coordinator as the window opens and closes.
  std::function<CpuUsage()> cpu_usage;
  /// The peer may end by itself once the workers are done (a guest released by its hosts): its
  /// clean exit after every worker finished is not a death.
  bool may_exit = false;
  /// What `process` is when it is not the peer itself, for messages (a remote side's: "the local
  /// ssh to it"); "" when it is the peer.
  std::string process_is;
  /// Why the peer is gone though its process still runs ("" while it is not): a remote side gone
  /// silent behind a live ssh. Polled as its process's death is, and failing the run the same way.
  std::function<std::string()> lost;
};

class Session {
 public:
  /// The session keeps its own copies of `params` and `opts` (the caller's may go first); it
  /// borrows `mech`, the registry's, which lives as long as the process, and `rec`, the caller's
  /// record it fills, which must outlive it.
  Session(const Mechanism& mech, Params params, RunOptions opts, Record& rec)
      : mech_(mech), params_(std::move(params)), opts_(std::move(opts)), rec_(rec) {}

  const Mechanism& mechanism() const { return mech_; }
  const Params& params() const { return params_; }
  const RunOptions& options() const { return opts_; }
  Record& record() { return rec_; }

  /// Runs workers as threads (processes=false) or forked processes through warm-up and the
  /// measured window; folds their slots into the record (ops, bytes, histogram of `latency_kind`,
  /// integrity, CPU, placement). A worker that throws, dies or stalls fails the record.
  /// Returns the workers' slots for mechanism-specific checks (valid until the next call).
  ///
  /// The measured window lasts --duration, or ends earlier when every worker has finished its
  /// work (a count-bounded run): its end is then the last worker's finish. See until_done() for a
  /// run that --duration does not bound. The steps of a run are Session::Run's (session.cpp).
  WorkerResults run_workers(std::vector<WorkerSpec> workers, bool processes, const std::string& latency_kind);

  /// Adds an external process to the next run_workers (see PeerSpec); cleared by it.
  void add_peer(PeerSpec peer) { peers_.push_back(std::move(peer)); }
  /// Called on the coordinator's thread at each phase change (kWarmup, kMeasure, kStop) of the
  /// next run_workers, right after the workers can see it: for state the workers' peers read
  /// (e.g. a flag in a shared region telling an external guest the window is open).
  void on_phase(std::function<void(Phase)> f) { on_phase_ = std::move(f); }
  /// For the next run_workers: a run bounded by its work, not by time (a wave of sessions that runs
  /// to its end, whatever --duration says). Its measured window lasts until every worker has
  /// finished, at most `limit_s` (past it the record fails); its warm-up is the workers' warm-up
  /// work (Worker::hold_warmup), none when they hold none, and lasts at most `limit_s` too.
  void until_done(double limit_s) { until_done_s_ = limit_s; }
  /// CPU of each peer of the last run_workers over its measured window, in add_peer order.
  const std::vector<CpuUsage>& peer_cpu() const { return peer_cpu_; }
  /// Worker `i`'s heartbeat (Worker::running's count) in the current or last run_workers: the
  /// progress of a side whose work completes that worker's (PeerSpec::progress, WorkerSpec::
  /// progress), e.g. a guest whose answers complete its hosts' round trips.
  uint64_t worker_progress(int i) const {
    return ctl_ ? ctl_->slot(i).progress.load(std::memory_order_relaxed) : 0;
  }
  /// The last run_workers' measured window (now_ns(); both 0 when it never opened), of which
  /// record().wall_s is the length: for figures over part of it, e.g. a worker's rate from the
  /// window's start to its t_done.
  uint64_t window_begin_ns() const { return window_begin_; }
  uint64_t window_end_ns() const { return window_end_; }

  /// Runs `body` as warm-up until --warmup has passed (at least once; none when --warmup is 0),
  /// then measured: `body` again and again — each run a pass — until the window holds --duration
  /// (at least one pass), as google/benchmark grows its iterations to a minimum time. Wall time,
  /// and CPU of the whole process plus children reaped meanwhile, over the whole window. For
  /// workloads that own their threads and run a count of operations per pass. Returns the passes
  /// of the window (also the record's extra.passes): its ops are that many passes' ops.
  /// `deadline_s` (0: the session's timeout) bounds one run of `body`, beyond the phase's own time:
  /// past it the watchdog reports the workload stalled and ends the process (exit 1), rather than
  /// hang forever — a body running on the calling thread cannot be stopped any other way.
  uint64_t measure(const std::function<void()>& body, double deadline_s = 0);

  /// The value of the `placement` parameter (unpinned when the mechanism has none): the layout
  /// recorded as placement.layout.
  std::string placement() const;
  /// The CPU of `side` (0 or 1) under placement(), -1 unpinned: the pair resolve_placement() chose.
  int cpu_for(int side) const;
  /// The `memory` parameter (first_touch when the mechanism has none) resolved against where the
  /// sides run — side 0 writes, side 1 reads (core/machine/numa.hpp: numa::resolve): what the
  /// memory the sides share is placed by.
  numa::Policy memory_policy() const;
  /// The CPUs of each --antagonist (RunOptions::antagonists) from the sides' (cpu_for) and the
  /// topology; Skip when its class is missing here, when it has no CPU left, or when stress-ng is
  /// not installed. run_workload calls it after resolve_placement, before the workload's set-up;
  /// run_workers and measure then start them before each warm-up and stop them after the window.
  void resolve_antagonists();
  /// Resolves a two-sided pinned placement to its pair and records it with its measured round trip
  /// (core/machine/placement.hpp: resolve_pair); Skip when its class is missing here. The runner calls it
  /// before the workload, on the coordinator, so forked workers place themselves on the same pair.
  void resolve_placement();
  /// True when a worker thread could not be stopped: its objects must then be leaked, not freed.
  bool stuck() const { return stuck_; }
  /// Kernel counters opened before the session's threads and children (run_one): each measured
  /// window adds its counts to the record's `kernel` (Record::kernel). Null: none are taken.
  void count_kernel(const KernelCounters* k) { kernel_ = k; }
  /// Puts everything the session does outside run_workers and measure — the benchmark's set-up
  /// before them, its clean-up after — under a Deadline of the session's timeout (run_one): a
  /// set-up that hangs fails the run (exit 1) with a line naming the benchmark and what it waited
  /// for (Deadline::waiting_for), instead of hanging for ever. run_workers and measure have
  /// watchdogs of their own, which take over while they run.
  void guard_setup();
  /// Runs a repetition's workload `body` as every repetition is run (run_one, and the remote side of
  /// --remote-role client): its set-up guarded (guard_setup), the placement resolved, then `body`;
  /// a Skip marks the record skipped with its reason, any other error fails it. Bad input
  /// (UsageError) goes to the caller: it is the run's, not the record's.
  void run_workload(const std::function<void()>& body);

 private:
  class Run;  // one run_workers run in its named steps (session.cpp)
  void arm_guard(const char* phase);
  /// While run_workers or measure runs its own watchdog: the set-up guard is off, and the
  /// clean-up's is armed once it returns, on every path.
  struct CleanupGuardAfter {
    explicit CleanupGuardAfter(Session& s) : s(s) { s.guard_.reset(); }
    ~CleanupGuardAfter() { s.arm_guard("clean-up"); }
    Session& s;
  };
  std::unique_ptr<Deadline> guard_;
  bool guarded_ = false;
  const Mechanism& mech_;  // borrowed: the registry's, for the process's life
  const Params params_;    // owned
  const RunOptions opts_;  // owned (its `remote` link borrowed, as RunOptions says)
  Record& rec_;            // borrowed: the caller's record, which outlives the session
  // The control block, unmapped with the session — unless a worker thread is stuck, which may
  // still write into it.
  ControlBlock ctl_;
  bool stuck_ = false;
  std::vector<PeerSpec> peers_;
  std::vector<CpuUsage> peer_cpu_;
  std::function<void(Phase)> on_phase_;
  double until_done_s_ = 0;  // > 0: the next run is bounded by its work (until_done)
  uint64_t window_begin_ = 0, window_end_ = 0;
  const KernelCounters* kernel_ = nullptr;
  std::vector<Noise::Plan> noise_plans_;  // resolve_antagonists'

 public:
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
};

}  // namespace ipclab
