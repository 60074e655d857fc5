// `ipclab topo [--json] [--no-measure]`: the CPU topology from sysfs and, measured, the cache-line
// round trip between every pair of allowed CPUs, sorted into classes.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <memory>

#include "cli/commands.hpp"
#include "core/machine/placement.hpp"
#include "core/machine/topology.hpp"

namespace ipclab::cli {
namespace {

int cmd_topo(bool as_json, bool measure) {
  const topo::Topology t = topo::read("/sys", allowed_cpus());
  const topo::Matrix m = measure ? measured_matrix(allowed_cpus()) : topo::Matrix{};
  if (as_json) {
    fmt::print("{}\n", (measure ? topo::to_json(t, m) : topo::to_json(t)).dump(2));
    return 0;
  }
  fmt::print("{} CPUs: {} package(s), {} NUMA node(s), {} last-level cache domain(s), {} core(s), SMT {}\n",
             t.cpus.size(), t.packages, t.nodes, t.llcs, t.cores, t.smt ? "on" : "off (as sysfs says)");
  fmt::print("{:>5} {:>8} {:>5} {:>5} {:>5}  siblings\n", "cpu", "package", "node", "core", "llc");
  for (auto& c : t.cpus) {
    std::string sib;
    for (int x : c.siblings) sib += (sib.empty() ? "" : ",") + std::to_string(x);
    fmt::print("{:>5} {:>8} {:>5} {:>5} {:>5}  {}\n", c.id, c.package, c.node, c.core, c.llc, sib);
  }
  if (!measure) return 0;
  fmt::print("\ncache-line round trip, ns (median of 2000; class in brackets){}\n",
             m.sampled ? " — a sample of pairs per relation (over 64 CPUs)" : "");
  if (!m.sampled && t.cpus.size() <= 32) {
    fmt::print("{:>5}", "");
    for (auto& c : t.cpus) fmt::print(" {:>8}", c.id);
    fmt::print("\n");
    for (auto& r : t.cpus) {
      fmt::print("{:>5}", r.id);
      for (auto& c : t.cpus) {
        auto it = std::find_if(m.pairs.begin(), m.pairs.end(), [&](const topo::Pair& p) {
          return (p.a == r.id && p.b == c.id) || (p.a == c.id && p.b == r.id);
        });
        if (it == m.pairs.end())
          fmt::print(" {:>8}", "-");
        else
          fmt::print(" {:>8}", fmt::format("{:.0f}[{}]", it->ns, m.cls[size_t(it - m.pairs.begin())]));
      }
      fmt::print("\n");
    }
  } else {
    for (size_t i = 0; i < m.pairs.size(); ++i)
      fmt::print("{:>5} {:>5} {:>8.0f} [{}]\n", m.pairs[i].a, m.pairs[i].b, m.pairs[i].ns, m.cls[i]);
  }
  for (auto& p : m.hidden_siblings)
    fmt::print(stderr,
               "warning: CPUs {} and {} behave as SMT siblings ({:.0f} ns, under half their sysfs relation's "
               "median) — a VM may hide that they share a core; do not take them as two cores\n",
               p.a, p.b, p.ns);
  for (auto& p : m.fleeting_siblings)
    fmt::print(
        stderr,
        "warning: {}: the VM's vCPUs move between the host's cores — which CPUs share a core holds only "
        "for a moment here; compare only paired runs (`ipclab ab`)\n",
        topo::fleeting_text(m, p));
  return 0;
}

Runner declare_topo(CLI::App& sub) {
  struct TopoArgs {
    bool json = false, no_measure = false;
  };
  auto a = std::make_shared<TopoArgs>();
  flag_once(sub, "--json", a->json, "print as JSON");
  flag_once(sub, "--no-measure", a->no_measure, "sysfs only: measure nothing");
  return [a](const std::string&) { return cmd_topo(a->json, !a->no_measure); };
}

}  // namespace

IPCLAB_COMMAND(Command{"topo", "The CPU topology (sysfs) and the measured cache-line round trip between CPUs",
                       declare_topo});

}  // namespace ipclab::cli
