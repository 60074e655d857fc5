// The servers suite's workload: start the model's server, run the load generator against it under
// the Session — a wave, or an open loop at a rate — and record it (see suite.hpp).
#include "mechanisms/servers/suite.hpp"

#include <fmt/format.h>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <tuple>

#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/machine/placement.hpp"
#include "core/measure/session.hpp"
#include "core/model/std_params.hpp"
#include "core/peers/server.hpp"
#include "core/process/listener.hpp"
#include "core/remote/remote.hpp"
#include "core/run/openloop.hpp"
#include "mechanisms/servers/loadgen.hpp"

namespace ipclab::servers {
namespace {

IPCLAB_REGISTER(Suite{
    .name = "servers",
    .help =
        "socket server models (blocking, threads, select, poll, epoll, io_uring, Asio; epoll and io_uring "
        "also with a reactor per core, -p reactors) under up to 10,000 concurrent clients of the reference "
        "protocol (reference 001)",
    .plots = {"session_outcomes", "session_latency_percentiles", "server_cpu_per_session"},
    .scaling = {"threads", "reactors"},
    .tables = with_open_loop_tables(
        {{.id = "sessions",
          .title = "Sessions: every client connects at once, makes its requests and closes",
          .where = "closed_loop",
          .figures = {{"processed", "extra_number:processed"},
                      {"rejected", "extra_number:rejected"},
                      {"lost", "extra_number:lost"},
                      {"sessions/s", "rate:sessions_per_s"},
                      {"session p50", "latency:p50"},
                      {"session p99", "latency:p99"},
                      {"request p50", "extra_time:request_ns.p50"},
                      {"request p99", "extra_time:request_ns.p99"},
                      {"connect p50", "extra_time:connect_ns.p50"},
                      {"connect p99", "extra_time:connect_ns.p99"},
                      {"server CPU/session", "extra_time:server_cpu_per_session_ns"}},
          .label = "server"}},
        "session", "sessions arrive at a rate", "server"),
});

// The most sessions open at once: the wave's `concurrency`, and the open loop's bound besides the
// model's own limit and the descriptors RLIMIT_NOFILE leaves.
constexpr int64_t kMaxSessions = 100000;
// The harness's own descriptors, beside one per session.
constexpr uint64_t kOwnFds = 64;
// The most reactors a multi-reactor model runs: threads of one server process.
constexpr int64_t kMaxReactors = 256;

// The multi-reactor models registered (ServerModel::multi_reactor), for the others' refusal.
std::vector<std::string>& multi_reactor_models() {
  static std::vector<std::string> names;
  return names;
}

std::vector<ParamSpec> suite_params(const ServerModel& m) {
  ParamSpec pattern = std_params::closed_or_rate();
  pattern.help =
      "closed: waves of `concurrency` sessions started at once, one wave after another (-p waves); rate: "
      "sessions arrive on a schedule (-p rate= sessions/s), latency from each one's intended start";
  std::vector<ParamSpec> ps = {
      pattern,
      {.name = "concurrency",
       .type = ParamType::Int,
       .def = "100",
       .help = "clients started at once, one session each (the reference's concurrency)",
       .quick = {"100", "1000"},
       .full = {"100", "2000", "10000"},
       .min = 1,
       .max = kMaxSessions,
       .only_with = {"pattern", {"closed"}}},
      {.name = "waves",
       .type = ParamType::Int,
       .def = "0",
       .help = "closed: 0, waves one after another until the measured window holds --duration (at least one; "
               "the warm-up likewise holds --warmup), as every window is sized to its duration; N, exactly N "
               "measured waves (and one warm-up wave when --warmup > 0)",
       .min = 0,
       .max = 1'000'000,
       .only_with = {"pattern", {"closed"}}},
      {.name = "backlog",
       .type = ParamType::Int,
       .def = "4096",
       .help = "listen backlog (the kernel caps it to net.core.somaxconn; each reactor's listener has it)",
       .min = 1,
       .max = 1 << 20},
      {.name = "reactors",
       .type = ParamType::Int,
       .def = "1",
       .help = "reactor threads of the models that run several (epoll_reuseport, uring; the others refuse "
               "more than 1), each pinned, each with its own SO_REUSEPORT listener on the one port; "
               "placement=cross: the load generator on the first --cpus CPU, reactor i on the (i+2)-th, "
               "round-robin over --cpus (so a reactor shares the load generator's CPU only when there are as "
               "many reactors as --cpus CPUs); same: all on the first; the placement classes (smt, llc, …) "
               "take reactors=1 only; on more than 2 CPUs the presets scale it: 1, 2, 4 … CPUs",
       .min = 1,
       .max = kMaxReactors,
       .per_cpu = 1},
  };
  for (auto& p : m.extra_params) ps.push_back(p);
  ps.push_back({.name = "connect_timeout_ms",
                .type = ParamType::Int,
                .def = "3000",
                .help = "a connect not completed by then counts as rejected",
                .min = 1,
                .max = 3'600'000});
  ps.push_back({.name = "session_timeout_ms",
                .type = ParamType::Int,
                .def = "10000",
                .help = "a started session not completed by then counts as lost",
                .min = 1,
                .max = 3'600'000});
  ps.push_back(std_params::placement({"cross", "same", "unpinned"}, {"cross"}));
  for (auto& r : std_params::rate_params()) ps.push_back(std::move(r));
  return ps;
}

// The listen backlog in effect: the parameter, which the kernel caps to net.core.somaxconn.
int backlog_of(const Params& p) { return int(std::min<int64_t>(p.i64("backlog"), somaxconn())); }

// The CPUs of a multi-reactor model's reactor threads (ServerLaunch::reactor_cpus) when it runs
// more than one; empty otherwise: one reactor, the server's process pinned to the server's CPU.
// cross: reactor i on the (i+2)-th CPU of --cpus, the first being the load generator's, round-robin
// over --cpus; same: all on the one CPU; unpinned: -1 each.
std::vector<int> reactor_cpus(const ServerModel& m, const Session& s) {
  const auto k = size_t(s.params().i64("reactors"));
  if (!m.multi_reactor || k < 2) return {};
  if (s.placement() == "cross") return round_robin(s.options().cpus, 1, k);
  return std::vector<int>(k, s.cpu_for(1));
}

ServerLaunch server_launch(const ServerModel& m, const Session& s) {
  if (m.argv) return {.argv = m.argv(s.params())};
  return {.serve = [serve = m.serve, p = s.params()](int lfd) { serve(lfd, p); },
          .backlog = backlog_of(s.params()),
          .nonblocking = m.event_driven,
          .reactor_cpus = reactor_cpus(m, s)};
}

// What the load generator's worker shares with the workload: on the heap, since a worker thread
// that could not be stopped must find it still there.
struct Waves {
  std::atomic<uint64_t> progress{0};  // the server's heartbeat: connects, replies, session ends
  LoadResult warmup, measured;
  uint64_t waves = 0;  // closed: the measured waves run
};

// pattern=rate: the most sessions open at once — what RLIMIT_NOFILE (raised to its hard limit, which
// the server inherits) leaves beside the harness's own, the model's own limit (select: FD_SETSIZE),
// and the suite's bound.
size_t open_cap(const ServerModel& m) {
  ensure_nofile(kOwnFds + 1, "pattern=rate");
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  uint64_t cap = uint64_t(kMaxSessions);
  if (rl.rlim_cur != RLIM_INFINITY) cap = std::min<uint64_t>(cap, rl.rlim_cur - kOwnFds);
  if (m.max_concurrency) cap = std::min<uint64_t>(cap, m.max_concurrency);
  return size_t(cap);
}

// What the measured sessions come to, into the worker's slot. A blocking model's lost sessions are
// its documented weakness, not a fault (nor an external server's, which may be anything): they
// count as lost only for an event-driven one.
void report_sessions(Worker& w, const LoadResult& r, uint64_t sent, bool event_driven) {
  auto& out = w.out();
  out.ops = r.processed;
  out.hist.merge(r.session);
  out.integrity.sent = sent;
  out.integrity.received = r.processed;
  out.integrity.corrupt = r.corrupt;
  if (event_driven) out.integrity.lost = r.lost;
}

// The load generator at `o.rate`, time-bounded: sessions arrive through --warmup and --duration;
// those started inside the window are measured, and are served to their end after it.
std::function<void(Worker&)> open_loop_body(const LoadConfig& cfg, const OpenLoop& o, Waves* wv,
                                            bool event_driven) {
  return [cfg, o, wv, event_driven](Worker& w) {
    run_open_loop(cfg, o, w, wv->progress, wv->warmup, wv->measured);
    report_sessions(w, wv->measured, wv->measured.started, event_driven);
    // A corrupt reply is the server's fault whenever it comes: one in the warm-up fails the run too.
    w.out().integrity.corrupt += wv->warmup.corrupt;
  };
}

// The load generator in waves of `clients` sessions one after another, each served to its end,
// until the window holds --duration (or `waves` of them); --warmup > 0: unmeasured waves first
// (one when `waves` is fixed), as the measured ones.
std::function<void(Worker&)> waves_body(const Session& s, const LoadConfig& cfg, Waves* wv, int clients,
                                        bool event_driven) {
  const auto fixed = uint64_t(s.params().i64("waves"));
  const auto warm_ns = uint64_t(s.options().warmup_s * 1e9),
             window_ns = uint64_t(s.options().duration_s * 1e9);
  // Waves into `out` while the run goes on: at least one, then `fixed` of them or until `span_ns`
  // has passed. Returns how many ran.
  auto waves_for = [cfg, wv](Worker& w, LoadResult& out, uint64_t count, uint64_t span_ns) {
    const uint64_t t0 = now_ns();
    uint64_t n = 0;
    do {
      run_load(cfg, w, wv->progress, out);
      ++n;
    } while (w.running() && (count ? n < count : now_ns() - t0 < span_ns));
    return n;
  };
  return [wv, event_driven, waves_for, fixed, warm_ns, window_ns, clients,
          warm = s.options().warmup_s > 0](Worker& w) {
    if (warm) w.hold_warmup();
    w.ready();
    if (warm) {
      waves_for(w, wv->warmup, fixed ? 1 : 0, warm_ns);
      w.warmed();
    }
    while (w.running() && !w.measuring()) sleep_ns(20'000);
    if (!w.measuring()) return;
    wv->waves = waves_for(w, wv->measured, fixed, window_ns);
    report_sessions(w, wv->measured, wv->waves * uint64_t(clients), event_driven);
  };
}

// The sessions' outcomes into `x` (the record's extra): the open loop's or the waves', how many
// were processed, rejected and lost and why, and the connects' and requests' latencies.
void record_sessions(nlohmann::json& x, const LoadResult& res, const OpenLoop* ol, int clients,
                     uint64_t waves) {
  if (ol) {
    x["max_open"] = ol->max_open;
    x["peak_open"] = res.peak_open;
    x["started"] = res.started;
    x["over_cap"] = res.over_cap;
  } else {
    x["concurrency"] = clients;
    x["waves"] = waves;
  }
  x["processed"] = res.processed;
  x["rejected"] = res.rejected;
  x["lost"] = res.lost;
  x["rejected_by"] = {{"refused", res.rejected_refused},
                      {"reset", res.rejected_reset},
                      {"timeout", res.rejected_timeout},
                      {"other", res.rejected_other}};
  x["lost_by"] = {{"timeout", res.lost_timeout}, {"closed", res.lost_closed}};
  if (res.connect.count()) {
    Latency c = Latency::from("connect", res.connect);
    x["connect_ns"] = {{"p50", c.p50}, {"p90", c.p90}, {"p99", c.p99}, {"max", c.max}};
  }
  if (res.request.count()) {  // each request line's round trip (loadgen.hpp), beside the session's
    Latency q = Latency::from("request", res.request);
    x["request_ns"] = {{"p50", q.p50},   {"p90", q.p90}, {"p99", q.p99},
                       {"p999", q.p999}, {"max", q.max}, {"count", q.count}};
  }
}

// Where the server and the load generator ran: the server's command, its process's CPU or its
// reactors' (each a side of its own, where it was pinned), the load generator's CPU.
void record_sides(Record& rec, const ServerModel& m, const Session& s, const std::vector<int>& reactors,
                  int client_cpu, int server_cpu) {
  auto& x = rec.extra;
  if (m.argv) x["server"] = m.argv(s.params());
  x["server_pid_cpu"] = reactors.empty()
                            ? std::to_string(server_cpu)
                            : "unpinned; each reactor thread pinned (placement.sides, role reactor)";
  x["client_cpu"] = client_cpu;
  add_reactor_sides(rec.placement, reactors);
  if (s.placement() == "cross" && std::find(reactors.begin(), reactors.end(), client_cpu) != reactors.end())
    x["reactor_note"] =
        fmt::format("{} reactors over {} CPUs of --cpus: a reactor shares the load generator's CPU {}",
                    reactors.size(), s.options().cpus.size(), client_cpu);
}

// One run against a fresh server: the closed wave (`ol` null), or the open loop at `ol->rate`,
// whose figures it returns.
std::optional<RatePoint> run_point(const ServerModel& m, Session& s, const OpenLoop* ol) {
  const Params& p = s.params();
  const int clients = ol ? 0 : int(p.i64("concurrency"));
  if (!ol) {
    if (m.max_concurrency && size_t(clients) > m.max_concurrency) throw Skip(m.max_why);
    ensure_nofile(uint64_t(clients) + kOwnFds, fmt::format("concurrency {}", clients));
  }
  const int backlog = backlog_of(p);
  auto& rec = s.record();
  rec.extra["backlog"] = backlog;
  if (backlog < p.i64("backlog"))
    rec.extra["backlog_note"] = fmt::format("capped to net.core.somaxconn = {}", somaxconn());

  const int client_cpu = s.cpu_for(0), server_cpu = s.cpu_for(1);
  // Several reactors pin their own threads: the process itself is then unpinned.
  const std::vector<int> reactors = reactor_cpus(m, s);
  const int process_cpu = reactors.empty() ? server_cpu : -1;
  // Here, or with --remote on the other host (core/remote/remote.hpp), its CPU measured there.
  remote::BenchServer server(s, s.mechanism().server(s), process_cpu);

  const LoadConfig cfg{.port = server.port(),
                       .address = server.address(),
                       .clients = clients,
                       .connect_timeout_s = double(p.i64("connect_timeout_ms")) * 1e-3,
                       .session_timeout_s = double(p.i64("session_timeout_ms")) * 1e-3};
  auto waves = std::make_unique<Waves>();
  Waves* wv = waves.get();
  // The server shows progress only through the sessions the load generator sees advance.
  server.watch(s, [wv] { return wv->progress.load(std::memory_order_relaxed); });
  std::function<void(Worker&)> body;
  if (ol) {
    body = open_loop_body(cfg, *ol, wv, m.event_driven);
  } else {
    // Waves are bounded by their work: after the run's own time-out, the last wave's connects and
    // sessions besides.
    s.until_done(s.options().timeout_s() + cfg.connect_timeout_s + cfg.session_timeout_s);
    body = waves_body(s, cfg, wv, clients, m.event_driven);
  }
  // No series: the load generator's sessions are reported once, at the end (report_sessions).
  const WorkerResults slots = s.run_workers(
      {{.role = "client", .index = 0, .cpu = client_cpu, .body = std::move(body), .series = false}}, false,
      "session");
  const auto [window, whole] = server.stop(s);
  if (s.stuck()) {  // the record failed; the stuck worker may still use the waves
    waves.release();
    return std::nullopt;
  }

  const LoadResult& res = wv->measured;
  const double server_cpu_s = window.total_s();
  if (const std::string on = server.measured_on(); !on.empty()) rec.extra["server_measured_on"] = on;
  const double client_cpu_s = slots[0].cpu.total_s();
  rec.rates["sessions_per_s"] = rec.wall_s > 0 ? double(res.processed) / rec.wall_s : 0.0;
  auto& x = rec.extra;
  record_sessions(x, res, ol, clients, wv->waves);
  x["server_cpu_s"] = server_cpu_s;
  x["server_cpu_per_session_ns"] = res.processed ? server_cpu_s * 1e9 / double(res.processed) : 0.0;
  x["client_cpu_per_session_ns"] = res.processed ? client_cpu_s * 1e9 / double(res.processed) : 0.0;
  x["server_cpu_whole_life_s"] = whole.total_s();
  record_sides(rec, m, s, reactors, client_cpu, server_cpu);
  if (m.event_driven && (res.rejected || res.lost))
    rec.fail(fmt::format("an event-driven server must serve every client: {} rejected, {} lost", res.rejected,
                         res.lost));
  if (!ol) return std::nullopt;
  // Sessions not started at the cap: the load asked for was not offered, whatever else the rates say.
  const std::string cause =
      res.over_cap
          ? fmt::format("{} sessions due while {} were open (the most at once here) were not started",
                        res.over_cap, ol->max_open)
          : "";
  return fold_rate(rec, ol->spec, ol->rate, slots, 1, cause);
}

void run_model(const ServerModel& m, Session& s) {
  if (!std_params::is_rate(s.params())) {
    run_point(m, s, nullptr);
    return;
  }
  const size_t cap = open_cap(m);
  run_rate(s, [&m, cap](Session& ss, int64_t rate) {
    OpenLoop ol{.spec = RateSpec::of(ss.params()),
                .rate = rate,
                .max_open = cap,
                .window_ns = uint64_t(ss.options().duration_s * 1e9)};
    // The load generator's pacing floor on its CPU, before the server starts.
    ol.spec.measure_floor(rate, 1, ss.cpu_for(0));
    // A stuck worker (the record failed) leaves no figures: the point is saturated, never a figure.
    return run_point(m, ss, &ol).value_or(RatePoint{.requested = double(rate), .saturated = true});
  });
}

}  // namespace

Mechanism make_mechanism(ServerModel model) {
  Mechanism mech{.suite = "servers", .name = model.name, .help = model.help, .params = suite_params(model)};
  if (model.multi_reactor) multi_reactor_models().push_back(model.name);
  mech.workload = [model](Session& s) { run_model(model, s); };
  mech.server = [model](const Session& s) { return server_launch(model, s); };
  mech.check = [multi = model.multi_reactor](const Params& p) -> std::string {
    if (p.i64("reactors") == 1) return "";
    // A class relates two CPUs, the load generator's and the server's: several reactors have no such pair.
    if (multi && is_class_layout(p.str("placement")))
      return fmt::format(
          "placement={} places two sides on a pair of CPUs, and reactors > 1 need more: use "
          "placement=cross, same or unpinned, or reactors=1",
          p.str("placement"));
    if (multi) return "";
    std::string models;
    for (const auto& n : multi_reactor_models()) models += (models.empty() ? "" : ", ") + n;
    return fmt::format("this model does not run several reactors: use reactors=1, or a model that does ({})",
                       models.empty() ? "none in this build" : models);
  };
  return mech;
}

}  // namespace ipclab::servers
