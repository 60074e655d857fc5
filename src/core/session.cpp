#include "core/session.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <thread>
#include <utility>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/kcounters.hpp"
#include "core/placement.hpp"
#include "core/process.hpp"
#include "core/series.hpp"
#include "core/watchdog.hpp"

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

std::vector<int> cpus_of_mask(uint64_t mask) {
  std::vector<int> v;
  for (int c = 0; c < 64; ++c)
    if (mask & (uint64_t(1) << c)) v.push_back(c);
  return v;
}

}  // namespace

int Worker::transition(int ph) {
  // A worker of whole operations that reaches the stop without having measured one (the window
  // was shorter than its operation) measures the next one: it sees the stop after it.
  if (ph == kStop && whole_ops_ && !out_.t_open.load(std::memory_order_relaxed) &&
      !ctl_.abort.load(std::memory_order_relaxed))
    ph = kMeasure;
  if (ph == kMeasure && !open_) {
    begin_ = cpu_usage(who_);
    out_.t_open.store(now_ns(), std::memory_order_release);
    open_ = true;
  } else if (ph == kStop && open_) {
    out_.cpu += cpu_usage(who_) - begin_;
    out_.t_close.store(now_ns(), std::memory_order_release);
    open_ = false;
  }
  seen_ = ph;
  return ph;
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
  if (open_) {
    out_.cpu += cpu_usage(who_) - begin_;
    out_.t_close.store(now_ns(), std::memory_order_release);
    open_ = false;
  }
  sample_cpu();
}

void Worker::sample_cpu() {
  int c = current_cpu();
  if (c >= 0 && c < 64) out_.cpu_mask |= uint64_t(1) << c;
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

void Session::guard_setup() {
  guarded_ = true;
  arm_guard("set-up");
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

Session::~Session() {
  guard_.reset();
  if (ctl_ && !stuck_) {
    ctl_->~Control();
    munmap(ctl_, sizeof(Control));
  }
}

std::string Session::placement() const { return params_.str_or("placement", "unpinned"); }

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

Control& Session::run_workers(std::vector<WorkerSpec> workers, bool processes,
                              const std::string& latency_kind) {
  if (workers.size() > size_t(kMaxWorkers))
    throw UsageError(
        fmt::format("{} workers asked for; at most {} are supported", workers.size(), kMaxWorkers));
  // The set-up is over: the stall watchdog below takes over, the clean-up guard after.
  const CleanupGuardAfter cleanup_guard(*this);
  for (auto& w : workers) w.process = w.process || processes;
  int process_cpu = -1;  // the thread worker that charges the whole process's CPU, if any
  for (int i = 0; i < int(workers.size()); ++i)
    if (workers[size_t(i)].process_cpu && !workers[size_t(i)].process) {
      if (process_cpu >= 0)
        throw std::logic_error("run_workers: at most one process_cpu thread worker per run");
      process_cpu = i;
    }
  install_wakeup_signal();
  if (ctl_) {
    ctl_->~Control();
    munmap(ctl_, sizeof(Control));
    ctl_ = nullptr;
  }
  // Shared anonymous memory: the same block serves threads and forked processes alike.
  void* mem = mmap(nullptr, sizeof(Control), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap control");
  ctl_ = new (mem) Control();
  Control& ctl = *ctl_;
  set_abort_flag(&ctl_->abort);  // abort_requested() reads this run's flag (core/cancel.hpp)
  const std::vector<PeerSpec> peers = std::exchange(peers_, {});
  peer_cpu_.assign(peers.size(), CpuUsage{});
  const auto on_phase = std::exchange(on_phase_, nullptr);
  const double until_done = std::exchange(until_done_s_, 0.0);
  auto set_phase = [&](Phase ph) {
    ctl.phase.store(ph, std::memory_order_release);
    if (on_phase) on_phase(ph);
  };
  // A peer's CPU so far, as its spec says to read it.
  auto peer_usage = [&](size_t k) {
    if (peers[k].cpu_usage) return peers[k].cpu_usage();
    CpuUsage u;
    u.sys_s = peers[k].process->cpu_seconds();
    return u;
  };
  for (auto& w : workers)
    if (w.role == "producer" || w.role == "client")
      ctl.producers_left.fetch_add(1);
    else if (w.role == "consumer" || w.role == "server")
      ctl.consumers_left.fetch_add(1);

  const int n = int(workers.size());
  std::vector<std::thread> threads(static_cast<size_t>(n));
  // Forked workers: a worker not reaped below is killed and reaped by its Process on every path.
  std::vector<Process> procs(static_cast<size_t>(n));

  auto run_body = [&ctl](WorkerSpec& spec, WorkerResult& slot, bool proc) {
    Worker w(ctl, slot, proc || spec.process_cpu, spec.whole_ops);
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
    ctl.abort.store(1);
    return false;
  };

  // Forked workers first, then threads: a process forked while this process's worker threads run
  // can inherit a lock one of them held (the allocator's: under ASan a forked pingpong guest
  // deadlocked on its first allocation), and its copy is never released.
  for (int i = 0; i < n; ++i) {
    if (!workers[i].process) continue;
    try {
      // Unpinned here: the worker pins itself (run_body), so that its slot says where.
      procs[size_t(i)] = Process::fork(-1, [&, i] {
        bool ok = run_body(workers[i], ctl.slots[i], true);
        ctl.slots[i].finished.store(1, std::memory_order_release);
        return ok ? 0 : 1;
      });
    } catch (const std::system_error&) {
      ctl.abort.store(1);
      copy_error(ctl.slots[i], "fork failed");
      break;
    }
  }
  for (int i = 0; i < n; ++i) {
    if (workers[i].process) continue;
    if (ctl.abort.load()) {  // a fork failed: the run is over before it started
      ctl.slots[i].finished.store(1, std::memory_order_release);
      continue;
    }
    threads[size_t(i)] = std::thread([&, i] {
      run_body(workers[i], ctl.slots[i], false);
      ctl.slots[i].finished.store(1, std::memory_order_release);
    });
  }

  // Watches children: a forked worker that exits before finishing its work is a dead peer, and so
  // is a peer process that ends (unless it may end once every worker is done, and they are).
  auto workers_finished = [&] {
    for (int i = 0; i < n; ++i)
      if (!ctl.slots[i].finished.load(std::memory_order_acquire)) return false;
    return true;
  };
  std::vector<std::string> peer_death(peers.size());
  auto check_children = [&] {
    for (int i = 0; i < n; ++i) {
      Process& p = procs[size_t(i)];
      if (!p.running() || p.alive()) continue;
      if (!p.clean()) {
        if (!ctl.slots[i].error[0]) copy_error(ctl.slots[i], ("process " + p.death()).c_str());
        ctl.abort.store(1);
      }
    }
    for (size_t k = 0; k < peers.size(); ++k) {
      Process& p = *peers[k].process;
      if (!peer_death[k].empty() || !p.running() || p.alive()) continue;
      if (peers[k].may_exit && p.clean() && workers_finished()) continue;
      peer_death[k] = fmt::format("{} {} {}", peers[k].role, peers[k].index, p.death());
      ctl.abort.store(1);
    }
  };
  // The stall watchdog over every worker's heartbeat (Worker::running), from the warm-up to the
  // end of the drain; a worker that finished its work is no longer watched. Peers with a
  // heartbeat are watched from the measured window on, until every worker is done.
  Watchdog wd(opts_.duration_s);
  for (int i = 0; i < n; ++i) {
    std::function<uint64_t()> beat = workers[i].progress;
    if (!beat) beat = [&ctl, i] { return ctl.slots[i].progress.load(std::memory_order_relaxed); };
    wd.watch(workers[i].role, workers[i].index, workers[i].process ? procs[size_t(i)].pid() : -1, -1,
             std::move(beat),
             [&ctl, i] { return ctl.slots[i].finished.load(std::memory_order_acquire) != 0; });
  }
  for (auto& peer : peers)
    if (peer.progress)
      wd.watch(peer.role, peer.index, peer.process->pid(), -1, peer.progress, workers_finished);
  // A stall fails the run with the watchdog's line and the counts known at that moment (the
  // record's integrity, folded below, carries them too).
  auto watch_stall = [&] {
    if (ctl.abort.load()) return;
    std::string why = wd.check();
    if (why.empty()) return;
    uint64_t sent = 0, received = 0;
    for (int i = 0; i < n; ++i) {
      sent += ctl.slots[i].integrity.sent;
      received += ctl.slots[i].integrity.received + ctl.slots[i].integrity.corrupt;
    }
    if (sent) why += fmt::format("; by then {} sent, {} received", sent, received);
    rec_.fail(why);
    ctl.abort.store(1);
  };
  // A process_cpu worker's window charges this thread's polling too: this thread's CPU between
  // the moments it sees that window open and close (each within one poll) is taken out again.
  CpuUsage own_open, own_close;
  int own_seen = 0;  // 1: the opening seen, 2: the closing too
  auto follow_window = [&] {
    if (process_cpu < 0 || own_seen == 2) return;
    const WorkerResult& s = ctl.slots[process_cpu];
    if (own_seen == 0 && s.t_open.load(std::memory_order_acquire)) {
      own_open = cpu_usage(RUSAGE_THREAD);
      own_seen = 1;
    }
    if (own_seen == 1 && s.t_close.load(std::memory_order_acquire)) {
      own_close = cpu_usage(RUSAGE_THREAD);
      own_seen = 2;
    }
  };
  // Sleeps until `until` (ns), waking early when the session aborts or, with `early`, once every
  // worker has finished.
  auto watch_until = [&](uint64_t until, bool early) {
    while (now_ns() < until && !ctl.abort.load()) {
      check_children();
      watch_stall();
      follow_window();
      if (early && workers_finished()) return;
      // Every 5 ms: a count-bounded window ends at its last worker's t_done, not at this poll, and
      // a shorter period costs a worker that shares this CPU involuntary switches.
      sleep_ns(std::min<uint64_t>(5'000'000, until - std::min(until, now_ns())));
    }
  };

  const uint64_t ready_deadline = now_ns() + 10'000'000'000ull;
  while (ctl.ready.load() < n && !ctl.abort.load() && now_ns() < ready_deadline) {
    check_children();
    sleep_ns(200'000);
  }
  if (ctl.ready.load() < n && !ctl.abort.load()) {
    // Named: the sides still in their own set-up (opening an endpoint, a file), where they wait.
    std::string who;
    for (int i = 0; i < n; ++i)
      if (!ctl.slots[i].readied.load(std::memory_order_acquire) && !ctl.slots[i].finished.load())
        who += fmt::format("{}{} {}{}", who.empty() ? "" : ", ", workers[i].role, workers[i].index,
                           workers[i].process ? fmt::format(" (pid {})", procs[size_t(i)].pid()) : "");
    rec_.fail(fmt::format("{} of {} workers did not become ready within 10 s{}{}", n - ctl.ready.load(), n,
                          who.empty() ? "" : ": still in their set-up (opening an endpoint or a file): ",
                          who));
    ctl.abort.store(1);
  }

  for (int i = 0; i < n; ++i)
    if (!workers[i].process) wd.set_tid(size_t(i), ctl.slots[i].tid.load(std::memory_order_relaxed));
  uint64_t t_begin = 0, t_end = 0;
  std::vector<uint64_t> slice_at;  // the boundaries between slices the window passed (now_ns)
  std::vector<CpuUsage> peer_cpu0(peers.size());
  KernelCounters::Reading kernel0, kernel1;  // at the window's opening and closing
  if (!ctl.abort.load()) {
    set_phase(kWarmup);
    // A run bounded by its work has no warm-up time, only its workers' warm-up work.
    watch_until(now_ns() + uint64_t((until_done > 0 ? 0.0 : opts_.warmup_s) * 1e9), false);
    // Workers whose warm-up is a piece of work (Worker::hold_warmup) keep the window closed until
    // it is done, so that none of it runs inside the window.
    const double warm_limit_s = until_done > 0 ? until_done : opts_.timeout_s();
    const uint64_t warm_limit = now_ns() + uint64_t(warm_limit_s * 1e9);
    while (ctl.warming.load() > 0 && !ctl.abort.load()) {
      if (now_ns() > warm_limit) {
        rec_.fail(
            fmt::format("stalled: the workers' warm-up work did not finish within {:.1f} s", warm_limit_s));
        ctl.abort.store(1);
        break;
      }
      check_children();
      watch_stall();
      sleep_ns(500'000);
    }
    for (size_t k = 0; k < peers.size(); ++k) peer_cpu0[k] = peer_usage(k);
    if (kernel_) kernel0 = kernel_->read();
    t_begin = now_ns();
    set_phase(kMeasure);
    if (until_done > 0) {
      watch_until(t_begin + uint64_t(until_done * 1e9), true);
    } else {
      // The time series: this thread waits for the window's end anyway, so it moves the slice
      // index at each boundary (and notes when); the workers attribute what they count to the
      // slice they last saw (Worker::running). A window cut short has no series.
      const uint64_t len = uint64_t(opts_.duration_s * 1e9);
      for (int k = 1; k <= kSlices; ++k) {
        watch_until(t_begin + len * uint64_t(k) / kSlices, true);
        if (k == kSlices || ctl.abort.load() || workers_finished()) break;
        slice_at.push_back(now_ns());
        ctl.slice.store(k, std::memory_order_relaxed);
      }
    }
  }
  t_end = now_ns();
  if (kernel_ && t_begin) kernel1 = kernel_->read();
  if (t_begin) {
    for (size_t k = 0; k < peers.size(); ++k)
      if (peers[k].process->running()) peer_cpu_[k] = peer_usage(k) - peer_cpu0[k];
    // Every worker done before the duration: the window closed with the last of them.
    uint64_t last = 0;
    bool all_done = true;
    for (int i = 0; i < n; ++i) {
      all_done = all_done && ctl.slots[i].finished.load() && ctl.slots[i].t_done;
      last = std::max(last, ctl.slots[i].t_done);
    }
    if (all_done && n > 0) t_end = std::min(t_end, last);
    if (until_done > 0 && !all_done && !ctl.abort.load()) {
      rec_.fail(fmt::format("stalled: the workers did not finish their work within {:.1f} s", until_done));
      ctl.abort.store(1);
    }
  }
  window_begin_ = t_begin;
  window_end_ = t_begin ? t_end : 0;
  ctl.window_end.store(t_end, std::memory_order_release);  // before the stop the workers see
  set_phase(kStop);

  // Join: workers drain and stop by themselves, under the watchdog. Once the session aborts (a
  // stall, a failed worker) or the timeout passes, they are woken with a signal (their blocking
  // calls return EINTR and see the abort flag); those still there 2 s later are given up on:
  // processes killed (a stopped one too), threads abandoned.
  const uint64_t join_deadline = now_ns() + uint64_t(opts_.timeout_s() * 1e9);
  constexpr uint64_t kGraceNs = 2'000'000'000ull;
  uint64_t abort_seen = 0;
  bool timed_out = false;
  auto all_finished = [&] {
    for (int i = 0; i < n; ++i) {
      if (workers[i].process ? procs[size_t(i)].running() : !ctl.slots[i].finished.load()) return false;
    }
    return true;
  };
  while (!all_finished()) {
    check_children();
    watch_stall();
    follow_window();
    uint64_t now = now_ns();
    if (ctl.abort.load() || now > join_deadline) {
      if (!abort_seen) abort_seen = now;
      if (now > join_deadline && !timed_out) {
        timed_out = true;
        rec_.fail(
            fmt::format("workers still running {:.1f} s after the stop: a peer stalled", opts_.timeout_s()));
      }
      ctl.abort.store(1);
      for (int i = 0; i < n; ++i) {
        if (workers[i].process)
          procs[size_t(i)].signal(SIGUSR1);
        else if (!ctl.slots[i].finished.load())
          pthread_kill(threads[size_t(i)].native_handle(), SIGUSR1);
      }
      if (now > abort_seen + kGraceNs) break;
    }
    sleep_ns(1'000'000);
  }
  check_children();
  // A peer's death shows first as a worker's broken connection (its sockets close a moment before
  // it can be reaped): after a failure, a peer still running gets 0.2 s to be seen dead, so that
  // the record names the death (folded before the workers' errors) rather than its symptom.
  if (ctl.abort.load()) {
    auto peer_running = [&] {
      for (size_t k = 0; k < peers.size(); ++k)
        if (peer_death[k].empty() && peers[k].process->running()) return true;
      return false;
    };
    for (const uint64_t grace_end = now_ns() + 200'000'000; peer_running() && now_ns() < grace_end;) {
      sleep_ns(1'000'000);
      check_children();
    }
  }
  // SIGKILL, not SIGTERM: a forked worker inherits the harness's handlers (core/process.hpp).
  for (auto& p : procs) p.stop(0);
  for (int i = 0; i < n; ++i) {
    if (workers[i].process) continue;
    if (!threads[size_t(i)].joinable()) continue;
    if (ctl.slots[i].finished.load())
      threads[size_t(i)].join();
    else {
      threads[size_t(i)].detach();  // cannot be stopped: leak its objects rather than free them under it
      stuck_ = true;
    }
  }
  if (stuck_) rec_.fail("a worker thread is stuck in a blocking call and was abandoned");
  set_abort_flag(nullptr);
  follow_window();
  if (own_seen == 2) {
    // getrusage splits a thread's runtime and the process's into user and system time by sampled
    // ticks, each its own way: what one part cannot give comes off the other, never below zero.
    CpuUsage& c = ctl.slots[process_cpu].cpu;
    const CpuUsage own = own_close - own_open;
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
  // Workers of whole operations bound the window by their own (WorkerSpec::whole_ops).
  bool whole = n > 0;
  uint64_t first_open = UINT64_MAX, last_close = 0;
  for (int i = 0; i < n && whole; ++i) {
    const uint64_t open = ctl.slots[i].t_open.load(), close = ctl.slots[i].t_close.load();
    whole = workers[i].whole_ops && open && close >= open;
    first_open = std::min(first_open, open);
    last_close = std::max(last_close, close);
  }
  if (t_begin && whole) {
    t_begin = first_open;
    t_end = last_close;
  }

  // Fold the slots into the record.
  Histogram* hist = new Histogram();
  rec_.wall_s = t_begin ? double(t_end - t_begin) * 1e-9 : 0.0;
  rec_.placement.layout = placement();
  rec_.placement.cpus = opts_.cpus;
  for (const auto& why : peer_death)
    if (!why.empty()) rec_.fail(why);
  for (int i = 0; i < n; ++i) {
    auto& s = ctl.slots[i];
    hist->merge(s.hist);
    rec_.ops += s.ops;
    rec_.bytes += s.bytes;
    rec_.integrity += s.integrity;
    rec_.cpu += s.cpu;
    Side side;
    side.role = workers[i].role;
    side.index = workers[i].index;
    if (s.pinned >= 0) side.pinned = {s.pinned};
    side.observed = cpus_of_mask(s.cpu_mask);
    rec_.placement.sides.push_back(side);
    if (s.error[0] && std::strcmp(s.error, "aborted") != 0)
      rec_.fail(fmt::format("{} {}: {}", workers[i].role, workers[i].index, s.error));
  }
  for (size_t k = 0; k < peers.size(); ++k) {
    rec_.cpu += peer_cpu_[k];
    Side side{peers[k].role, peers[k].index, {}, {}};
    if (peers[k].cpu >= 0) side.pinned = {peers[k].cpu};
    rec_.placement.sides.push_back(side);
  }
  // Each role's CPU (workers and peers alike), so that what one side costs — a sender's pacing,
  // a server's work per echo — shows on its own.
  std::map<std::string, CpuUsage> role_cpu;
  for (int i = 0; i < n; ++i) role_cpu[workers[i].role] += ctl.slots[i].cpu;
  for (size_t k = 0; k < peers.size(); ++k) role_cpu[peers[k].role] += peer_cpu_[k];
  nlohmann::json by_role = nlohmann::json::object();
  for (auto& [role, c] : role_cpu)
    by_role[role] = {{"user_s", c.user_s},
                     {"sys_s", c.sys_s},
                     {"per_op_ns", rec_.ops ? c.total_s() * 1e9 / double(rec_.ops) : 0.0}};
  rec_.extra["cpu_by_role"] = by_role;
  // The workers run on threads and processes of their own: this thread's polls are not theirs.
  if (kernel_ && t_begin)
    kernel_->add_window(rec_.kernel, kernel0, kernel1, true,
                        "window: every thread and child process of the benchmark, coordinator excluded");
  if (ctl.abort.load() && rec_.status != Status::Failed) rec_.fail("run aborted");
  if (!latency_kind.empty() && hist->count()) rec_.latency = Latency::from(latency_kind, *hist);
  delete hist;
  // The series, when the window ran its whole --duration (past its last boundary: a window that
  // its workers' finish closed may end a hair before it) and every worker counts as it goes.
  bool series = t_begin && !whole && until_done == 0 && slice_at.size() == size_t(kSlices - 1) &&
                slice_at.back() < t_end && rec_.status == Status::Ok;
  for (int i = 0; i < n; ++i) series = series && workers[i].series;
  if (series) {
    std::vector<uint64_t> t_ns{0}, ops(kSlices, 0);
    for (uint64_t at : slice_at) t_ns.push_back(at - t_begin);
    t_ns.push_back(t_end - t_begin);
    std::vector<CoarseHistogram> lat(latency_kind.empty() ? 0 : kSlices);
    for (int i = 0; i < n; ++i) {
      auto& s = ctl.slots[i];
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
  return ctl;
}

void Session::measure(const std::function<void()>& body, double deadline_s) {
  // The body shows no progress the harness could watch, and runs on this thread: a deadline per
  // run of it is the watchdog's only hold on it.
  // Each guard is armed before its run and disarmed after it, outside the timed part.
  const double limit = deadline_s > 0 ? deadline_s : opts_.timeout_s();
  const CleanupGuardAfter cleanup_guard(*this);  // its own deadline takes over from the set-up guard
  const std::string line = fmt::format(
      "FAILED {} (repetition {}): stalled: workload {} did not finish "
      "within {:.1f} s",
      rec_.name, rec_.repetition, mech_.full_name(), limit);
  if (opts_.warmup_s > 0) {
    Deadline warm(limit, line);
    body();
  }
  auto timed = std::make_unique<Deadline>(limit, line);
  CpuUsage s0 = cpu_usage(RUSAGE_SELF), c0 = cpu_usage(RUSAGE_CHILDREN);
  const int cpu_before = current_cpu();
  // The body runs on this thread: the coordinator's own counts are the benchmark's here.
  KernelCounters::Reading kernel0, kernel1;
  if (kernel_) kernel0 = kernel_->read(false);
  uint64_t t0 = now_ns();
  body();
  uint64_t t1 = now_ns();
  if (kernel_) kernel1 = kernel_->read(false);
  timed.reset();
  if (kernel_)
    kernel_->add_window(rec_.kernel, kernel0, kernel1, false,
                        "window: the coordinator's thread, which runs the benchmark's body, and every thread "
                        "and child process the benchmark created");
  const int cpu_after = current_cpu();
  rec_.wall_s = double(t1 - t0) * 1e-9;
  rec_.cpu += (cpu_usage(RUSAGE_SELF) - s0) + (cpu_usage(RUSAGE_CHILDREN) - c0);
  rec_.placement.layout = placement();
  rec_.placement.cpus = opts_.cpus;
  // A workload that did not describe its sides ran on the calling thread: say where.
  if (rec_.placement.sides.empty()) {
    Side side{"main", 0, {}, {cpu_before}};
    if (cpu_after != cpu_before) side.observed.push_back(cpu_after);
    auto allowed = allowed_cpus();
    if (allowed.size() == 1) side.pinned = allowed;
    rec_.placement.sides.push_back(side);
  }
}

}  // namespace ipclab
