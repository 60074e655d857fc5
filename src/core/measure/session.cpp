#include "core/measure/session.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <thread>
#include <utility>

#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/machine/numa.hpp"
#include "core/machine/placement.hpp"
#include "core/machine/topology.hpp"
#include "core/measure/antagonist.hpp"
#include "core/measure/kcounters.hpp"
#include "core/measure/watchdog.hpp"
#include "core/ownership/deadline.hpp"
#include "core/ownership/journal.hpp"
#include "core/process/process.hpp"
#include "core/stats/series.hpp"

namespace ipclab {

namespace {

extern "C" void on_wakeup(int) {}  // only there to make blocking calls return EINTR

void install_wakeup_signal() {
  static bool done = false;
  if (done) return;
  struct sigaction sa {};
  sa.sa_handler = on_wakeup;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocked read must return EINTR
  sigaction(SIGUSR1, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a dead peer shows up as EPIPE, not as our death
  done = true;
}

void copy_error(WorkerResult& slot, const char* what) {
  std::strncpy(slot.error, what, sizeof slot.error - 1);
}

std::vector<int> cpus_of(const std::bitset<kMaxCpusSeen>& seen) {
  std::vector<int> v;
  const size_t n = seen.count();
  for (int c = 0; c < kMaxCpusSeen && v.size() < n; ++c)
    if (seen.test(size_t(c))) v.push_back(c);
  return v;
}

// Where a Control's slots begin: after the block, aligned as a WorkerResult.
constexpr size_t kSlotsAt =
    (sizeof(Control) + alignof(WorkerResult) - 1) / alignof(WorkerResult) * alignof(WorkerResult);

// Adds the steal of `cpus` between readings `a` and `b` over the window just measured (rec.wall_s)
// to the record's.
void add_window_steal(Record& rec, const StealReading& a, const StealReading& b,
                      const std::vector<int>& cpus) {
  if (const auto w = steal_between(a, b, cpus, rec.wall_s)) add_steal(rec, *w);
}

}  // namespace

int Worker::transition(int ph) {
  // A worker of whole operations that reaches the stop before its own window holds --duration
  // (Control::min_window_ns) — or without having measured one operation, the window being shorter
  // than it — measures the next one: it sees the stop after it.
  if (ph == kStop && whole_ops_ && !ctl_.abort.load(std::memory_order_relaxed)) {
    const uint64_t open = out_.t_open.load(std::memory_order_relaxed);
    if (!open || now_ns() - open < ctl_.min_window_ns) ph = kMeasure;
  }
  if (ph == kMeasure && !open_) {
    begin_ = cpu_usage(who_);
    wait_begin_ = schedstat();
    out_.t_open.store(now_ns(), std::memory_order_release);
    open_ = true;
  } else if (ph == kStop && open_) {
    close_window();
  }
  seen_ = ph;
  return ph;
}

void Worker::close_window() {
  out_.cpu += cpu_usage(who_) - begin_;
  if (const auto end = schedstat(); end && wait_begin_)
    out_.wait_ns = std::max<int64_t>(0, out_.wait_ns) + int64_t(end->wait_ns - wait_begin_->wait_ns);
  out_.t_close.store(now_ns(), std::memory_order_release);
  open_ = false;
}

// What the slot counts from here on is the new slice's: its ops count as it entered each slice
// it passed (a slice it never saw while running gets none of its ops).
void Worker::enter_slice(int sl) {
  const CoarseHistogram lat = CoarseHistogram::of(out_.hist);
  for (int k = slice_ + 1; k <= sl && k < kSlices; ++k) {
    out_.ops_at[k] = out_.ops;
    out_.lat_at[k] = lat;
  }
  slice_ = out_.slice = std::min(sl, kSlices - 1);
}

void Worker::hold_warmup() {
  if (holding_) return;
  holding_ = true;
  ctl_.warming.fetch_add(1, std::memory_order_acq_rel);
}

void Worker::warmed() {
  if (!holding_) return;
  holding_ = false;
  ctl_.warming.fetch_sub(1, std::memory_order_acq_rel);
}

void Worker::finish() {
  warmed();  // a body that returned without its warm-up done holds the window no longer
  if (seen_ == kMeasure || ctl_.phase.load(std::memory_order_acquire) == kMeasure) out_.t_done = now_ns();
  if (open_) close_window();
  sample_cpu();
}

void Worker::sample_cpu() {
  int c = current_cpu();
  if (c >= 0 && c < kMaxCpusSeen) out_.cpus_seen.set(size_t(c));
}

void Worker::ready() {
  sample_cpu();
  out_.readied.store(1, std::memory_order_release);
  ctl_.ready.fetch_add(1, std::memory_order_acq_rel);
  while (ctl_.phase.load(std::memory_order_acquire) == kInit) {
    if (ctl_.abort.load(std::memory_order_relaxed)) throw Aborted();
    sleep_ns(50'000);
  }
}

void sleep_ns(uint64_t ns) {
  timespec ts{time_t(ns / 1'000'000'000u), long(ns % 1'000'000'000u)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

double clock_read_ns() {
  static const double cost = [] {
    constexpr int kReads = 1000;
    double best = 1e9;
    for (int batch = 0; batch < 5; ++batch) {
      const uint64_t t0 = now_ns();
      uint64_t last = t0;
      for (int i = 0; i < kReads; ++i) last = now_ns();
      best = std::min(best, double(last - t0) / kReads);
    }
    return best;
  }();
  return cost;
}

uint64_t Stamping::every_for(double op_ns, double clock_ns) {
  if (!(op_ns > 0)) return 1;
  const double n = std::ceil(2 * clock_ns / (kShare * op_ns));
  return uint64_t(std::clamp(n, 1.0, double(kMaxEvery)));
}

void Session::guard_setup() {
  guarded_ = true;
  arm_guard("set-up");
}

void Session::run_workload(const std::function<void()>& body) {
  guard_setup();
  try {
    resolve_placement();
    resolve_antagonists();
    body();
  } catch (const UsageError&) {
    throw;
  } catch (const Skip& e) {
    rec_.status = Status::Skipped;
    rec_.error = e.what();
  } catch (const std::exception& e) {
    rec_.fail(e.what());
  }
}

void Session::arm_guard(const char* phase) {
  guard_.reset();  // one Deadline at a time
  if (!guarded_) return;
  // At least a minute: a set-up may write a test file or start a daemon (their steps that wait
  // longer say so: Deadline::waiting_for, Deadline::progress).
  const double limit = std::max(opts_.timeout_s(), 60.0);
  guard_ = std::make_unique<Deadline>(limit, fmt::format("FAILED {} (repetition {}): stalled: its {} did not "
                                                         "finish within {:.1f} s",
                                                         rec_.name, rec_.repetition, phase, limit));
}

WorkerResult* Control::slots() {
  return reinterpret_cast<WorkerResult*>(reinterpret_cast<char*>(this) + kSlotsAt);
}

void Unmap::operator()(Control* c) const {
  const size_t bytes = c->bytes;
  for (int i = 0; i < c->workers; ++i) c->slot(i).~WorkerResult();
  c->~Control();
  munmap(c, bytes);
}

ControlBlock make_control(int workers) {
  const size_t bytes = kSlotsAt + size_t(workers) * sizeof(WorkerResult);
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap control");
  ControlBlock c(new (mem) Control());
  c->bytes = bytes;
  for (int i = 0; i < workers; ++i) new (&c->slot(i)) WorkerResult();
  c->workers = workers;
  return c;
}

Session::~Session() {
  guard_.reset();
  if (stuck_) (void)ctl_.release();  // a stuck worker thread may still write into it
}

std::string Session::placement() const { return params_.str_or("placement", "unpinned"); }

numa::Policy Session::memory_policy() const {
  return numa::resolve(params_.str_or("memory", "first_touch"), cpu_for(0), cpu_for(1), topo::here(),
                       numa::nodes_here());
}

int Session::cpu_for(int side) const {
  if (!rec_.placement.pair.empty() && (side == 0 || side == 1)) return rec_.placement.pair[size_t(side)];
  return cpu_for_side(placement(), side, opts_.cpus);
}

void Session::resolve_placement() {
  const std::string layout = placement();
  if (layout != "cross" && !is_class_layout(layout)) return;
  const ResolvedPair p = resolve_pair(layout, opts_.cpus);
  if (p.a < 0) return;
  rec_.placement.pair = {p.a, p.b};
  rec_.placement.c2c_ns = p.c2c_ns;
  rec_.placement.basis = p.basis;
}

void Session::resolve_antagonists() {
  noise_plans_.clear();
  for (const AntagonistSpec& spec : opts_.antagonists) {
    check_antagonist_runnable(spec);
    Noise::Plan p{spec, {}};
    if (!antagonist_on_sides(spec))  // quota acts on the sides themselves: no CPUs of its own
      p.target.cpus =
          resolve_antagonist_cpus(spec.where, cpu_for(0), cpu_for(1), allowed_cpus(), topo::here());
    // stress-ng's own --timeout, a net under the harness's stop: past every deadline of the session.
    p.target.life_s = 3 * opts_.timeout_s() + 60;
    p.target.scratch = ipc::run_dir();
    noise_plans_.push_back(std::move(p));
  }
}

namespace {
// How long an antagonist may take to start its workers.
constexpr double kNoiseStartS = 10;
// The one wording of a point whose window was not under the noise asked for.
std::string not_under_noise(const std::string& why) { return "not measured under noise: " + why; }
}  // namespace

// One run_workers run, in the order its steps take: start the antagonists and wait until they run, start the
// workers, wait until they are ready, warm up, the measured window (cut into slices), close it, stop and join
// the workers, take the coordinator's own polling out of a whole-process CPU window, fold the slots into the
// record. The coordinator's thread runs every step; between them it watches the children (a
// death), the heartbeats (a stall) and, with a process_cpu worker, its own CPU.
class Session::Run {
 public:
  Run(Session& s, Control& ctl, std::vector<WorkerSpec> workers, int process_cpu);
  ~Run();
  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  void start_noise();
  void attach_noise();
  void start_workers();
  void await_ready();
  void warm_up();
  void measure_window();
  void close_window();
  void stop_workers();
  void charge_coordinator();
  void fold(const std::string& latency_kind);

 private:
  bool aborted() const { return ctl_.abort.load() != 0; }
  void abort() { ctl_.abort.store(1); }
  void set_phase(Phase ph);
  bool run_body(int i, bool proc);
  CpuUsage peer_usage(size_t k) const;
  bool workers_finished() const;
  bool workers_exited() const;
  void check_children();
  void watch_stall();
  void follow_window();
  void watch_until(uint64_t until, bool early);
  void give_up_on_workers(uint64_t now, uint64_t join_deadline);
  std::vector<int> placed_cpus() const;
  void fold_series(const std::string& latency_kind);

  Session& s_;
  Record& rec_;
  Control& ctl_;
  std::vector<WorkerSpec> workers_;
  const int n_;
  const std::vector<PeerSpec> peers_;          // add_peer's, for this run
  const std::function<void(Phase)> on_phase_;  // on_phase's, for this run
  const double until_done_;                    // until_done's, for this run (0: none)
  const int process_cpu_;                      // the thread worker charged the process's CPU
  std::vector<std::thread> threads_;
  std::vector<Process> procs_;  // forked workers: one not reaped is killed and reaped on every path
  std::vector<std::string> peer_death_;
  // When each peer that may exit by itself was first seen gone cleanly while a worker had not yet
  // finished (0: not seen so): a host that left DONE is still returning when its guest, which saw
  // it, is already gone — a race, not a death, unless the worker never finishes.
  std::vector<uint64_t> clean_exit_ns_;
  Watchdog wd_;
  // A process_cpu worker's window charges this thread's polling too: this thread's CPU between
  // the moments it sees that window open and close (each within one poll) is taken out again.
  CpuUsage own_open_, own_close_;
  int own_seen_ = 0;                  // 1: the opening seen, 2: the closing too
  uint64_t t_begin_ = 0, t_end_ = 0;  // the measured window (now_ns; t_begin_ 0: it never opened)
  std::vector<uint64_t> slice_at_;    // the boundaries between slices the window passed (now_ns)
  std::vector<CpuUsage> peer_cpu0_;
  KernelCounters::Reading kernel0_, kernel1_;  // at the window's opening and closing
  StealReading steal0_, steal1_;               // likewise
  std::vector<int> steal_cpus_;                // the CPUs whose steal is read (placed_cpus)
  bool whole_ = false;                         // the window is the whole_ops workers' own
  bool stopped_ = false;
  bool timed_out_ = false;  // the workers outlived the timeout after the stop
  // The antagonists (--antagonist), from before the workers start to the window's close; stopped
  // with the run on every path.
  std::unique_ptr<Noise> noise_;
};

Session::Run::Run(Session& s, Control& ctl, std::vector<WorkerSpec> workers, int process_cpu)
    : s_(s),
      rec_(s.rec_),
      ctl_(ctl),
      workers_(std::move(workers)),
      n_(int(workers_.size())),
      peers_(std::exchange(s.peers_, {})),
      on_phase_(std::exchange(s.on_phase_, nullptr)),
      until_done_(std::exchange(s.until_done_s_, 0.0)),
      process_cpu_(process_cpu),
      threads_(size_t(n_)),
      procs_(size_t(n_)),
      peer_death_(peers_.size()),
      wd_(s.opts_.duration_s),
      peer_cpu0_(peers_.size()) {
  s.peer_cpu_.assign(peers_.size(), CpuUsage{});
  for (auto& w : workers_)
    if (w.transport_role == Role::Producer)
      ctl_.producers_left.fetch_add(1);
    else if (w.transport_role == Role::Consumer)
      ctl_.consumers_left.fetch_add(1);
}

// Every path out of a run, an exception between its steps included, stops and joins its workers.
Session::Run::~Run() {
  if (!stopped_) {
    abort();
    stop_workers();
  }
}

void Session::Run::set_phase(Phase ph) {
  ctl_.phase.store(ph, std::memory_order_release);
  if (on_phase_) on_phase_(ph);
}

// Worker i's body, on its thread or in its process: what it throws is its slot's error and aborts
// the run.
bool Session::Run::run_body(int i, bool proc) {
  WorkerSpec& spec = workers_[size_t(i)];
  WorkerResult& slot = ctl_.slot(i);
  Worker w(ctl_, slot, proc || spec.process_cpu, spec.whole_ops);
  slot.tid.store(int(gettid()), std::memory_order_relaxed);
  try {
    slot.pinned = spec.cpu;
    pin_current_thread(spec.cpu);
    spec.body(w);
    w.finish();
    return true;
  } catch (const Aborted&) {
    copy_error(slot, "aborted");
  } catch (const std::exception& e) {
    copy_error(slot, e.what());
  }
  abort();
  return false;
}

// A peer's CPU so far, as its spec says to read it.
CpuUsage Session::Run::peer_usage(size_t k) const {
  if (peers_[k].cpu_usage) return peers_[k].cpu_usage();
  CpuUsage u;
  u.sys_s = peers_[k].process->cpu_seconds();
  return u;
}

bool Session::Run::workers_finished() const {
  for (int i = 0; i < n_; ++i)
    if (!ctl_.slot(i).finished.load(std::memory_order_acquire)) return false;
  return true;
}

// Every worker gone: its process reaped, its thread's body returned.
bool Session::Run::workers_exited() const {
  for (int i = 0; i < n_; ++i)
    if (workers_[size_t(i)].process ? procs_[size_t(i)].running() : !ctl_.slot(i).finished.load())
      return false;
  return true;
}

// Before the workers and their warm-up, so that the noise runs through all of it and its start-up
// is over before the window opens: each antagonist started, and waited for until its workers run.
void Session::Run::start_noise() {
  if (s_.noise_plans_.empty()) return;
  try {
    noise_ = std::make_unique<Noise>(s_.noise_plans_);
  } catch (...) {  // Skip or an error: the run ends before any worker began (none is waited for)
    for (int i = 0; i < n_; ++i) ctl_.slot(i).finished.store(1, std::memory_order_release);
    stopped_ = true;
    set_abort_flag(nullptr);
    throw;
  }
  if (auto why = noise_->await_running(kNoiseStartS); !why.empty()) {
    rec_.fail(not_under_noise(why));
    abort();
  }
}

// Once every worker exists and before their warm-up: the sides' tasks to the antagonists that act
// on them (quota): each thread worker's thread, each forked worker's and peer's process. One that
// cannot take them fails the point (it would not be measured under noise).
void Session::Run::attach_noise() {
  if (!noise_ || aborted()) return;
  SideTasks sides;
  for (int i = 0; i < n_; ++i)
    if (workers_[size_t(i)].process)
      sides.processes.push_back(procs_[size_t(i)].pid());
    else
      sides.threads.push_back(ctl_.slot(i).tid.load());
  for (auto& p : peers_) sides.processes.push_back(p.process->pid());
  try {
    noise_->attach(sides);
  } catch (const std::exception& e) {
    rec_.fail(not_under_noise(e.what()));
    abort();
  }
}

// Forked workers first, then threads: a process forked while this process's worker threads run
// can inherit a lock one of them held (the allocator's: under ASan a forked pingpong guest
// deadlocked on its first allocation), and its copy is never released. Then the watchdog over
// every worker's heartbeat (Worker::running), from the warm-up to the end of the drain (a worker
// that finished its work is no longer watched), and over the peers that have one, from the
// measured window on until every worker is done.
void Session::Run::start_workers() {
  for (int i = 0; i < n_; ++i) {
    if (!workers_[size_t(i)].process) continue;
    try {
      // Unpinned here: the worker pins itself (run_body), so that its slot says where.
      procs_[size_t(i)] = Process::fork(-1, [this, i] {
        const bool ok = run_body(i, true);
        ctl_.slot(i).finished.store(1, std::memory_order_release);
        return ok ? 0 : 1;
      });
    } catch (const std::system_error&) {
      abort();
      copy_error(ctl_.slot(i), "fork failed");
      break;
    }
  }
  for (int i = 0; i < n_; ++i) {
    if (workers_[size_t(i)].process) continue;
    if (aborted()) {  // a fork failed: the run is over before it started
      ctl_.slot(i).finished.store(1, std::memory_order_release);
      continue;
    }
    threads_[size_t(i)] = std::thread([this, i] {
      run_body(i, false);
      ctl_.slot(i).finished.store(1, std::memory_order_release);
    });
  }
  for (int i = 0; i < n_; ++i) {
    const WorkerSpec& w = workers_[size_t(i)];
    std::function<uint64_t()> beat = w.progress;
    if (!beat) beat = [this, i] { return ctl_.slot(i).progress.load(std::memory_order_relaxed); };
    wd_.watch(w.role, w.index, w.process ? procs_[size_t(i)].pid() : -1, -1, std::move(beat),
              [this, i] { return ctl_.slot(i).finished.load(std::memory_order_acquire) != 0; });
  }
  for (auto& peer : peers_)
    if (peer.progress)
      wd_.watch(
          peer.role, peer.index, peer.process->pid(), -1, peer.progress,
          [this] { return workers_finished(); }, peer.process_is);
}

// A forked worker that exits before finishing its work is a dead peer, and so is a peer process
// that ends (unless it may end once every worker is done, and they are).
void Session::Run::check_children() {
  if (noise_ && !aborted())
    if (auto why = noise_->lost(); !why.empty()) {
      rec_.fail(not_under_noise(why));
      abort();
    }
  for (int i = 0; i < n_; ++i) {
    Process& p = procs_[size_t(i)];
    if (!p.running() || p.alive()) continue;
    if (!p.clean()) {
      if (!ctl_.slot(i).error[0]) copy_error(ctl_.slot(i), ("process " + p.death()).c_str());
      abort();
    }
  }
  for (size_t k = 0; k < peers_.size(); ++k) {
    const PeerSpec& peer = peers_[k];
    Process& p = *peer.process;
    if (!peer_death_[k].empty()) continue;
    if (clean_exit_ns_.size() < peers_.size()) clean_exit_ns_.resize(peers_.size(), 0);
    if (!clean_exit_ns_[k]) {  // not already seen gone (reaped then), waiting for its workers
      if (!p.running()) continue;
      if (p.alive()) {
        if (const std::string why = peer.lost ? peer.lost() : ""; !why.empty()) {
          peer_death_[k] = fmt::format("{} {}: {}", peer.role, peer.index, why);
          abort();
        }
        continue;
      }
    }
    if (peer.may_exit && p.clean()) {
      if (workers_finished()) {
        clean_exit_ns_[k] = 0;
        continue;
      }
      // Its workers get the stall limit to finish, as a worker that stands still does.
      const uint64_t now = now_ns();
      if (!clean_exit_ns_[k]) clean_exit_ns_[k] = now;
      if (double(now - clean_exit_ns_[k]) * 1e-9 < stall_limit_s(s_.opts_.duration_s)) continue;
    }
    peer_death_[k] = peer.process_is.empty()
                         ? fmt::format("{} {} {}", peer.role, peer.index, p.death())
                         : fmt::format("{} {}: {} {}", peer.role, peer.index, peer.process_is, p.death());
    abort();
  }
}

// A stall fails the run with the watchdog's line and the counts known at that moment (the
// record's integrity, folded at the end, carries them too).
void Session::Run::watch_stall() {
  if (aborted()) return;
  std::string why = wd_.check();
  if (why.empty()) return;
  uint64_t sent = 0, received = 0;
  for (int i = 0; i < n_; ++i) {
    sent += ctl_.slot(i).integrity.sent;
    received += ctl_.slot(i).integrity.received + ctl_.slot(i).integrity.corrupt;
  }
  if (sent) why += fmt::format("; by then {} sent, {} received", sent, received);
  rec_.fail(why);
  abort();
}

void Session::Run::follow_window() {
  if (process_cpu_ < 0 || own_seen_ == 2) return;
  const WorkerResult& s = ctl_.slot(process_cpu_);
  if (own_seen_ == 0 && s.t_open.load(std::memory_order_acquire)) {
    own_open_ = cpu_usage(RUSAGE_THREAD);
    own_seen_ = 1;
  }
  if (own_seen_ == 1 && s.t_close.load(std::memory_order_acquire)) {
    own_close_ = cpu_usage(RUSAGE_THREAD);
    own_seen_ = 2;
  }
}

// Sleeps until `until` (ns), watching, and wakes early when the run aborts or, with `early`, once
// every worker has finished.
void Session::Run::watch_until(uint64_t until, bool early) {
  while (now_ns() < until && !aborted()) {
    check_children();
    watch_stall();
    follow_window();
    if (early && workers_finished()) return;
    // Every 5 ms: a count-bounded window ends at its last worker's t_done, not at this poll, and
    // a shorter period costs a worker that shares this CPU involuntary switches.
    sleep_ns(std::min<uint64_t>(5'000'000, until - std::min(until, now_ns())));
  }
}

// Until every worker has called Worker::ready (10 s at most); those still in their set-up are
// named.
void Session::Run::await_ready() {
  const uint64_t ready_deadline = now_ns() + 10'000'000'000ull;
  while (ctl_.ready.load() < n_ && !aborted() && now_ns() < ready_deadline) {
    check_children();
    sleep_ns(200'000);
  }
  if (ctl_.ready.load() < n_ && !aborted()) {
    std::string who;
    for (int i = 0; i < n_; ++i)
      if (!ctl_.slot(i).readied.load(std::memory_order_acquire) && !ctl_.slot(i).finished.load())
        who += fmt::format(
            "{}{} {}{}", who.empty() ? "" : ", ", workers_[size_t(i)].role, workers_[size_t(i)].index,
            workers_[size_t(i)].process ? fmt::format(" (pid {})", procs_[size_t(i)].pid()) : "");
    rec_.fail(
        fmt::format("{} of {} workers did not become ready within 10 s{}{}", n_ - ctl_.ready.load(), n_,
                    who.empty() ? "" : ": still in their set-up (opening an endpoint or a file): ", who));
    abort();
  }
  for (int i = 0; i < n_; ++i)
    if (!workers_[size_t(i)].process)
      wd_.set_tid(size_t(i), ctl_.slot(i).tid.load(std::memory_order_relaxed));
}

// --warmup (none in a run bounded by its work), then until the workers whose warm-up is a piece of
// work (Worker::hold_warmup) have done it, so that none of it runs inside the window.
void Session::Run::warm_up() {
  if (aborted()) return;
  set_phase(kWarmup);
  watch_until(now_ns() + uint64_t((until_done_ > 0 ? 0.0 : s_.opts_.warmup_s) * 1e9), false);
  const double warm_limit_s = until_done_ > 0 ? until_done_ : s_.opts_.timeout_s();
  const uint64_t warm_limit = now_ns() + uint64_t(warm_limit_s * 1e9);
  while (ctl_.warming.load() > 0 && !aborted()) {
    if (now_ns() > warm_limit) {
      rec_.fail(
          fmt::format("stalled: the workers' warm-up work did not finish within {:.1f} s", warm_limit_s));
      abort();
      break;
    }
    check_children();
    watch_stall();
    sleep_ns(500'000);
  }
}

// The CPUs the run's sides may run on, whose steal is the run's: those they are pinned to when every
// worker and peer is pinned; else every CPU this process may use (its affinity mask, which workers
// and peers inherit: the whole machine's `cpu` line, less CPUs a taskset kept it off).
std::vector<int> Session::Run::placed_cpus() const {
  std::vector<int> cpus;
  for (auto& w : workers_) cpus.push_back(w.cpu);
  for (auto& p : peers_) cpus.push_back(p.cpu);
  if (cpus.empty() || std::any_of(cpus.begin(), cpus.end(), [](int c) { return c < 0; }))
    return allowed_cpus();
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

// Opens the window and watches it for --duration (or until every worker is done). The time
// series: this thread waits for the window's end anyway, so it moves the slice index at each
// boundary (and notes when); the workers attribute what they count to the slice they last saw
// (Worker::running). A window cut short has no series.
void Session::Run::measure_window() {
  if (aborted()) return;
  for (size_t k = 0; k < peers_.size(); ++k) peer_cpu0_[k] = peer_usage(k);
  steal_cpus_ = placed_cpus();
  if (s_.kernel_) kernel0_ = s_.kernel_->read();
  if (noise_) noise_->window_open();
  t_begin_ = now_ns();
  set_phase(kMeasure);
  // Once the window is open, not between the warm-up and it (a worker would begin another warm-up
  // operation meanwhile): steal is known to a tick (10 ms) anyway.
  steal0_ = read_steal();
  if (until_done_ > 0) {
    watch_until(t_begin_ + uint64_t(until_done_ * 1e9), true);
    return;
  }
  const uint64_t len = uint64_t(s_.opts_.duration_s * 1e9);
  for (int k = 1; k <= kSlices; ++k) {
    watch_until(t_begin_ + len * uint64_t(k) / kSlices, true);
    if (k == kSlices || aborted() || workers_finished()) break;
    slice_at_.push_back(now_ns());
    ctl_.slice.store(k, std::memory_order_relaxed);
  }
}

// The window's end — now, or the last worker's finish when every worker was done before it — the
// peers' CPU and the kernel's counts over it, then the stop phase the workers drain at.
void Session::Run::close_window() {
  t_end_ = now_ns();
  if (s_.kernel_ && t_begin_) kernel1_ = s_.kernel_->read();
  if (t_begin_) {
    for (size_t k = 0; k < peers_.size(); ++k)
      if (peers_[k].process->running()) s_.peer_cpu_[k] = peer_usage(k) - peer_cpu0_[k];
    uint64_t last = 0;
    bool all_done = true;
    for (int i = 0; i < n_; ++i) {
      all_done = all_done && ctl_.slot(i).finished.load() && ctl_.slot(i).t_done;
      last = std::max(last, ctl_.slot(i).t_done);
    }
    if (all_done && n_ > 0) t_end_ = std::min(t_end_, last);
    if (until_done_ > 0 && !all_done && !aborted()) {
      rec_.fail(fmt::format("stalled: the workers did not finish their work within {:.1f} s", until_done_));
      abort();
    }
  }
  s_.window_begin_ = t_begin_;
  s_.window_end_ = t_begin_ ? t_end_ : 0;
  ctl_.window_end.store(t_end_, std::memory_order_release);  // before the stop the workers see
  set_phase(kStop);
  // After the stop, not between the window's end and it, likewise.
  if (t_begin_) steal1_ = read_steal();
  // The antagonists lived and progressed through the window, or the point was not measured under
  // noise; stopped now, what they did goes into the record.
  if (noise_) {
    const std::string why = t_begin_ ? noise_->window_close(double(t_end_ - t_begin_) * 1e-9) : "";
    if (!why.empty() && !aborted()) {
      rec_.fail(not_under_noise(why));
      abort();
    }
    noise_->stop_into(rec_.extra);
  }
}

// Once the run aborts or the timeout passes: the workers are woken with a signal (their blocking
// calls return EINTR and see the abort flag).
void Session::Run::give_up_on_workers(uint64_t now, uint64_t join_deadline) {
  if (now > join_deadline && !timed_out_) {
    timed_out_ = true;
    rec_.fail(
        fmt::format("workers still running {:.1f} s after the stop: a peer stalled", s_.opts_.timeout_s()));
  }
  abort();
  for (int i = 0; i < n_; ++i) {
    if (workers_[size_t(i)].process)
      procs_[size_t(i)].signal(SIGUSR1);
    else if (!ctl_.slot(i).finished.load())
      pthread_kill(threads_[size_t(i)].native_handle(), SIGUSR1);
  }
}

// Join: workers drain and stop by themselves, under the watchdog. Once the run aborts (a stall, a
// failed worker) or the timeout passes, they are woken; those still there 2 s later are given up
// on: processes killed (a stopped one too), threads abandoned (their objects leaked: Session::stuck).
void Session::Run::stop_workers() {
  stopped_ = true;
  const uint64_t join_deadline = now_ns() + uint64_t(s_.opts_.timeout_s() * 1e9);
  constexpr uint64_t kGraceNs = 2'000'000'000ull;
  uint64_t abort_seen = 0;
  while (!workers_exited()) {
    check_children();
    watch_stall();
    follow_window();
    const uint64_t now = now_ns();
    if (aborted() || now > join_deadline) {
      if (!abort_seen) abort_seen = now;
      give_up_on_workers(now, join_deadline);
      if (now > abort_seen + kGraceNs) break;
    }
    sleep_ns(1'000'000);
  }
  check_children();
  // A peer's death shows first as a worker's broken connection (its sockets close a moment before
  // it can be reaped): after a failure, a peer still running gets 0.2 s to be seen dead, so that
  // the record names the death (folded before the workers' errors) rather than its symptom.
  if (aborted()) {
    auto peer_running = [&] {
      for (size_t k = 0; k < peers_.size(); ++k)
        if (peer_death_[k].empty() && peers_[k].process->running()) return true;
      return false;
    };
    for (const uint64_t grace_end = now_ns() + 200'000'000; peer_running() && now_ns() < grace_end;) {
      sleep_ns(1'000'000);
      check_children();
    }
  }
  // SIGKILL, not SIGTERM: a forked worker inherits the harness's handlers (core/process/process.hpp).
  for (auto& p : procs_) p.stop(0);
  for (int i = 0; i < n_; ++i) {
    if (workers_[size_t(i)].process || !threads_[size_t(i)].joinable()) continue;
    if (ctl_.slot(i).finished.load())
      threads_[size_t(i)].join();
    else {
      threads_[size_t(i)].detach();  // cannot be stopped: leak its objects rather than free them under it
      s_.stuck_ = true;
    }
  }
  if (s_.stuck_) rec_.fail("a worker thread is stuck in a blocking call and was abandoned");
  set_abort_flag(nullptr);
}

// A process_cpu worker's window: this thread's polling over it comes off again. getrusage splits a
// thread's runtime and the process's into user and system time by sampled ticks, each its own
// way: what one part cannot give comes off the other, never below zero.
void Session::Run::charge_coordinator() {
  follow_window();
  if (own_seen_ != 2) return;
  CpuUsage& c = ctl_.slot(process_cpu_).cpu;
  const CpuUsage own = own_close_ - own_open_;
  c.user_s -= own.user_s;
  c.sys_s -= own.sys_s;
  if (c.user_s < 0) {
    c.sys_s = std::max(0.0, c.sys_s + c.user_s);
    c.user_s = 0;
  }
  if (c.sys_s < 0) {
    c.user_s = std::max(0.0, c.user_s + c.sys_s);
    c.sys_s = 0;
  }
  c.ctx_vol = std::max<int64_t>(0, c.ctx_vol - own.ctx_vol);
  c.ctx_invol = std::max<int64_t>(0, c.ctx_invol - own.ctx_invol);
  c.faults = std::max<int64_t>(0, c.faults - own.faults);
}

// The slots into the record: the window (the whole_ops workers' own when every worker is one),
// ops, bytes, integrity, CPU in all and by role, the sides, the failures, the latency, the series.
void Session::Run::fold(const std::string& latency_kind) {
  whole_ = n_ > 0;
  uint64_t first_open = UINT64_MAX, last_close = 0;
  for (int i = 0; i < n_ && whole_; ++i) {
    const uint64_t open = ctl_.slot(i).t_open.load(), close = ctl_.slot(i).t_close.load();
    whole_ = workers_[size_t(i)].whole_ops && open && close >= open;
    first_open = std::min(first_open, open);
    last_close = std::max(last_close, close);
  }
  if (t_begin_ && whole_) {
    t_begin_ = first_open;
    t_end_ = last_close;
  }
  auto hist = std::make_unique<Histogram>();  // tens of KiB: on the heap
  rec_.wall_s = t_begin_ ? double(t_end_ - t_begin_) * 1e-9 : 0.0;
  if (t_begin_) add_window_steal(rec_, steal0_, steal1_, steal_cpus_);
  rec_.placement.layout = s_.placement();
  rec_.placement.cpus = s_.opts_.cpus;
  for (const auto& why : peer_death_)
    if (!why.empty()) rec_.fail(why);
  std::map<std::string, CpuUsage> role_cpu;  // each role's CPU, workers and peers alike
  uint64_t latency_sample = 0;               // the largest stride of the workers' stamps
  for (int i = 0; i < n_; ++i) {
    const WorkerResult& s = ctl_.slot(i);
    const WorkerSpec& w = workers_[size_t(i)];
    hist->merge(s.hist);
    latency_sample = std::max(latency_sample, s.latency_sample);
    rec_.ops += s.ops;
    rec_.bytes += s.bytes;
    rec_.integrity += s.integrity;
    rec_.cpu += s.cpu;
    if (s.wait_ns >= 0) rec_.run_queue_wait_s = rec_.run_queue_wait_s.value_or(0) + double(s.wait_ns) * 1e-9;
    role_cpu[w.role] += s.cpu;
    Side side{w.role, w.index, {}, cpus_of(s.cpus_seen)};
    if (s.pinned >= 0) side.pinned = {s.pinned};
    rec_.placement.sides.push_back(side);
    if (s.error[0] && std::strcmp(s.error, "aborted") != 0)
      rec_.fail(fmt::format("{} {}: {}", w.role, w.index, s.error));
  }
  for (size_t k = 0; k < peers_.size(); ++k) {
    rec_.cpu += s_.peer_cpu_[k];
    role_cpu[peers_[k].role] += s_.peer_cpu_[k];
    Side side{peers_[k].role, peers_[k].index, {}, {}};
    if (peers_[k].cpu >= 0) side.pinned = {peers_[k].cpu};
    rec_.placement.sides.push_back(side);
  }
  // So that what one side costs — a sender's pacing, a server's work per echo — shows on its own.
  nlohmann::json by_role = nlohmann::json::object();
  for (auto& [role, c] : role_cpu)
    by_role[role] = {{"user_s", c.user_s},
                     {"sys_s", c.sys_s},
                     {"per_op_ns", rec_.ops ? c.total_s() * 1e9 / double(rec_.ops) : 0.0}};
  rec_.extra["cpu_by_role"] = by_role;
  if (latency_sample) rec_.extra["latency_sample"] = latency_sample;
  // The workers run on threads and processes of their own: this thread's polls are not theirs.
  if (s_.kernel_ && t_begin_)
    s_.kernel_->add_window(rec_.kernel, kernel0_, kernel1_, true,
                           "window: every thread and child process of the benchmark, coordinator excluded");
  if (aborted() && rec_.status != Status::Failed) rec_.fail("run aborted");
  if (!latency_kind.empty() && hist->count()) rec_.latency = Latency::from(latency_kind, *hist);
  fold_series(latency_kind);
}

// The series, when the window ran its whole --duration (past its last boundary: a window that its
// workers' finish closed may end a hair before it) and every worker counts as it goes.
void Session::Run::fold_series(const std::string& latency_kind) {
  bool series = t_begin_ && !whole_ && until_done_ == 0 && slice_at_.size() == size_t(kSlices - 1) &&
                slice_at_.back() < t_end_ && rec_.status == Status::Ok;
  for (int i = 0; i < n_; ++i) series = series && workers_[size_t(i)].series;
  if (!series) return;
  std::vector<uint64_t> t_ns{0}, ops(kSlices, 0);
  for (uint64_t at : slice_at_) t_ns.push_back(at - t_begin_);
  t_ns.push_back(t_end_ - t_begin_);
  std::vector<CoarseHistogram> lat(latency_kind.empty() ? 0 : kSlices);
  for (int i = 0; i < n_; ++i) {
    auto& s = ctl_.slot(i);
    // A slice past the last one the worker saw holds none of its ops (it stopped counting).
    const CoarseHistogram lat_end = CoarseHistogram::of(s.hist);
    for (int k = s.slice + 1; k < kSlices; ++k) {
      s.ops_at[k] = s.ops;
      s.lat_at[k] = lat_end;
    }
    for (int k = 0; k < kSlices; ++k) ops[k] += (k + 1 < kSlices ? s.ops_at[k + 1] : s.ops) - s.ops_at[k];
    for (size_t k = 0; k < lat.size(); ++k) {
      CoarseHistogram part = k + 1 < size_t(kSlices) ? s.lat_at[k + 1] : lat_end;
      part.subtract(s.lat_at[k]);
      lat[k].merge(part);
    }
  }
  rec_.series = make_series(t_ns, ops, lat);
}

WorkerResults Session::run_workers(std::vector<WorkerSpec> workers, bool processes,
                                   const std::string& latency_kind) {
  if (workers.size() > size_t(kMaxWorkers))
    throw UsageError(
        fmt::format("{} workers asked for; at most {} are supported", workers.size(), kMaxWorkers));
  int process_cpu = -1;  // the thread worker that charges the whole process's CPU, if any
  for (int i = 0; i < int(workers.size()); ++i) {
    WorkerSpec& w = workers[size_t(i)];
    w.process = w.process || processes;
    if (!w.process_cpu || w.process) continue;
    if (process_cpu >= 0)
      throw std::logic_error("run_workers: at most one process_cpu thread worker per run");
    process_cpu = i;
  }
  // The set-up is over: the stall watchdog takes over, the clean-up guard after.
  const CleanupGuardAfter cleanup_guard(*this);
  install_wakeup_signal();
  if (stuck_) (void)ctl_.release();  // a stuck worker thread may still write into the last run's block
  ctl_.reset();
  ctl_ = make_control(int(workers.size()));
  // A worker of whole operations holds its window open until it lasts --duration; a run bounded by
  // its work ends with its work.
  ctl_->min_window_ns = until_done_s_ > 0 ? 0 : uint64_t(opts_.duration_s * 1e9);
  set_abort_flag(&ctl_->abort);  // abort_requested() reads this run's flag (core/base/cancel.hpp)
  const size_t n = workers.size();
  Run run(*this, *ctl_, std::move(workers), process_cpu);
  run.start_noise();
  run.start_workers();
  run.await_ready();
  run.attach_noise();
  run.warm_up();
  run.measure_window();
  run.close_window();
  run.stop_workers();
  run.charge_coordinator();
  run.fold(latency_kind);
  return {ctl_->slots(), n};
}
namespace {

// What Session::measure reads as its window opens and closes, for the record.
struct MeasuredWindow {
  std::vector<int> steal_cpus;  // every CPU the body's threads may use
  StealReading steal0;
  std::optional<SchedStat> wait0;  // its threads' run-queue wait (threads it ends are not in it)
  CpuUsage self0, children0;
  int cpu_before = -1, cpu_after = -1;
  uint64_t t0 = 0, t1 = 0, passes = 0;
};

// The antagonists of a measure() run, as run_workers has them: running before the warm-up, its
// threads (made before or in the window) the benchmark's; none without plans.
std::unique_ptr<Noise> noise_for_measure(const std::vector<Noise::Plan>& plans) {
  if (plans.empty()) return nullptr;
  auto noise = std::make_unique<Noise>(plans);
  if (auto why = noise->await_running(kNoiseStartS); !why.empty())
    throw std::runtime_error(not_under_noise(why));
  noise->attach({{}, {getpid()}});
  return noise;
}

// The window's figures into `rec`: passes, wall time, CPU of the process and its reaped children,
// run-queue wait, steal, and the placement — a workload that did not describe its sides ran on the
// calling thread: where.
void fold_measured_window(Record& rec, const MeasuredWindow& w, const std::string& layout,
                          const std::vector<int>& cpus) {
  rec.extra["passes"] = w.passes;
  rec.wall_s = double(w.t1 - w.t0) * 1e-9;
  rec.cpu += (cpu_usage(RUSAGE_SELF) - w.self0) + (cpu_usage(RUSAGE_CHILDREN) - w.children0);
  if (const auto wait1 = process_schedstat(); w.wait0 && wait1)
    rec.run_queue_wait_s = double(std::max(wait1->wait_ns, w.wait0->wait_ns) - w.wait0->wait_ns) * 1e-9;
  add_window_steal(rec, w.steal0, read_steal(), w.steal_cpus);
  rec.placement.layout = layout;
  rec.placement.cpus = cpus;
  if (rec.placement.sides.empty()) {
    Side side{"main", 0, {}, {w.cpu_before}};
    if (w.cpu_after != w.cpu_before) side.observed.push_back(w.cpu_after);
    auto allowed = allowed_cpus();
    if (allowed.size() == 1) side.pinned = allowed;
    rec.placement.sides.push_back(side);
  }
}

}  // namespace

uint64_t Session::measure(const std::function<void()>& body, double deadline_s) {
  // The body shows no progress the harness could watch, and runs on this thread: a deadline per
  // run of it is the watchdog's only hold on it.
  // Each guard is armed before its runs and disarmed after them, outside the timed part; it bounds
  // the phase's time plus one run of the body (the last run starts before the phase's time is up).
  const double limit = deadline_s > 0 ? deadline_s : opts_.timeout_s();
  const CleanupGuardAfter cleanup_guard(*this);  // its own deadline takes over from the set-up guard
  auto stalled = [&](double phase_s) {
    return fmt::format(
        "FAILED {} (repetition {}): stalled: workload {} did not finish "
        "within {:.1f} s",
        rec_.name, rec_.repetition, mech_.full_name(), phase_s + limit);
  };
  // The antagonists: checked and stopped once the window closes.
  const std::unique_ptr<Noise> noise = noise_for_measure(noise_plans_);
  if (opts_.warmup_s > 0) {
    Deadline warm(opts_.warmup_s + limit, stalled(opts_.warmup_s));
    const uint64_t until = now_ns() + uint64_t(opts_.warmup_s * 1e9);
    do body();
    while (now_ns() < until);
  }
  // Its threads are its own, placed where it places them: the steal of every CPU it may use, read
  // outside the CPU time and the kernel's counts (this thread's are the benchmark's here).
  MeasuredWindow w{.steal_cpus = allowed_cpus(), .steal0 = read_steal(), .wait0 = process_schedstat()};
  auto timed = std::make_unique<Deadline>(opts_.duration_s + limit, stalled(opts_.duration_s));
  w.self0 = cpu_usage(RUSAGE_SELF), w.children0 = cpu_usage(RUSAGE_CHILDREN);
  w.cpu_before = current_cpu();
  // The body runs on this thread: the coordinator's own counts are the benchmark's here.
  KernelCounters::Reading kernel0, kernel1;
  if (kernel_) kernel0 = kernel_->read(false);
  // As google/benchmark grows its iterations to a minimum time: the body's count is one pass, and
  // passes run until the window holds --duration, so that no figure comes from a window shorter
  // than the one asked for, however small the count.
  if (noise) noise->window_open();
  w.t0 = now_ns();
  const uint64_t until = w.t0 + uint64_t(opts_.duration_s * 1e9);
  w.t1 = w.t0;
  do {
    body();
    ++w.passes;
    w.t1 = now_ns();
  } while (w.t1 < until);
  if (kernel_) kernel1 = kernel_->read(false);
  timed.reset();
  if (noise) {
    const std::string why = noise->window_close(double(w.t1 - w.t0) * 1e-9);
    noise->stop_into(rec_.extra);
    if (!why.empty()) throw std::runtime_error(not_under_noise(why));
  }
  if (kernel_)
    kernel_->add_window(rec_.kernel, kernel0, kernel1, false,
                        "window: the coordinator's thread, which runs the benchmark's body, and every thread "
                        "and child process the benchmark created");
  w.cpu_after = current_cpu();
  fold_measured_window(rec_, w, placement(), opts_.cpus);
  return w.passes;
}

}  // namespace ipclab
