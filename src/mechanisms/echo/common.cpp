// The echo suite's parameters and workload (see common.hpp); the client is client.hpp.
#include "mechanisms/echo/common.hpp"

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <stdexcept>

#include "core/error.hpp"
#include "core/listener.hpp"
#include "core/server.hpp"
#include "core/session.hpp"
#include "core/std_params.hpp"
#include "mechanisms/echo/client.hpp"

namespace ipclab::echo {
namespace {

IPCLAB_REGISTER(Suite{
    .name = "echo",
    .help = "TCP echo over loopback: server pinned to one CPU, event-driven client on the other; "
            "throughput, RTT and server CPU per echo (reference 003)",
});

// The client runs on the first of --cpus, the server on the second (on the first too when there
// is only one); -1: unpinned.
int client_cpu(const RunOptions& o) { return o.cpus.empty() ? -1 : o.cpus[0]; }
int server_cpu(const RunOptions& o) { return o.cpus.size() > 1 ? o.cpus[1] : client_cpu(o); }
const char* layout_of(const RunOptions& o) {
  return o.cpus.empty() ? "unpinned" : o.cpus.size() > 1 ? "cross" : "same";
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

namespace {

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

  ServerLaunch launch = s.mechanism().server(s);
  // Open loop: several requests in flight per connection, so no Nagle on the server's sockets (an
  // exec'd server sets its own options).
  launch.nodelay = spec != nullptr;
  ServerProcess server = ServerProcess::start(launch, server_cpu(o));
  // On the heap, for the worker thread to find even if it could not be stopped.
  auto client = std::make_unique<Client>(size_t(p.i64("size")));
  Client* cl = client.get();
  // The server shows progress only through the echoes the client completes.
  s.add_peer(
      {.role = "server", .index = 0, .process = &server.process(), .cpu = server_cpu(o), .progress = [cl] {
         return cl->echoes.load(std::memory_order_relaxed);
       }});
  const int port = server.port();
  const RateSpec rate_spec = spec ? *spec : RateSpec{};  // copied into the worker's body
  const auto window_ns = uint64_t(o.duration_s * 1e9);
  Control& ctl = s.run_workers({{"client", 0, client_cpu(o),
                                 [cl, port, nconn, uring, spec, rate_spec, rate, window_ns](Worker& w) {
                                   cl->connect(port, size_t(nconn));
                                   if (!cl->error.empty()) throw std::runtime_error(cl->error);
                                   cl->worker = &w;
                                   w.ready();
                                   if (spec)
                                     drive_epoll_rate(*cl, rate_spec, rate, window_ns);
                                   else
                                     uring ? drive_uring(*cl) : drive_epoll(*cl);
                                   if (!cl->error.empty()) throw std::runtime_error(cl->error);
                                 }}},
                               false, "rtt");
  // The connections stay open until the run is over: the server's death is a failure, what it
  // does once its client has gone is not. The client goes first, then the server.
  if (s.stuck()) client.release();  // the stuck worker may still use it
  client.reset();
  const CpuUsage whole = server.stop();

  auto& rec = s.record();
  const CpuUsage& srv = s.peer_cpu().at(0);
  const CpuUsage& cli = ctl.slots[0].cpu;
  const double server_cpu_s = srv.total_s();
  rec.placement.layout = layout_of(o);  // the suite's fixed layout (it has no placement parameter)
  rec.rates["echoes_per_s"] = rec.wall_s > 0 ? double(rec.ops) / rec.wall_s : 0.0;
  rec.rates["MiB_per_s"] = rec.wall_s > 0 ? double(rec.bytes) / rec.wall_s / (1 << 20) : 0.0;
  auto& x = rec.extra;
  x["client"] = uring ? "io_uring" : "epoll";
  x["server_cpu_s"] = server_cpu_s;
  x["server_cpu_per_echo_ns"] = rec.ops ? server_cpu_s * 1e9 / double(rec.ops) : 0.0;
  x["client_cpu_per_echo_ns"] = rec.ops ? cli.total_s() * 1e9 / double(rec.ops) : 0.0;
  x["server_cpu_whole_life_s"] = whole.total_s();
  x["server"] = launch.argv.empty() ? "forked" : launch.argv[0];
  if (!spec) return std::nullopt;
  return fold_rate(rec, *spec, rate, ctl, 1);
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
