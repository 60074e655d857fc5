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
#include <array>
#include <memory>

#include "core/error.hpp"
#include "core/runner.hpp"
#include "core/statistics.hpp"
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

// a, b, a_set and b_set name servers and their settings; UsageError when they do not.
std::pair<std::array<const Mechanism*, 2>, std::array<Params, 2>> sides_of(const Params& p) {
  const std::array<const Mechanism*, 2> m = {&echo_mechanism(p.str("a")), &echo_mechanism(p.str("b"))};
  if (m[0] == m[1] && p.str("a_set") == p.str("b_set"))
    throw UsageError("echo/ab: a and b are the same server with the same settings; pick two different ones");
  return {m, {side_params(*m[0], p, "a_set"), side_params(*m[1], p, "b_set")}};
}

// The planner's check: the same rules as sides_of, so that bad names are refused before a run.
std::string check_ab(const Params& p) {
  try {
    sides_of(p);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

void run_ab(Session& s) {
  const Params& p = s.params();
  const auto [m, sp] = sides_of(p);
  prepare_client(p, 2);

  ServerLaunch launch[2] = {launch_of(*m[0], sp[0], s.options()), launch_of(*m[1], sp[1], s.options())};
  servers::ServerProcess srv0 = start_server(launch[0], server_cpu(s.options()), sp[0]);
  servers::ServerProcess srv1 = start_server(launch[1], server_cpu(s.options()), sp[1]);
  // slice_ms=0: 50 ms, or an eighth of a shorter measured window (at least four pairs).
  const uint64_t window_ns = uint64_t(s.options().duration_s * 1e9);
  const uint64_t slice_ns = p.i64("slice_ms") > 0 ? uint64_t(p.i64("slice_ms")) * 1'000'000
                                                  : std::clamp<uint64_t>(window_ns / 8, 1'000'000, 50'000'000);
  const auto cl = run_client(s, &srv0, &srv1, slice_ns);
  servers::ServerProcess* sv[2] = {&srv0, &srv1};
  std::string died;
  for (int i = 0; i < 2; ++i)
    if (const std::string death = death_after(*sv[i], cl->error); !death.empty())
      died = fmt::format("{} ({}): {}", m[i]->name, i ? "b" : "a", death);
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

  auto& rec = s.record();
  record_client(rec, *cl, s);
  rec.cpu.sys_s += cpu[0] + cpu[1];  // servers' time in their slices, as sys (schedstat: one figure)
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
  const auto spread = [](const std::vector<double>& v) -> nlohmann::json {
    return {{"median", median_of(v)}, {"p10", quantile_of(v, 0.1)}, {"p90", quantile_of(v, 0.9)}};
  };
  x["rate_ratio_b_over_a"] = spread(rate_ratio);
  x["cpu_per_echo_ratio_b_over_a"] = spread(cpu_ratio);
  if (!fail_run(rec, died, cl->error) && rate_ratio.empty()) rec.fail("echo/ab: no pair of slices inside the measured window; raise --duration or lower slice_ms");
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
    .check = check_ab,
});

}  // namespace
}  // namespace ipclab::echo
