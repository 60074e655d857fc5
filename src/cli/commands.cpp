// The small commands: `ipclab list` and `ipclab env` (what the binary can run, on what machine),
// and the way to `ipclab report` and `ipclab compare` (the Python package report/).
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cli/commands.hpp"
#include "core/env.hpp"
#include "core/placement.hpp"
#include "core/topology.hpp"
#include "core/error.hpp"
#include "core/home.hpp"
#include "core/mechanism.hpp"
#include "core/params.hpp"

namespace ipclab::cli {

void cmd_list(const std::optional<std::string>& suite_filter) {
  if (suite_filter && suite_filter->empty())
    throw UsageError("list: empty suite name; give a suite (see `ipclab list`) or none for all");
  auto& reg = Registry::get();
  bool any = false;
  for (auto& m : reg.mechanisms()) {
    if (suite_filter && m.suite != *suite_filter) continue;
    any = true;
    const char* kind = m.transport ? "transport" : m.loop ? "loop" : "workload";
    fmt::print("{}  [{}]\n    {}\n", m.full_name(), kind, m.help);
    for (auto& p : m.params) {
      std::string vals;
      for (auto& c : p.choices) vals += (vals.empty() ? "" : "|") + c;
      std::string quick;
      for (auto& q : p.quick) quick += (quick.empty() ? "" : ",") + q;
      std::string full;
      for (auto& q : p.full) full += (full.empty() ? "" : ",") + q;
      std::string only;
      for (auto& v : p.only_with.second)
        only += (only.empty() ? "; only with " + p.only_with.first + "=" : "|") + v;
      fmt::print("    -p {}={:<12} {} ({}{}{}{}{})\n", p.name, p.def, p.help, type_name(p.type),
                 vals.empty() ? "" : ": " + vals, quick.empty() ? "" : "; quick " + quick,
                 full.empty() ? "" : "; full " + full, only);
    }
  }
  if (!any)
    throw UsageError(fmt::format("unknown suite '{}'; run `ipclab list` to see the suites", brief(*suite_filter)));
}

int cmd_env(bool as_json, const std::string& cmdline) {
  auto ctx = collect_environment(cmdline);
  // As `ipclab topo` shows it: sysfs, and the measured round trips between the allowed CPUs. (A run
  // measures them only when it places sides by class or over a CPU matrix.)
  add_measured_topology(ctx, allowed_cpus());
  if (as_json) {
    fmt::print("{}\n", ctx.dump(2));
    return 0;
  }
  auto& cpu = ctx["cpu"];
  fmt::print("CPU          {} — {} logical CPUs, {} cores, SMT {}\n", cpu["model"].get<std::string>(),
             cpu["logical_cpus"].get<long>(), cpu["physical_cores"].get<long>(),
             cpu["smt"].get<bool>() ? "on" : "off");
  fmt::print("Caches       {}\n", cpu["caches"].dump());
  fmt::print("Kernel       {} ({})\n", ctx["kernel"].get<std::string>(),
             ctx["virtualization"].get<std::string>());
  fmt::print("Governor     {}\n", ctx["governor"].is_null() ? "n/a" : ctx["governor"].get<std::string>());
  fmt::print("Load average {}\n", ctx["load_avg"].dump());
  fmt::print("Limits       {}\n", ctx["limits"].dump());
  fmt::print("io_uring     {}\n", ctx["io_uring"].dump());
  fmt::print("Mitigations  {}\n", ctx["mitigations"].dump());
  fmt::print("Build        {} {} [{}]\n", ctx["compiler"].get<std::string>(),
             ctx["build_type"].get<std::string>(), ctx["build_flags"].get<std::string>());
  fmt::print("Libraries    {}\n", ctx["libraries"].dump());
  fmt::print("Git          {}\n", ctx["git_sha"].is_null() ? "n/a" : ctx["git_sha"].get<std::string>());
  for (auto& w : ctx["warnings"])
    fmt::print("warning: {} — {}\n", w["message"].get<std::string>(), w["remedy"].get<std::string>());
  return 0;
}

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
  return 0;
}

// report and compare live in the Python package report/ (matplotlib, scipy); the user need not
// know: exec it with the same arguments. A bundle leaves the package out (core/home.hpp).
[[noreturn]] void exec_python(const std::string& verb, const std::vector<std::string>& args) {
  const char* py = std::getenv("IPCLAB_PYTHON");
  std::string python = py && *py ? py : "python3";
  std::string pkg = source_file("report");
  if (access((pkg + "/ipclab_report").c_str(), F_OK) != 0)
    throw UsageError(fmt::format(
        "{}: the report package is not here ({}/ipclab_report){}; run `ipclab {}` on the results from a "
        "checkout of ipclab, where `make setup` installs what it needs",
        verb, pkg, started_from_bundle() ? ": a bundle leaves it out" : "", verb));
  const char* old = std::getenv("PYTHONPATH");
  std::string path = pkg + (old && *old ? ":" + std::string(old) : "");
  setenv("PYTHONPATH", path.c_str(), 1);
  std::vector<std::string> argv{python, "-m", "ipclab_report", verb};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& s : argv) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  execvp(cargv[0], cargv.data());
  fmt::print(stderr, "ipclab: cannot start {}: {}; run `make setup` (or set IPCLAB_PYTHON)\n", python,
             strerror(errno));
  std::exit(2);
}

}  // namespace ipclab::cli
