// The echo suite's parameters and workload (see common.hpp); the client is client.hpp.
#include "mechanisms/echo/common.hpp"

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <stdexcept>

#include "core/base/error.hpp"
#include "core/machine/placement.hpp"
#include "core/measure/session.hpp"
#include "core/model/std_params.hpp"
#include "core/peers/server.hpp"
#include "core/process/listener.hpp"
#include "core/remote/remote.hpp"
#include "mechanisms/echo/client.hpp"

namespace ipclab::echo {
namespace {

IPCLAB_REGISTER(Suite{
    .name = "echo",
    .help = "TCP echo over loopback: server pinned to one CPU, event-driven client on the other (or "
            "`reactors` of each, one per CPU); throughput, RTT and server CPU per echo (reference 003)",
    .plots = {"echo_rate_vs_connections", "cpu_per_echo_vs_connections",
              "server_cpu_per_echo_vs_connections"},
    .scaling = {"reactors"},
    .tables = with_open_loop_tables({{.id = "servers",
                                      .title = "Echo servers: one message in flight per connection",
                                      .where = "closed_loop",
                                      .figures = {{"echoes/s", "rate"},
                                                  {"RTT p50", "latency:p50"},
                                                  {"RTT p99", "latency:p99"},
                                                  {"server CPU/echo", "extra_time:server_cpu_per_echo_ns"},
                                                  {"client CPU/echo", "extra_time:client_cpu_per_echo_ns"}},
                                      .label = "server"}},
                                    "echo", "the client sends at an aggregate rate across its connections",
                                    "server"),
});

// The most reactors: each brings a client thread, and a Session runs kMaxWorkers workers at most.
constexpr int64_t kMaxReactors = kMaxWorkers;

// Where the sides run with `k` reactors: client thread j on the (j+1)-th CPU of --cpus, reactor i
// on the (k+i+1)-th, round-robin over --cpus — with k = 1 the client on the first and the server
// on the second (on the first too when there is only one); -1 each: unpinned.
struct Layout {
  std::vector<int> clients, reactors;
};
Layout layout_for(const RunOptions& o, size_t k) {
  return {round_robin(o.cpus, 0, k), round_robin(o.cpus, k, k)};
}
const char* layout_of(const RunOptions& o) {
  return o.cpus.empty() ? "unpinned" : o.cpus.size() > 1 ? "cross" : "same";
}

// The servers that run several reactors (suite_check), for the others' refusal.
std::vector<std::string>& multi_reactor_servers() {
  static std::vector<std::string> names;
  return names;
}

}  // namespace

std::vector<ParamSpec> suite_params(std::vector<ParamSpec> extra) {
  std::vector<ParamSpec> ps = {
      {.name = "connections",
       .type = ParamType::Int,
       .def = "16",
       .help = "client connections: one message in flight on each, or with pattern=rate as many as "
               "the schedule starts",
       .quick = {"16", "64"},
       .full = {"1", "4", "8", "16", "32", "64"},
       .min = 1,
       .max = 4096},
      {.name = "size",
       .type = ParamType::Size,
       .def = "1024",
       .help = "message size in bytes",
       .min = 1,
       .max = kMaxSize},
      {.name = "reactors",
       .type = ParamType::Int,
       .def = "1",
       .help =
           "server reactor threads (epoll, uring; the other servers refuse more than 1), each pinned with "
           "its own SO_REUSEPORT listener on the one port, and as many client threads, the connections "
           "dealt among them: client thread j on the (j+1)-th --cpus CPU, reactor i on the "
           "(reactors+i+1)-th, round-robin over --cpus (so 2 CPUs a reactor; they share CPUs when --cpus "
           "has fewer); on more than 2 CPUs the presets scale it: 1, 2, 4 … CPUs/2",
       .min = 1,
       .max = kMaxReactors,
       .per_cpu = 2},
      std_params::closed_or_rate(),
      // uring by default: the cheaper loop, so the servers, not the client, set the pace. The
      // open-loop client (pattern=rate) is the epoll loop only.
      {.name = "client",
       .type = ParamType::String,
       .def = have_uring_client() ? "uring" : "epoll",
       .choices = {"epoll", "uring"},
       .help = "the load generator's loop: uring (multishot recv, one SQE per send, no syscall per "
               "message) or epoll (recv and send per message); the server's sends pay for waking it",
       .only_with = {"pattern", {"closed"}}},
  };
  for (auto& p : std_params::rate_params()) ps.push_back(p);
  for (auto& p : extra) ps.push_back(p);
  return ps;
}

std::function<std::string(const Params&)> suite_check(const std::string& name, bool multi_reactor) {
  if (multi_reactor) multi_reactor_servers().push_back(name);
  return [multi_reactor](const Params& p) -> std::string {
    const int64_t k = p.i64("reactors");
    if (k == 1) return "";
    if (!multi_reactor) {
      std::string names;
      for (const auto& n : multi_reactor_servers()) names += (names.empty() ? "echo/" : ", echo/") + n;
      return fmt::format(
          "this server does not run several reactors: use reactors=1, or a server that does ({})",
          names.empty() ? "none in this build" : names);
    }
    if (p.i64("connections") < k)
      return fmt::format(
          "reactors={} runs {} client threads, each with its own connections: use connections >= {}", k, k,
          k);
    return "";
  };
}

namespace {

// How the client threads drive their connections: the uring or the epoll loop, closed; or (`spec`
// given) the epoll loop open at `rate`, each thread at its share, its window `window_ns`.
struct Drive {
  bool uring = false;
  const RateSpec* spec = nullptr;
  RateSpec rate_spec;  // copied into the workers' bodies
  int64_t rate = 0;
  uint64_t window_ns = 0;
};

// A worker per client thread (`cls`, on `at.clients`), each opening its share of the `nconn`
// connections to the server (the first nconn % k one more) and driving them.
std::vector<WorkerSpec> client_workers(const std::vector<Client*>& cls, const Layout& at, int port,
                                       const std::string& address, int64_t nconn, const Drive& d) {
  const size_t k = cls.size();
  std::vector<WorkerSpec> workers;
  for (size_t j = 0; j < k; ++j) {
    const size_t n = size_t(nconn) / k + (j < size_t(nconn) % k ? 1 : 0);
    workers.push_back({"client", int(j), at.clients[j], [cl = cls[j], port, address, n, d, j, k](Worker& w) {
                         cl->connect(port, n, address);
                         if (!cl->error.empty()) throw std::runtime_error(cl->error);
                         cl->worker = &w;
                         w.ready();
                         if (d.spec)
                           drive_epoll_rate(*cl, d.rate_spec, d.rate, d.window_ns, int(j), int(k));
                         else
                           d.uring ? drive_uring(*cl) : drive_epoll(*cl);
                         if (!cl->error.empty()) throw std::runtime_error(cl->error);
                       }});
  }
  return workers;
}

// The run's figures beside the Session's: echoes and MiB per second, the server's CPU in the
// window (`srv`) and over its life, the clients' (`cli`) per echo, which client and server ran
// and where the server was measured.
void record_echoes(Record& rec, const RunOptions& o, size_t k, bool uring, const ServerLaunch& launch,
                   const std::string& measured_on, const CpuUsage& srv, const CpuUsage& whole,
                   const CpuUsage& cli) {
  const double server_cpu_s = srv.total_s();
  rec.rates["echoes_per_s"] = rec.wall_s > 0 ? double(rec.ops) / rec.wall_s : 0.0;
  rec.rates["MiB_per_s"] = rec.wall_s > 0 ? double(rec.bytes) / rec.wall_s / (1 << 20) : 0.0;
  auto& x = rec.extra;
  x["client"] = uring ? "io_uring" : "epoll";
  x["server_cpu_s"] = server_cpu_s;
  x["server_cpu_per_echo_ns"] = rec.ops ? server_cpu_s * 1e9 / double(rec.ops) : 0.0;
  x["client_cpu_per_echo_ns"] = rec.ops ? cli.total_s() * 1e9 / double(rec.ops) : 0.0;
  x["server_cpu_whole_life_s"] = whole.total_s();
  x["server"] = launch.argv.empty() ? "forked" : launch.argv[0];
  if (!measured_on.empty()) x["server_measured_on"] = measured_on;
  if (k > 1 && !o.cpus.empty() && o.cpus.size() < 2 * k)
    x["reactor_note"] = fmt::format(
        "{} reactors and {} client threads over {} CPUs of --cpus: they share CPUs", k, k, o.cpus.size());
}

// One run: start the mechanism's server, run the client through the Session's warm-up and
// measured window, verify, stop. Closed loop, or (spec given) open loop at `rate`, whose figures
// it returns.
std::optional<RatePoint> echo_point(Session& s, const RateSpec* spec, int64_t rate) {
  const Params& p = s.params();
  const RunOptions& o = s.options();
  const bool uring = !spec && p.str("client") == "uring";
  if (uring && !have_uring_client())
    throw UsageError("client=uring needs the io_uring runtime, which this build left out; use client=epoll");
  const int64_t nconn = p.i64("connections");
  ensure_nofile(uint64_t(nconn) + 64, fmt::format("connections {}", nconn));
  const auto k = size_t(p.i64("reactors"));
  const Layout at = layout_for(o, k);
  Drive drive{.uring = uring, .spec = spec, .rate = rate, .window_ns = uint64_t(o.duration_s * 1e9)};
  // Open loop: the pacing floor of one client thread at its share of the rate, on the first client
  // thread's CPU, before the server starts.
  if (spec) {
    drive.rate_spec = *spec;
    drive.rate_spec.measure_floor(rate, int(k), at.clients[0]);
  }

  ServerLaunch launch = s.mechanism().server(s);
  // Open loop: several requests in flight per connection, so no Nagle on the server's sockets (an
  // exec'd server sets its own options).
  launch.nodelay = spec != nullptr;
  // Several reactors pin their own threads: the process itself is then unpinned.
  if (k > 1) launch.reactor_cpus = at.reactors;
  const int process_cpu = k > 1 ? -1 : at.reactors[0];
  // Here, or with --remote on the other host (core/remote/remote.hpp), its CPU measured there.
  remote::BenchServer server(s, launch, process_cpu);
  // A client per client thread, on the heap, for a worker thread to find even if it could not be
  // stopped.
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<Client*> cls;
  for (size_t j = 0; j < k; ++j)
    cls.push_back(clients.emplace_back(std::make_unique<Client>(size_t(p.i64("size")))).get());
  // The server shows progress only through the echoes the clients complete.
  server.watch(s, [cls] {
    uint64_t n = 0;
    for (const Client* cl : cls) n += cl->echoes.load(std::memory_order_relaxed);
    return n;
  });
  const WorkerResults slots =
      s.run_workers(client_workers(cls, at, server.port(), server.address(), nconn, drive), false, "rtt");
  // The connections stay open until the run is over: the server's death is a failure, what it
  // does once its clients have gone is not. The clients go first, then the server.
  if (s.stuck())  // a stuck worker may still use them
    for (auto& c : clients) (void)c.release();
  clients.clear();
  const auto [srv, whole] = server.stop(s);

  auto& rec = s.record();
  CpuUsage cli;
  for (size_t j = 0; j < k; ++j) cli += slots[j].cpu;
  rec.placement.layout = layout_of(o);  // the suite's fixed layout (it has no placement parameter)
  // Each reactor thread is a side of its own, where it was pinned.
  server.add_reactor_sides(rec.placement, launch);  // none with one reactor
  record_echoes(rec, o, k, uring, launch, server.measured_on(), srv, whole, cli);
  if (!spec) return std::nullopt;
  return fold_rate(rec, drive.rate_spec, rate, slots, int(k));
}

}  // namespace

void run_echo(Session& s) {
  if (!std_params::is_rate(s.params())) {
    echo_point(s, nullptr, 0);
    return;
  }
  // Every point (each trial of rate=auto too) starts a server of its own: a trial is a Session of
  // its own, whose peers and CPU are its own, and no trial inherits another's backlog.
  run_rate(s, [](Session& ss, int64_t rate) {
    const RateSpec spec = RateSpec::of(ss.params());
    return *echo_point(ss, &spec, rate);
  });
}

}  // namespace ipclab::echo
