// The run shared by pingpong/thread, pingpong/process and pingpong/go (see pingpong.hpp): the
// protocol — the region, the hosts' round trips, the guests' answers — and the record's
// pingpong figures. The Session owns the rest: phases, the measured window, placement, CPU
// windows, the stall watchdog and the guest's life.
//
// Shape of one repetition: create the region (POSIX shm, per-run name, O_EXCL, 0600; its pages
// placed as -p memory= asks, core/machine/numa.hpp, the host writing and the guest reading) and the
// wake-up objects, then one Session run. Its workers are one host thread per pair and the guest:
// a worker thread per slot (thread), or a forked worker process with a thread per slot (process);
// the Go guest is an executable taking part as the session's peer (go). Each host waits until the
// guest attached to every slot, makes round trips through the warm-up, then through the measured
// window — `round_trips` at most when it is not 0, fewer if --duration closes it first; by default
// (0) the window lasts --duration, as every window is sized to it — and always leaves DONE in its
// slot, which ends that slot's answers. The session tells the guests when the window opens
// (Header::measuring), for their CPU window.
#include "mechanisms/pingpong/pingpong.hpp"

#include <semaphore.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "core/base/clock.hpp"
#include "core/base/cpu.hpp"
#include "core/base/error.hpp"
#include "core/machine/numa.hpp"
#include "core/machine/waits.hpp"
#include "core/measure/session.hpp"
#include "core/model/std_params.hpp"
#include "core/ownership/journal.hpp"
#include "core/process/process.hpp"
#include "core/stats/record.hpp"
#include "mechanisms/pingpong/slot.hpp"
#include "mechanisms/pingpong/wait.hpp"

namespace ipclab::pingpong {

namespace {

// Everything one run creates; the destructor removes it, so every exit path cleans up.
struct Objects {
  std::string base;
  Region* region = nullptr;
  size_t size = 0;
  std::vector<sem_t*> host_sem, guest_sem;
  std::vector<std::string> sem_names;
  std::vector<int> to_host_efd, to_guest_efd;
  // A worker thread the session could not stop may still use the region, the semaphores and the
  // eventfds: then only their names are removed (unlinking leaves what is open usable).
  bool in_use = false;

  ~Objects() {
    if (!in_use) {
      if (region) munmap(region, size);
      for (auto* v : {&host_sem, &guest_sem})
        for (sem_t* s : *v)
          if (s) sem_close(s);
      for (auto* v : {&to_host_efd, &to_guest_efd})
        for (int fd : *v) ::close(fd);
    }
    for (auto& n : sem_names) ipc::remove(ipc::Kind::PosixSem, n);
    if (!base.empty()) ipc::remove(ipc::Kind::PosixShm, base);
  }

  SideSync host_side(int i) const {
    SideSync io;
    if (!host_sem.empty()) io = {host_sem[i], guest_sem[i], -1, -1};
    if (!to_host_efd.empty()) io.my_efd = to_host_efd[i], io.peer_efd = to_guest_efd[i];
    return io;
  }
  SideSync guest_side(int i) const {
    SideSync io;
    if (!host_sem.empty()) io = {guest_sem[i], host_sem[i], -1, -1};
    if (!to_host_efd.empty()) io.my_efd = to_guest_efd[i], io.peer_efd = to_host_efd[i];
    return io;
  }
};

// The region is mapped before its pages are allocated, so that they are allocated where `memory`
// places them.
void create_objects(Objects& o, int pairs, Wait wait, numa::SharedMemory& memory) {
  const std::string name = ipc::unique_name("pingpong");
  int fd = ipc::create_shm(name);
  o.base = name;  // only now ours to remove
  o.size = region_size(pairs);
  try {
    if (ftruncate(fd, off_t(o.size)) != 0)
      throw std::system_error(errno, std::generic_category(), "ftruncate /dev/shm" + o.base);
    void* mem = mmap(nullptr, o.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mem == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap " + o.base);
    o.region = static_cast<Region*>(mem);
    memory.place_file(fd, mem, o.size, "/dev/shm" + o.base);  // a full /dev/shm: an error, not SIGBUS
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  new (&o.region->header) Header();
  o.region->header.pairs = uint32_t(pairs);
  for (int i = 0; i < pairs; ++i) new (&o.region->slots[i]) Slot();

  if (uses_sem(wait)) {
    for (int i = 0; i < pairs; ++i)
      for (auto [side, vec] : {std::pair{'h', &o.host_sem}, std::pair{'g', &o.guest_sem}}) {
        std::string name = fmt::format("{}.{}{}", o.base, side, i);
        vec->push_back(ipc::create_sem(name, 0));
        o.sem_names.push_back(name);  // only now ours to remove
      }
  }
  if (wait == Wait::Eventfd) {
    for (int i = 0; i < pairs; ++i)
      for (auto* vec : {&o.to_host_efd, &o.to_guest_efd}) {
        int efd = eventfd(0, EFD_CLOEXEC);
        if (efd < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
        vec->push_back(efd);
      }
  }
}

// The values of round trip k of pair i: below 2^41, so the sum never overflows.
inline int64_t value_a(uint64_t k, int i) { return int64_t((k * 2654435761u + uint64_t(i)) & 0xffffffffffu); }
inline int64_t value_b(uint64_t k, int i) { return int64_t((k ^ (uint64_t(i) << 32)) & 0xffffffffffu); }

// What a host needs besides its Worker.
struct HostSpec {
  Region& region;
  const Objects& objects;
  const Strategy& strategy;
  uint64_t round_trips, sample;
};

// Host of pair i: round trips while the session runs, `round_trips` of them in the measured
// window at most (0: no cap, the window's end stops it). Every answer is checked (sum == a + b); every
// `sample`-th measured round trip is timed. Whatever ends it, it leaves DONE in its slot: that ends the
// guest's answer loop.
void host(Worker& w, int i, const HostSpec& h) {
  Region& r = h.region;
  Slot& slot = r.slots[i];
  const SideSync io = h.objects.host_side(i);
  const Strategy& st = h.strategy;
  try {
    // The guest attaches as it starts (a Go runtime, a loaded machine): the session's readiness
    // deadline bounds the wait, and its abort (the guest died) ends it.
    while (r.header.attached.load(std::memory_order_acquire) < r.header.pairs) {
      if (w.abort_requested()) throw Aborted();
      sleep_ns(200'000);
    }
    w.ready();
    WorkerResult& out = w.out();
    uint32_t req = 0;
    for (uint64_t k = 0; w.running(); ++k) {
      const bool measuring = w.measuring();
      const bool timed = measuring && out.ops % h.sample == 0;
      const int64_t a = value_a(k, i), b = value_b(k, i);
      const uint64_t t0 = timed ? now_ns() : 0;
      slot.a = a;
      slot.b = b;
      slot.req_id = ++req;
      st.hand_over(slot, kReqReady, slot.guest_sleeping, io);
      st.wait_for(slot, slot.host_sleeping, io, bit(kRespReady), &w);
      if (timed) out.record_latency(now_ns() - t0);
      if (slot.sum != a + b) out.integrity.corrupt++;
      if (!measuring) continue;
      out.integrity.sent++;
      out.integrity.received++;
      if (++out.ops == h.round_trips) break;  // done: the window may close before the cap
    }
  } catch (...) {
    st.finish(slot, io);
    throw;
  }
  st.finish(slot, io);
}

// A guest's answer loop on slot s, until DONE: sums every request, hands it back, then calls
// `answered` (off the round trip: the host is already on its way). Returns the requests whose
// req_id did not follow the previous one (a duplicated or skipped hand-over).
template <class Answered>
uint64_t answer(Slot& s, const Strategy& st, const SideSync& io, Answered&& answered) {
  uint64_t bad = 0;
  uint32_t expect = 1;
  for (;;) {
    uint32_t state = st.wait_for(s, s.guest_sleeping, io, bit(kReqReady) | bit(kDone), nullptr);
    if (state == kDone) return bad;
    if (s.req_id != expect) ++bad;
    expect = s.req_id + 1;
    s.sum = s.a + s.b;
    st.hand_over(s, kRespReady, s.host_sleeping, io);
    answered();
  }
}

// The thread guest of slot i: a session worker like any other — its CPU window (RUSAGE_THREAD)
// and heartbeat are the Worker's, one step per answer.
void thread_guest(Worker& w, int i, Region& r, const Objects& o, const Strategy& st) {
  r.header.attached.fetch_add(1, std::memory_order_release);  // before ready: the hosts wait for it
  w.ready();
  // Answers until DONE, also after the stop: a host finishes its round trip in flight.
  w.out().integrity.corrupt += answer(r.slots[i], st, o.guest_side(i), [&w] { w.running(); });
}

// The process guest: a worker process forked by the session, one thread per slot. Its CPU is the
// whole process's over its window — RUSAGE_SELF from the first answer in the measured window to
// the last DONE, as the Go guest measures its own; its heartbeat is its hosts' round trips
// (WorkerSpec::progress), since its threads cannot share the Worker.
void process_guest(Worker& w, Region& r, const Objects& o, const Strategy& st) {
  WorkerResult& out = w.out();
  std::atomic<int> opened{0};
  CpuUsage begin;  // written by the thread that opened the window, read after the joins
  std::atomic<uint64_t> bad{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < int(r.header.pairs); ++i)
    threads.emplace_back([&, i] {
      r.header.attached.fetch_add(1, std::memory_order_release);
      bool measuring = false;
      bad += answer(r.slots[i], st, o.guest_side(i), [&] {
        if (measuring || !r.header.measuring.load(std::memory_order_relaxed)) return;
        measuring = true;
        int no = 0;
        if (opened.compare_exchange_strong(no, 1)) begin = cpu_usage(RUSAGE_SELF);
      });
    });
  // The threads end at DONE, which every host leaves however it ends, an abort included.
  auto join = [&] {
    for (auto& t : threads) t.join();
  };
  try {
    w.ready();
  } catch (...) {
    join();
    throw;
  }
  join();
  if (opened.load()) out.cpu = cpu_usage(RUSAGE_SELF) - begin;
  out.integrity.corrupt += bad.load();
}

// The Go guest's report in the region's header: its CPU window (RUSAGE_SELF, first answer in the
// measured window to DONE).
CpuUsage usage_of(const Header& h) {
  CpuUsage u;
  u.user_s = double(h.cpu_user_ns) * 1e-9;
  u.sys_s = double(h.cpu_sys_ns) * 1e-9;
  u.ctx_vol = int64_t(h.ctx_vol);
  u.ctx_invol = int64_t(h.ctx_invol);
  return u;
}

// Starts the Go guest on the region, pinned to `cpu`.
// adaptive: the guest's adaptive_futex with the calibrated spin limit (it does not yield first).
Process start_go_guest(const std::string& path, const Params& p, const Objects& o, int pairs, Wait wait,
                       int spin_limit, int cpu) {
  std::vector<std::string> argv{
      path, "--shm=" + o.base, fmt::format("--pairs={}", pairs),
      "--wait=" + (wait == Wait::Adaptive ? std::string("adaptive_futex") : p.str("wait")),
      fmt::format("--spin-limit={}", spin_limit)};
  if (uses_sem(wait)) argv.push_back("--sem=" + o.base);
  if (wait == Wait::Eventfd) {
    std::string fds;
    for (int i = 0; i < pairs; ++i)
      fds += fmt::format("{}{},{}", i ? "," : "", o.to_guest_efd[size_t(i)], o.to_host_efd[size_t(i)]);
    argv.push_back("--efd=" + fds);
  }
  // The guest inherits the eventfds (created close-on-exec for everyone else).
  Spawn how{.cpu = cpu, .keep_fds = o.to_host_efd};
  how.keep_fds.insert(how.keep_fds.end(), o.to_guest_efd.begin(), o.to_guest_efd.end());
  return Process::exec(how, argv);
}

// After the run: the Go guest ends by itself once every slot is DONE, having written its report;
// its CPU window and out-of-sequence count go to the record. A failed run does not wait for it.
void finish_go_guest(Process& guest, const Header& h, Record& rec) {
  if (rec.status == Status::Failed) {
    guest.stop();
  } else if (!guest.wait(3.0)) {
    guest.stop();
    rec.fail("guest 0 did not exit within 3 s after DONE");
  } else if (!guest.clean()) {
    rec.fail("guest 0 " + guest.death());
  } else if (!h.finished.load(std::memory_order_acquire)) {
    rec.fail("guest 0 exited without reporting its CPU window");
  } else {
    rec.cpu += usage_of(h);
    rec.integrity.corrupt += h.bad_requests;
  }
}

// The record's pingpong figures, from the hosts' slots (workers first_host..) and the window.
void record_figures(Session& s, WorkerResults slots, int first_host, int pairs, uint64_t round_trips) {
  Record& rec = s.record();
  const uint64_t begin = s.window_begin_ns(), end = s.window_end_ns();
  double total_rate = 0, min_rate = 0, max_rate = 0;
  bool capped = false;
  nlohmann::json per_pair = nlohmann::json::array(), done = nlohmann::json::array();
  for (int i = 0; i < pairs; ++i) {
    const WorkerResult& h = slots[first_host + i];
    // Each pair's rate over its own time: from the window's start to its last round trip, or to
    // the window's end when the --duration cap stopped it.
    const uint64_t until = h.t_done ? h.t_done : end;
    const double rate = until > begin ? double(h.ops) / (double(until - begin) * 1e-9) : 0.0;
    total_rate += rate;
    min_rate = i ? std::min(min_rate, rate) : rate;
    max_rate = std::max(max_rate, rate);
    capped = capped || (round_trips > 0 && h.ops < round_trips);
    per_pair.push_back(std::llround(rate));
    done.push_back(h.ops);
  }
  rec.rates["system_effective_ops"] = rec.wall_s > 0 ? double(rec.ops) / rec.wall_s : 0.0;
  rec.rates["total_ops"] = total_rate;
  rec.extra["per_pair_ops"] = per_pair;
  rec.extra["round_trips_done"] = done;
  rec.extra["fairness"] = max_rate > 0 ? min_rate / max_rate : 0.0;
  rec.extra["capped_by_duration"] = capped;
}

}  // namespace

// The reference's layout (unpinned) first; hosts and guests by placement class on request.
ParamSpec placement() {
  ParamSpec p = std_params::placement({"unpinned", "cross", "same"}, {"unpinned"});
  p.full = {"unpinned", "cross"};
  p.help =
      "unpinned: the scheduler decides (the reference); cross: hosts on the first --cpus CPU, guests on "
      "the second; same: everything on the first; smt, llc, cross_llc, cross_numa: hosts and guests on "
      "the pair of --cpus in that class nearest its median round trip (`ipclab topo`)";
  return p;
}

// The region's NUMA node: the host writes each request (memory=writer: the host's node), the guest
// each answer (reader: the guest's).
ParamSpec memory() {
  ParamSpec m = std_params::memory();
  m.help += "; here the writer is the host (it starts each round trip), the reader the guest";
  return m;
}

std::vector<ParamSpec> suite_params() {
  return {
      {.name = "wait",
       .type = ParamType::String,
       .def = "adaptive_sem",
       .choices = wait_names(),
       .help = "how each side waits: spin (pause), spin_yield, adaptive_futex / adaptive_sem (spin "
               "spin_limit times, then sleep; adaptive_sem is the reference's design), sem, futex, "
               "eventfd, adaptive (futex after a budget calibrated in time on this machine: spins "
               "while the peer runs on another CPU, yields while it shares this one)",
       .quick = {"spin", "adaptive_futex", "adaptive_sem", "sem"},
       .full = wait_names()},
      {.name = "pairs",
       .type = ParamType::Int,
       .def = "1",
       .help =
           "host/guest pairs, one slot each (more pairs than cores on purpose, as the reference); on more "
           "than 2 CPUs the presets scale it: 1, 2, 4 … CPUs/2",
       .quick = {"1", "4"},
       .full = {"1", "2", "3", "4", "8"},
       .min = 1,
       .max = kMaxPairs,
       .per_cpu = 2},
      {.name = "round_trips",
       .type = ParamType::Int,
       .def = "0",
       .help =
           "round trips per pair in the measured window: 0, round trips until --duration ends it (the "
           "window sized to --duration); N, at most N (the reference's 100000), --duration may end it first",
       .min = 0,
       .max = int64_t(1) << 40},
      {.name = "spin_limit",
       .type = ParamType::Int,
       .def = "2000",
       .help = "spins before adaptive_futex / adaptive_sem sleep (the reference's 2000; adaptive "
               "calibrates its own)",
       .min = 0,
       .max = 100'000'000},
      placement(),
      memory(),
      {.name = "latency_sample",
       .type = ParamType::Int,
       .def = "8",
       .help = "time every Nth round trip for the RTT histogram (a clock read costs ~20-30 ns)",
       .min = 1,
       .max = 1'000'000},
  };
}

std::string check(const Params& p, GuestKind kind) {
  // Hosts and C++ guests are session workers: a host per pair, and a guest thread per pair
  // (thread) or one guest process (process).
  const int64_t pairs = p.i64("pairs");
  const int64_t per_pair = kind == GuestKind::Thread ? 2 : 1, others = kind == GuestKind::Process ? 1 : 0;
  const int64_t workers = pairs * per_pair + others;
  if (workers <= kMaxWorkers) return "";
  return fmt::format("pairs={} takes {} session workers ({}), at most {} run at once: use pairs <= {}", pairs,
                     workers,
                     kind == GuestKind::Thread    ? "a host and a guest thread per pair"
                     : kind == GuestKind::Process ? "a host per pair and the guest process"
                                                  : "a host per pair",
                     kMaxWorkers, (kMaxWorkers - others) / per_pair);
}

namespace {

// The guests' workers, then the hosts' (the last `pairs`). The session forks the process guest
// before it starts any thread.
std::vector<WorkerSpec> pair_workers(GuestKind kind, int pairs, int host_cpu, int guest_cpu, Region& r,
                                     Objects& o, const Strategy& st, const HostSpec& hs) {
  std::vector<WorkerSpec> workers;
  if (kind == GuestKind::Thread)
    for (int i = 0; i < pairs; ++i)
      workers.push_back(
          {"guest", i, guest_cpu, [i, &r, &o, &st](Worker& w) { thread_guest(w, i, r, o, st); }});
  if (kind == GuestKind::Process)
    workers.push_back({.role = "guest",
                       .index = 0,
                       .cpu = guest_cpu,
                       .body = [&r, &o, &st](Worker& w) { process_guest(w, r, o, st); },
                       .process = true});
  for (int i = 0; i < pairs; ++i)
    workers.push_back({"host", i, host_cpu, [i, &hs](Worker& w) { host(w, i, hs); }});
  return workers;
}

// What the guests were: the object they answered through, whose CPU the record holds, and (one
// guest process answering every slot) each pair's guest as one of its threads, on its CPU.
void record_guests(Record& rec, GuestKind kind, const Objects& o, int pairs, int guest_cpu) {
  rec.extra["object"] = o.base;
  rec.extra["guest_cpu_source"] = kind == GuestKind::Thread
                                      ? "RUSAGE_THREAD per guest thread"
                                      : "RUSAGE_SELF of the guest process over the measured window";
  if (kind != GuestKind::Thread)
    for (int i = 1; i < pairs; ++i) {
      Side side{"guest", i, {}, {}};
      if (guest_cpu >= 0) side.pinned = {guest_cpu};
      rec.placement.sides.push_back(side);
    }
}

}  // namespace

void run(Session& s, GuestKind kind, const std::string& go_guest) {
  const Params& p = s.params();
  const Wait wait = wait_of(p.str("wait"));
  const int pairs = int(p.i64("pairs"));
  const uint64_t round_trips = uint64_t(p.i64("round_trips"));
  const int host_cpu = s.cpu_for(0), guest_cpu = s.cpu_for(1);

  Objects o;
  numa::SharedMemory memory(s.memory_policy());
  create_objects(o, pairs, wait, memory);
  Region& r = *o.region;
  // Threads share one address space: private futexes are cheaper. Processes need shared ones.
  // adaptive: a budget calibrated on this machine for this placement, in the record.
  const waits::Budget budget =
      wait == Wait::Adaptive ? waits::adaptive(p.str("placement") == "same") : waits::Budget{};
  const int spin_limit = wait == Wait::Adaptive ? int(budget.spins) : int(p.i64("spin_limit"));
  if (wait == Wait::Adaptive) s.record().extra["wait_budget"] = waits::to_json(budget);
  const Strategy st(wait, spin_limit, kind == GuestKind::Thread, budget.same_cpu ? budget.yield_ns : 0);
  const HostSpec hs{r, o, st, round_trips, uint64_t(p.i64("latency_sample"))};

  std::vector<WorkerSpec> workers = pair_workers(kind, pairs, host_cpu, guest_cpu, r, o, st, hs);
  const int first_host = int(workers.size()) - pairs;
  // A guest process shows progress through its hosts' round trips: its answers complete them.
  auto trips = [&s, first_host, pairs] {
    uint64_t n = 0;
    for (int i = 0; i < pairs; ++i) n += s.worker_progress(first_host + i);
    return n;
  };
  if (kind == GuestKind::Process) workers[0].progress = trips;
  Process guest;  // the Go guest
  if (kind == GuestKind::Go) {
    guest = start_go_guest(go_guest, p, o, pairs, wait, spin_limit, guest_cpu);
    // Its CPU is its own report (finish_go_guest), with the user/system split and context
    // switches that the session's schedstat sample lacks: the session charges it nothing.
    s.add_peer({.role = "guest",
                .index = 0,
                .process = &guest,
                .cpu = guest_cpu,
                .progress = trips,
                .cpu_usage = [] { return CpuUsage{}; },
                .may_exit = true});
  }
  // The guest processes (process, Go) open their CPU window on the first request they answer once
  // this is set; thread guests follow the phases through their Worker.
  s.on_phase([&r](Phase ph) {
    if (ph == kMeasure) r.header.measuring.store(1, std::memory_order_relaxed);
  });

  const WorkerResults slots = s.run_workers(std::move(workers), false, "rtt");
  if (s.stuck()) o.in_use = true;
  Record& rec = s.record();
  memory.describe(rec);
  if (kind == GuestKind::Go) finish_go_guest(guest, r.header, rec);
  if (rec.status == Status::Failed) return;
  record_figures(s, slots, first_host, pairs, round_trips);
  record_guests(rec, kind, o, pairs, guest_cpu);
}

}  // namespace ipclab::pingpong
