// echo/ab: two echo servers side by side in one run, in alternating turns. Both servers run for
// the whole run, pinned to the same server CPU; the one client holds `connections` connections to
// each and loads one server at a time, switching every `slice_ms` (the turn ends by draining the
// messages in flight, so each slice holds only its own server's work). Each pair of consecutive
// slices gives the ratio b/a of echoes/s and of server CPU per echo, measured a few milliseconds
// apart on the same vCPUs.
//
// Why: on a VM whose host moves the vCPUs (docs/methodology.md), two runs seconds apart differ by
// ±20% for the same server, more than the servers differ; pairing slices 50 ms apart, like
// ipclab_ring_vs_c2c does for the rings, compares the servers under the same conditions.
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/runner.hpp"
#include "core/session.hpp"
#include "mechanisms/echo/client.hpp"
#include "mechanisms/echo/common.hpp"

namespace ipclab::echo {
namespace {

const Mechanism& echo_mechanism(const std::string& name) {
  for (const auto& m : Registry::get().mechanisms())
    if (m.suite == "echo" && m.name == name && name != "ab") return m;
  std::string names;
  for (const auto& m : Registry::get().mechanisms())
    if (m.suite == "echo" && m.name != "ab") names += (names.empty() ? "" : ", ") + m.name;
  throw UsageError(fmt::format("echo/ab: no echo server '{}'; pick one of {}", name, names));
}

// The side's parameters: its mechanism's defaults, then `set` ("defaults", or name-value pairs
// joined by '+': fixed_files-1+wait_nr-2), with the pair's connections, size and client.
Params side_params(const Mechanism& m, const Params& p, const char* set_param) {
  Overrides o;
  const std::string set = p.str(set_param);
  for (size_t at = 0; set != "defaults" && at < set.size();) {
    const size_t end = std::min(set.find('+', at), set.size());
    const std::string item = set.substr(at, end - at);
    const size_t dash = item.find('-');
    const std::string name = item.substr(0, dash);
    const bool known = std::any_of(m.params.begin(), m.params.end(), [&](const ParamSpec& ps) { return ps.name == name; });
    if (dash == std::string::npos || dash == 0 || !known || name == "connections" || name == "size" ||
        name == "client")
      throw UsageError(fmt::format("echo/ab: {}={}: '{}' is not name-value of a parameter of {} other than "
                                   "connections, size and client (see `ipclab list echo`)",
                                   set_param, set, item, m.full_name()));
    o[name] = {item.substr(dash + 1)};
    at = end + 1;
  }
  for (const char* k : {"connections", "size", "client"}) o[k] = {p.str(k)};
  Params side = expand_grid(m.params, Preset::Default, o).at(0);
  if (m.check)
    if (std::string why = m.check(side); !why.empty()) throw UsageError(fmt::format("echo/ab: {}: {}", m.full_name(), why));
  return side;
}

void run_ab(Session& s) {
  const Params& p = s.params();
  const Mechanism* m[2] = {&echo_mechanism(p.str("a")), &echo_mechanism(p.str("b"))};
  if (m[0] == m[1] && p.str("a_set") == p.str("b_set"))
    throw UsageError("echo/ab: a and b are the same server with the same settings; pick two different ones");
  const int nconn = int(p.i64("connections"));
  const size_t size = size_t(p.i64("size"));
  const bool uring_client = p.str("client") == "uring";
  if (uring_client && !have_uring_client())
    throw UsageError("client=uring needs the io_uring runtime, which this build left out; use client=epoll");
  servers::ensure_nofile(2 * uint64_t(nconn) + 64, fmt::format("connections {} to each of two servers", nconn));

  Params sp[2] = {side_params(*m[0], p, "a_set"), side_params(*m[1], p, "b_set")};
  ServerLaunch launch[2] = {launch_of(*m[0], sp[0], s.options()), launch_of(*m[1], sp[1], s.options())};
  const auto& cpus = s.options().cpus;
  const int client_cpu = cpus.empty() ? -1 : cpus[0];
  const int server_cpu = cpus.size() > 1 ? cpus[1] : client_cpu;
  auto& rec = s.record();

  servers::ServerProcess srv0 = start_server(launch[0], server_cpu, sp[0]);
  servers::ServerProcess srv1 = start_server(launch[1], server_cpu, sp[1]);
  const std::vector<unsigned char> pattern = echo_pattern(size);
  auto cl = std::make_unique<Client>();
  cl->size = size;
  cl->pattern = pattern.data();
  cl->server = &srv0;
  cl->servers[0] = &srv0;
  cl->servers[1] = &srv1;
  cl->rec = &rec;
  // slice_ms=0: 50 ms, or an eighth of a shorter measured window (at least four pairs).
  const uint64_t window_ns = uint64_t(s.options().duration_s * 1e9);
  cl->slice_ns = p.i64("slice_ms") > 0 ? uint64_t(p.i64("slice_ms")) * 1'000'000
                                         : std::clamp<uint64_t>(window_ns / 8, 1'000'000, 50'000'000);
  {
    servers::ScopedPin pin(client_cpu);
    connect_to(*cl, srv0.port(), size_t(nconn));
    connect_to(*cl, srv1.port(), size_t(nconn));
    cl->measure_at = now_ns() + uint64_t(s.options().warmup_s * 1e9);
    cl->stop_at = cl->measure_at + uint64_t(s.options().duration_s * 1e9);
    if (cl->error.empty()) uring_client ? drive_uring(*cl) : drive_epoll(*cl);
  }
  for (auto& c : cl->cs)
    if (c.fd >= 0) ::close(c.fd);
  const std::string& error = cl->error;
  servers::ServerProcess* sv[2] = {&srv0, &srv1};
  std::string died;
  for (int i = 0; i < 2; ++i)
    if (error.empty() ? !sv[i]->alive() : sv[i]->dies_within(0.2))
      died = fmt::format("{} ({}): {}", m[i]->name, i ? "b" : "a", sv[i]->death());
  srv0.stop();
  srv1.stop();

  // Per side: its slices' echoes, time and server CPU; per pair (a slice and the next, one of
  // each side): the ratios b/a.
  uint64_t ops[2] = {0, 0}, wall[2] = {0, 0};
  double cpu[2] = {0, 0};
  std::vector<double> rate_ratio, cpu_ratio;
  const auto& sl = cl->slices;
  for (const Slice& x : sl) {
    ops[x.side] += x.ops;
    wall[x.side] += x.wall_ns;
    cpu[x.side] += x.server_cpu_s;
  }
  for (size_t i = 0; i + 1 < sl.size(); i += 2) {
    const Slice& a = sl[i].side == 0 ? sl[i] : sl[i + 1];
    const Slice& b = sl[i].side == 0 ? sl[i + 1] : sl[i];
    if (a.side == b.side || !a.ops || !b.ops || !a.wall_ns || !b.wall_ns) continue;
    rate_ratio.push_back((double(b.ops) / double(b.wall_ns)) / (double(a.ops) / double(a.wall_ns)));
    cpu_ratio.push_back((b.server_cpu_s / double(b.ops)) / (a.server_cpu_s / double(a.ops)));
  }

  rec.wall_s = cl->t_end && cl->t_begin ? double(cl->t_end - cl->t_begin) * 1e-9 : 0.0;
  rec.ops = cl->ops;
  rec.bytes = cl->ops * size;
  rec.integrity.sent = rec.integrity.received = cl->ops;
  if (cl->hist.count()) rec.latency = Latency::from("rtt", cl->hist);
  rec.cpu = cl->client1 - cl->client0;
  rec.cpu.sys_s += cpu[0] + cpu[1];  // servers' time in their slices, as sys (schedstat: one figure)
  rec.rates["echoes_per_s"] = rec.wall_s > 0 ? double(rec.ops) / rec.wall_s : 0.0;
  auto& x = rec.extra;
  for (int i = 0; i < 2; ++i) {
    auto& side = x[i ? "b" : "a"];
    side["server"] = m[i]->name;
    side["params"] = sp[i].path();
    side["slices"] = std::count_if(sl.begin(), sl.end(), [i](const Slice& z) { return z.side == i; });
    side["echoes"] = ops[i];
    side["echoes_per_s"] = wall[i] ? double(ops[i]) * 1e9 / double(wall[i]) : 0.0;
    side["server_cpu_per_echo_ns"] = ops[i] ? cpu[i] * 1e9 / double(ops[i]) : 0.0;
  }
  x["pairs"] = rate_ratio.size();
  x["slice_ms"] = double(cl->slice_ns) * 1e-6;
  x["client"] = uring_client ? "io_uring" : "epoll";
  x["rate_ratio_b_over_a"] = {{"median", median_of(rate_ratio)}, {"p10", quantile_of(rate_ratio, 0.1)},
                              {"p90", quantile_of(rate_ratio, 0.9)}};
  x["cpu_per_echo_ratio_b_over_a"] = {{"median", median_of(cpu_ratio)}, {"p10", quantile_of(cpu_ratio, 0.1)},
                                      {"p90", quantile_of(cpu_ratio, 0.9)}};
  rec.placement.layout = "cross";
  rec.placement.cpus = cpus;
  rec.placement.sides.push_back({.role = "client", .index = 0, .pinned = client_cpu >= 0 ? std::vector<int>{client_cpu} : std::vector<int>{}});
  rec.placement.sides.push_back({.role = "server", .index = 0, .pinned = server_cpu >= 0 ? std::vector<int>{server_cpu} : std::vector<int>{}});
  rec.placement.sides.push_back({.role = "server", .index = 1, .pinned = server_cpu >= 0 ? std::vector<int>{server_cpu} : std::vector<int>{}});
  if (!died.empty()) rec.fail(died + (error.empty() ? "" : " (" + error + ")"));
  else if (!error.empty()) rec.fail(error);
  else if (rate_ratio.empty()) rec.fail("echo/ab: no pair of slices inside the measured window; raise --duration or lower slice_ms");
}

IPCLAB_REGISTER(Mechanism{
    .suite = "echo",
    .name = "ab",
    .help = "two echo servers side by side in one run, loaded in alternating slices; ratios b/a per pair",
    .params = suite_params({
        {.name = "a", .type = ParamType::String, .def = "epoll",
         .help = "the baseline server (an echo mechanism, at its defaults)"},
        {.name = "b", .type = ParamType::String, .def = "uring", .help = "the server compared with it"},
        {.name = "a_set", .type = ParamType::String, .def = "defaults",
         .help = "a's own parameters instead of its defaults: name-value pairs joined by '+', e.g. backend-io_uring"},
        {.name = "b_set", .type = ParamType::String, .def = "defaults",
         .help = "b's own parameters, e.g. fixed_files-1+wait_nr-2"},
        {.name = "slice_ms", .type = ParamType::Int, .def = "0",
         .help = "milliseconds each server is loaded before the other's turn (0: 50, or an eighth "
                 "of a shorter --duration)", .min = 0, .max = 10000},
    }),
    .workload = run_ab,
});

}  // namespace
}  // namespace ipclab::echo
