// The run shared by pingpong/thread, pingpong/process and pingpong/go (see pingpong.hpp).
//
// Shape of one repetition: create the region (POSIX shm, per-run name, O_EXCL, 0600) and the
// wake-up objects; start the guest and wait until every guest worker is attached; start one
// host thread per pair. Hosts warm up, meet at a barrier (the last one opens the measured
// window), then make their round trips — `round_trips` each, or fewer if the --duration cap
// ends the window first. This thread is the monitor meanwhile: it closes the window at the cap,
// notices a guest that died or (the harness's stall watchdog) stopped answering, and aborts the
// hosts (no hang).
#include "mechanisms/pingpong/pingpong.hpp"

#include <fcntl.h>
#include <semaphore.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>

#include "core/clock.hpp"
#include "core/cpu.hpp"
#include "core/error.hpp"
#include "core/histogram.hpp"
#include "core/ipc_names.hpp"
#include "core/placement.hpp"
#include "core/process.hpp"
#include "core/record.hpp"
#include "core/session.hpp"
#include "core/std_params.hpp"
#include "core/watchdog.hpp"
#include "mechanisms/pingpong/slot.hpp"
#include "mechanisms/pingpong/wait.hpp"

namespace ipclab::pingpong {

namespace {

constexpr double kAttachSeconds = 10.0; // guest start-up (a Go runtime, a loaded machine)

// Host-process state the monitor and the hosts share (never seen by the guest).
struct alignas(64) Control {
  std::atomic<uint32_t> stop{0};   // the --duration cap closed the window: finish now
  std::atomic<uint32_t> abort{0};  // the guest died or stalled: give up
  std::atomic<int> arrived{0};     // hosts done warming up
  std::atomic<uint64_t> t_go{0};   // start of the measured window (0: not yet)
};

struct alignas(64) HostResult {
  std::atomic<uint64_t> progress{0};  // round trips so far (the watchdog's heartbeat)
  std::atomic<int> tid{0};
  std::atomic<int> finished{0};
  uint64_t done = 0, corrupt = 0, t0 = 0, t1 = 0;
  CpuUsage cpu;
  int cpu_seen = -1;
  std::unique_ptr<Histogram> hist = std::make_unique<Histogram>();
  std::string error;
};

// A guest worker's answer loop: until DONE, sum every request. Returns requests whose req_id
// did not follow the previous one (a duplicated or skipped hand-over).
uint64_t answer(Region& r, int i, const Strategy& st, const SideSync& io,
                const std::function<void()>& on_measuring) {
  Slot& s = r.slots[i];
  r.header.attached.fetch_add(1, std::memory_order_release);
  uint64_t bad = 0;
  uint32_t expect = 1;
  bool measuring = false;
  for (;;) {
    uint32_t state = st.wait_for(s, s.guest_sleeping, io, bit(kReqReady) | bit(kDone), nullptr);
    if (state == kDone) break;
    if (!measuring && r.header.measuring.load(std::memory_order_relaxed)) {
      measuring = true;
      on_measuring();
    }
    if (s.req_id != expect) ++bad;
    expect = s.req_id + 1;
    s.sum = s.a + s.b;
    st.hand_over(s, kRespReady, s.host_sleeping, io);
  }
  return bad;
}

// The values of round trip k of pair i: below 2^41, so the sum never overflows.
inline int64_t value_a(uint64_t k, int i) { return int64_t((k * 2654435761u + uint64_t(i)) & 0xffffffffffu); }
inline int64_t value_b(uint64_t k, int i) { return int64_t((k ^ (uint64_t(i) << 32)) & 0xffffffffffu); }

// Everything one run creates; the destructor removes it, so every exit path cleans up.
struct Objects {
  std::string base;
  Region* region = nullptr;
  size_t size = 0;
  std::vector<sem_t*> host_sem, guest_sem;
  std::vector<std::string> sem_names;
  std::vector<int> to_host_efd, to_guest_efd;

  ~Objects() {
    if (region) munmap(region, size);
    for (auto* v : {&host_sem, &guest_sem})
      for (sem_t* s : *v)
        if (s) sem_close(s);
    for (auto& n : sem_names) ipc::remove(ipc::Kind::PosixSem, n);
    if (!base.empty()) ipc::remove(ipc::Kind::PosixShm, base);
    for (auto* v : {&to_host_efd, &to_guest_efd})
      for (int fd : *v) ::close(fd);
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

void create_objects(Objects& o, int pairs, Wait wait) {
  const std::string name = ipc::unique_name("pingpong");
  int fd = ipc::create_shm(name);
  o.base = name;  // only now ours to remove
  o.size = region_size(pairs);
  if (ftruncate(fd, off_t(o.size)) != 0) {
    int e = errno;
    ::close(fd);
    throw std::system_error(e, std::generic_category(), "ftruncate " + o.base);
  }
  void* mem = mmap(nullptr, o.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (mem == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap " + o.base);
  o.region = static_cast<Region*>(mem);
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

CpuUsage usage_of(const Header& h) {
  CpuUsage u;
  u.user_s = double(h.cpu_user_ns) * 1e-9;
  u.sys_s = double(h.cpu_sys_ns) * 1e-9;
  u.ctx_vol = int64_t(h.ctx_vol);
  u.ctx_invol = int64_t(h.ctx_invol);
  return u;
}

void store_usage(Header& h, const CpuUsage& u) {
  h.cpu_user_ns = uint64_t(std::max(0.0, u.user_s) * 1e9);
  h.cpu_sys_ns = uint64_t(std::max(0.0, u.sys_s) * 1e9);
  h.ctx_vol = uint64_t(std::max<int64_t>(0, u.ctx_vol));
  h.ctx_invol = uint64_t(std::max<int64_t>(0, u.ctx_invol));
}

// The C++ process guest, after fork: one thread per slot, its CPU window into the header.
int process_guest(Objects& o, int pairs, const Strategy& st) {
  Region& r = *o.region;
  std::atomic<int> begun{0};
  CpuUsage begin;
  std::atomic<uint64_t> bad{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < pairs; ++i)
    threads.emplace_back([&, i] {
      bad += answer(r, i, st, o.guest_side(i), [&] {
        int expected = 0;
        if (begun.compare_exchange_strong(expected, 1)) begin = cpu_usage(RUSAGE_SELF);
      });
    });
  for (auto& t : threads) t.join();
  if (begun.load()) store_usage(r.header, cpu_usage(RUSAGE_SELF) - begin);
  r.header.bad_requests = bad.load();
  r.header.finished.store(1, std::memory_order_release);
  return 0;
}

}  // namespace

std::vector<ParamSpec> params() {
  return {
      {.name = "wait", .type = ParamType::String, .def = "adaptive_sem", .choices = wait_names(),
       .help = "how each side waits: spin (pause), spin_yield, adaptive_futex / adaptive_sem (spin "
               "spin_limit times, then sleep; adaptive_sem is the reference's design), sem, futex, "
               "eventfd",
       .quick = {"spin", "adaptive_futex", "adaptive_sem", "sem"},
       .full = wait_names()},
      {.name = "pairs", .type = ParamType::Int, .def = "1",
       .help = "host/guest pairs, one slot each (more pairs than cores on purpose, as the reference)",
       .quick = {"1", "4"}, .full = {"1", "2", "3", "4", "8"}, .min = 1, .max = kMaxPairs},
      {.name = "round_trips", .type = ParamType::Int, .def = "100000",
       .help = "round trips per pair (the reference's 100000); --duration caps the measured window",
       .min = 1, .max = int64_t(1) << 40},
      {.name = "spin_limit", .type = ParamType::Int, .def = "2000",
       .help = "spins before an adaptive wait sleeps (the reference's 2000)", .min = 0,
       .max = 100'000'000},
      {.name = "placement", .type = ParamType::String, .def = "unpinned",
       .choices = {"unpinned", "cross", "same"},
       .help = "unpinned: the scheduler decides (the reference); cross: hosts on the first --cpus "
               "CPU, guests on the second; same: everything on the first",
       .quick = {"unpinned"}, .full = {"unpinned", "cross"}},
      {.name = "latency_sample", .type = ParamType::Int, .def = "8",
       .help = "time every Nth round trip for the RTT histogram (a clock read costs ~20-30 ns)",
       .min = 1, .max = 1'000'000},
  };
}

void run(Session& s, GuestKind kind, const std::string& go_guest) {
  const Params& p = s.params();
  const RunOptions& opts = s.options();
  const Wait wait = wait_of(p.str("wait"));
  const int pairs = int(p.i64("pairs"));
  const uint64_t round_trips = uint64_t(p.i64("round_trips"));
  const uint64_t sample = uint64_t(p.i64("latency_sample"));
  const int host_cpu = s.cpu_for(0), guest_cpu = s.cpu_for(1);
  if (kind == GuestKind::Go && go_guest.empty())
    throw Skip("the Go guest was not built (`go` not found at configure time, or "
               "IPCLAB_WITH_GO_PEERS=OFF as in the sanitizer presets); use the release preset with Go installed");
  if (kind == GuestKind::Go && access(go_guest.c_str(), X_OK) != 0)
    throw Skip(fmt::format("the Go guest {} is missing; rebuild (target pingpong_go_guest)", go_guest));

  Objects o;
  create_objects(o, pairs, wait);
  Region& r = *o.region;
  // Threads share one address space: private futexes are cheaper. Processes need shared ones.
  const Strategy st(wait, int(p.i64("spin_limit")), kind == GuestKind::Thread);

  // Guest.
  Process guest;  // the process and Go guests
  std::vector<std::thread> guest_threads;
  std::vector<CpuUsage> guest_thread_cpu(static_cast<size_t>(pairs));
  std::atomic<uint64_t> guest_thread_bad{0};
  struct GuestGuard {
    std::function<void()> f;
    ~GuestGuard() { f(); }
  } guard{[&] {
    // On any early exit: release the guest (DONE on every slot) and make sure it is gone.
    for (int i = 0; i < pairs; ++i) st.finish(r.slots[i], o.host_side(i));
    for (auto& t : guest_threads)
      if (t.joinable()) t.join();
    guest.stop();
  }};

  switch (kind) {
    case GuestKind::Thread:
      for (int i = 0; i < pairs; ++i)
        guest_threads.emplace_back([&, i] {
          try {
            pin_current_thread(guest_cpu);
          } catch (...) {
            // Unpinned rather than dead: a dead guest thread would only show up as a stall.
          }
          CpuUsage begin;
          bool begun = false;
          guest_thread_bad += answer(r, i, st, o.guest_side(i), [&] {
            begun = true;
            begin = cpu_usage(RUSAGE_THREAD);
          });
          if (begun) guest_thread_cpu[size_t(i)] = cpu_usage(RUSAGE_THREAD) - begin;
        });
      break;
    case GuestKind::Process:
      guest = Process::fork(guest_cpu, [&] { return process_guest(o, pairs, st); });
      break;
    case GuestKind::Go: {
      std::vector<std::string> argv{go_guest,
                                    "--shm=" + o.base,
                                    fmt::format("--pairs={}", pairs),
                                    "--wait=" + p.str("wait"),
                                    fmt::format("--spin-limit={}", p.i64("spin_limit"))};
      if (uses_sem(wait)) argv.push_back("--sem=" + o.base);
      if (wait == Wait::Eventfd) {
        std::string fds;
        for (int i = 0; i < pairs; ++i)
          fds += fmt::format("{}{},{}", i ? "," : "", o.to_guest_efd[size_t(i)], o.to_host_efd[size_t(i)]);
        argv.push_back("--efd=" + fds);
      }
      // The guest inherits the eventfds (created close-on-exec for everyone else).
      Spawn how{.cpu = guest_cpu, .keep_fds = o.to_host_efd};
      how.keep_fds.insert(how.keep_fds.end(), o.to_guest_efd.begin(), o.to_guest_efd.end());
      guest = Process::exec(how, argv);
      break;
    }
  }

  // Is the guest process still there? Returns why not ("" while it lives).
  auto guest_gone = [&]() -> std::string {
    if (!guest.running() || guest.alive()) return "";
    return "guest process " + guest.death();
  };

  const uint64_t attach_deadline = now_ns() + uint64_t(kAttachSeconds * 1e9);
  while (r.header.attached.load(std::memory_order_acquire) < uint32_t(pairs)) {
    std::string why = guest_gone();
    if (!why.empty()) throw std::runtime_error(why + " before it attached to the slots");
    if (now_ns() > attach_deadline)
      throw std::runtime_error(fmt::format("guest did not attach to its {} slots within {:.0f} s", pairs,
                                           kAttachSeconds));
    sleep_ns(200'000);
  }

  // Hosts.
  Control ctl;
  std::vector<HostResult> res(static_cast<size_t>(pairs));
  const uint64_t warmup_rt = opts.warmup_s > 0 ? std::max<uint64_t>(1, std::min<uint64_t>(round_trips / 10, 20000)) : 0;
  const uint64_t warmup_ns = uint64_t(opts.warmup_s * 1e9);
  std::vector<std::thread> hosts;
  for (int i = 0; i < pairs; ++i)
    hosts.emplace_back([&, i] {
      HostResult& h = res[size_t(i)];
      Slot& slot = r.slots[i];
      const SideSync io = o.host_side(i);
      uint32_t req = 0;
      auto round_trip = [&](uint64_t k) {
        const int64_t a = value_a(k, i), b = value_b(k, i);
        slot.a = a;
        slot.b = b;
        slot.req_id = ++req;
        st.hand_over(slot, kReqReady, slot.guest_sleeping, io);
        st.wait_for(slot, slot.host_sleeping, io, bit(kRespReady), &ctl.abort);
        return slot.sum == a + b;
      };
      h.tid.store(int(gettid()), std::memory_order_relaxed);
      try {
        pin_current_thread(host_cpu);
        // Warm-up: caches, page tables, the guest's scheduler state; bounded by --warmup.
        const uint64_t w_end = now_ns() + warmup_ns;
        for (uint64_t k = 0; k < warmup_rt && now_ns() < w_end; ++k)
          if (!round_trip(k)) ++h.corrupt;
        // Barrier: the last host to arrive opens the measured window for everyone.
        if (ctl.arrived.fetch_add(1) + 1 == pairs) {
          r.header.measuring.store(1, std::memory_order_relaxed);
          ctl.t_go.store(now_ns(), std::memory_order_release);
        }
        while (ctl.t_go.load(std::memory_order_acquire) == 0) {
          if (ctl.abort.load(std::memory_order_relaxed)) throw Aborted();
          sched_yield();
        }
        const CpuUsage c0 = cpu_usage(RUSAGE_THREAD);
        h.t0 = now_ns();
        uint64_t k = 0;
        for (; k < round_trips; ++k) {
          if (ctl.stop.load(std::memory_order_relaxed)) break;
          const bool timed = k % sample == 0;
          const uint64_t t = timed ? now_ns() : 0;
          if (!round_trip(warmup_rt + k)) ++h.corrupt;
          if (timed) h.hist->record(now_ns() - t);
          h.progress.store(k + 1, std::memory_order_relaxed);
        }
        h.t1 = now_ns();
        h.done = k;
        h.cpu = cpu_usage(RUSAGE_THREAD) - c0;
        h.cpu_seen = current_cpu();
      } catch (const Aborted&) {
        h.error = "aborted";
      } catch (const std::exception& e) {
        h.error = e.what();
        ctl.abort.store(1);
      }
      // Finished before DONE: the guest may exit as soon as its last slot is DONE, and the
      // monitor must then find every host finished (see below), not a guest gone early.
      h.finished.store(1, std::memory_order_release);
      st.finish(slot, io);
    });

  // Monitor. The stall watchdog watches, from the measured window on, each host and its guest:
  // both show progress as the pair's round trips (the guest's answers are what completes them);
  // a stopped guest process is named as the cause.
  std::string failure;
  Watchdog wd(opts.duration_s);
  for (int i = 0; i < pairs; ++i) {
    HostResult& h = res[size_t(i)];
    auto trips = [&h] { return h.progress.load(std::memory_order_relaxed); };
    auto finished = [&h] { return h.finished.load(std::memory_order_acquire) != 0; };
    wd.watch("host", i, -1, -1, trips, finished);
    wd.watch("guest", i, guest.pid(), -1, trips, finished);
  }
  bool tids_known = false;
  const uint64_t hard_deadline = now_ns() + uint64_t(opts.timeout_s() * 1e9);
  auto wake_hosts = [&] {
    for (int i = 0; i < pairs; ++i) {
      SideSync g = o.guest_side(i);  // the guest's way of waking host i
      if (g.peer_sem) sem_post(g.peer_sem);
      if (g.peer_efd >= 0) {
        uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(g.peer_efd, &one, sizeof one);
      }
    }
  };
  auto all_finished = [&] {
    for (auto& h : res)
      if (!h.finished.load(std::memory_order_acquire)) return false;
    return true;
  };
  for (;;) {
    if (all_finished()) break;
    const uint64_t now = now_ns();
    const uint64_t go = ctl.t_go.load(std::memory_order_acquire);
    if (go && now > go + uint64_t(opts.duration_s * 1e9)) ctl.stop.store(1);
    if (go && !tids_known) {  // every host stored its thread id before the window opened
      for (int i = 0; i < pairs; ++i) wd.set_tid(size_t(2 * i), res[size_t(i)].tid.load());
      tids_known = true;
    }
    std::string why = guest_gone();
    // A guest that exited cleanly after the last host handed it DONE ended on time: every
    // host marks itself finished before its DONE, so by then all_finished() holds.
    if (!why.empty() && guest.clean() && all_finished())
      break;
    if (why.empty() && go) why = wd.check();
    if (why.empty() && now > hard_deadline)
      why = fmt::format("run did not end within {:.0f} s", opts.timeout_s());
    if (!why.empty() && failure.empty()) {
      failure = why;
      ctl.abort.store(1);
    }
    if (!failure.empty()) wake_hosts();
    sleep_ns(1'000'000);
  }
  for (auto& t : hosts) t.join();
  for (auto& h : res)
    if (failure.empty() && !h.error.empty() && h.error != "aborted") failure = "host: " + h.error;
  for (int i = 0; i < pairs; ++i) st.finish(r.slots[i], o.host_side(i));
  for (auto& t : guest_threads) t.join();
  guest_threads.clear();
  if (!failure.empty()) guest.stop();  // failed: nothing to wait for
  if (guest.running()) {
    // Let the guest report its CPU window and exit; kill it if it does not.
    if (!guest.wait(3.0)) {
      guest.stop();
      failure = "guest did not exit within 3 s after DONE";
    } else if (!guest.clean()) {
      failure = "guest process " + guest.death();
    }
  }
  Record& rec = s.record();
  if (!failure.empty()) {
    // The counts known at the failure: round trips completed, each sent and received.
    uint64_t trips = 0;
    for (auto& h : res) trips += h.progress.load();
    rec.integrity.sent = rec.integrity.received = trips;
    throw std::runtime_error(failure);
  }

  // Record.
  const uint64_t go = ctl.t_go.load();
  uint64_t t_end = go, ops = 0, corrupt = 0;
  double total_rate = 0, min_rate = 0, max_rate = 0;
  auto hist = std::make_unique<Histogram>();
  nlohmann::json per_pair = nlohmann::json::array(), done = nlohmann::json::array();
  for (size_t i = 0; i < res.size(); ++i) {
    auto& h = res[i];
    t_end = std::max(t_end, h.t1);
    ops += h.done;
    corrupt += h.corrupt;
    hist->merge(*h.hist);
    rec.cpu += h.cpu;
    const double rate = h.t1 > h.t0 ? double(h.done) / (double(h.t1 - h.t0) * 1e-9) : 0.0;
    total_rate += rate;
    min_rate = i ? std::min(min_rate, rate) : rate;
    max_rate = std::max(max_rate, rate);
    per_pair.push_back(std::llround(rate));
    done.push_back(h.done);
  }
  if (kind == GuestKind::Thread) {
    for (auto& c : guest_thread_cpu) rec.cpu += c;
    corrupt += guest_thread_bad.load();
    rec.extra["guest_cpu_source"] = "RUSAGE_THREAD per guest thread";
  } else {
    if (!r.header.finished.load(std::memory_order_acquire))
      throw std::runtime_error("guest exited without reporting its CPU window");
    rec.cpu += usage_of(r.header);
    corrupt += r.header.bad_requests;
    rec.extra["guest_cpu_source"] = "RUSAGE_SELF of the guest process over the measured window";
  }
  rec.ops = ops;
  rec.wall_s = double(t_end - go) * 1e-9;
  rec.integrity.sent = rec.integrity.received = ops;
  rec.integrity.corrupt = corrupt;
  rec.rates["system_effective_ops"] = rec.wall_s > 0 ? double(ops) / rec.wall_s : 0.0;
  rec.rates["total_ops"] = total_rate;
  rec.extra["per_pair_ops"] = per_pair;
  rec.extra["round_trips_done"] = done;
  rec.extra["fairness"] = max_rate > 0 ? min_rate / max_rate : 0.0;
  rec.extra["capped_by_duration"] = ctl.stop.load() != 0;
  rec.extra["object"] = o.base;
  if (hist->count()) rec.latency = Latency::from("rtt", *hist);
  rec.placement.layout = s.placement();
  rec.placement.cpus = opts.cpus;
  for (int i = 0; i < pairs; ++i) {
    Side host{"host", i, {}, {}}, guest{"guest", i, {}, {}};
    if (host_cpu >= 0) host.pinned = {host_cpu};
    if (guest_cpu >= 0) guest.pinned = {guest_cpu};
    if (res[size_t(i)].cpu_seen >= 0) host.observed = {res[size_t(i)].cpu_seen};
    rec.placement.sides.push_back(host);
    rec.placement.sides.push_back(guest);
  }
}

}  // namespace ipclab::pingpong
