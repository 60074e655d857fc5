// The small commands: `ipclab list` and `ipclab env` (what the binary can run, on what machine),
// and the way to `ipclab report` and `ipclab compare` (the Python package report/).
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
#include <sstream>

#include "cli/commands.hpp"
#include "core/base/error.hpp"
#include "core/base/params.hpp"
#include "core/machine/env.hpp"
#include "core/machine/home.hpp"
#include "core/machine/placement.hpp"
#include "core/machine/topology.hpp"
#include "core/machine/window.hpp"
#include "core/model/mechanism.hpp"
#include "core/output/reporter.hpp"

namespace ipclab::cli {

std::string wrap(const std::string& label, size_t indent, const std::string& text, size_t width,
                 const std::string& sep) {
  return output::wrap_text(fmt::format("{:<{}}", label, indent), text, width, indent, sep);
}

// The width to wrap text to: the console's (the terminal's, else $COLUMNS, else 100), less one.
size_t text_width() { return output::console_columns(stdout) - 1; }

void cmd_list(const std::optional<std::string>& suite_filter, bool as_json) {
  if (suite_filter && suite_filter->empty())
    throw UsageError("list: empty suite name; give a suite (see `ipclab list`) or none for all");
  auto& reg = Registry::get();
  if (const auto names = reg.suite_names();
      suite_filter && std::find(names.begin(), names.end(), *suite_filter) == names.end())
    throw UsageError(
        fmt::format("unknown suite '{}'; run `ipclab list` to see the suites", brief(*suite_filter)));
  if (as_json) {
    fmt::print("{}\n", output::registry_json(suite_filter ? std::set<std::string>{*suite_filter}
                                                          : std::set<std::string>{})
                           .dump(2));
    return;
  }
  if (!suite_filter) {
    // The index: a suite a row, its mechanisms by name, what the suite measures beneath; each
    // suite's parameters with `ipclab list SUITE`.
    for (auto& suite : reg.suite_names()) {
      std::string names;
      for (auto& m : reg.mechanisms())
        if (m.suite == suite) names += (names.empty() ? "" : ", ") + m.name;
      fmt::print("{}\n", wrap(suite, 11, names, text_width(), ", "));
      if (const Suite* s = reg.suite(suite); s && !s->help.empty())
        fmt::print("{}\n", wrap("", 11, s->help, text_width(), " "));
    }
    fmt::print(
        "\n`ipclab list SUITE`: each mechanism's help and parameters, with their values and the presets' "
        "grids.\n");
    return;
  }
  // Each parameter once: those that several mechanisms share (the suite's standard parameters)
  // in one list, saying which mechanisms take them; then each mechanism, its help and the
  // parameters only it takes.
  std::vector<const Mechanism*> mechs;
  for (auto& m : reg.mechanisms())
    if (m.suite == *suite_filter) mechs.push_back(&m);
  const size_t width = text_width();
  auto joined = [](const std::vector<std::string>& v, const char* sep) {
    std::string out;
    for (auto& x : v) out += (out.empty() ? "" : sep) + x;
    return out;
  };
  // A parameter is the same in two mechanisms when all `list` says of it but its presets' grids is:
  // grids that differ are said per mechanism.
  auto key = [&](const ParamSpec& p) {
    return fmt::format("{}={}\n{}\n{}\n{}\n{}={}", p.name, p.def, p.help, type_name(p.type),
                       joined(p.choices, "|"), p.only_with.first, joined(p.only_with.second, "|"));
  };
  struct Entry {
    const ParamSpec* spec;
    std::vector<const Mechanism*> takers;
    std::vector<const ParamSpec*> specs;  // each taker's own (its grids)
  };
  std::vector<Entry> params;  // first seen first
  for (const Mechanism* m : mechs)
    for (auto& p : m->params) {
      const std::string k = key(p);
      auto it = std::find_if(params.begin(), params.end(), [&](auto& e) { return key(*e.spec) == k; });
      if (it == params.end())
        params.push_back({&p, {m}, {&p}});
      else
        it->takers.push_back(m), it->specs.push_back(&p);
    }
  // One preset's grid of an entry: the same for every taker, or each value list with its takers.
  auto grid = [&](const Entry& e, const char* preset, std::vector<std::string> ParamSpec::*values) {
    std::vector<std::pair<std::string, std::vector<std::string>>> by;  // values -> mechanisms
    for (size_t i = 0; i < e.specs.size(); ++i) {
      const std::string v = joined(e.specs[i]->*values, ",");
      auto it = std::find_if(by.begin(), by.end(), [&](auto& b) { return b.first == v; });
      if (it == by.end())
        by.push_back({v, {e.takers[i]->name}});
      else
        it->second.push_back(e.takers[i]->name);
    }
    if (by.size() == 1)
      return by[0].first.empty() ? std::string() : fmt::format("; {} {}", preset, by[0].first);
    std::string out;
    for (auto& [v, ms] : by)
      out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", v.empty() ? "none" : v, joined(ms, ", "));
    return fmt::format("; {} {}", preset, out);
  };
  auto param_line = [&](const Entry& e, const std::string& which) {
    const ParamSpec& p = *e.spec;
    const std::string vals = joined(p.choices, "|");
    std::string only;
    for (auto& v : p.only_with.second)
      only += (only.empty() ? "; only with " + p.only_with.first + "=" : "|") + v;
    const std::string label = fmt::format("  -p {}={}", p.name, p.def);
    const std::string text =
        fmt::format("{} ({}{}{}{}{}){}", p.help, type_name(p.type), vals.empty() ? "" : ": " + vals,
                    grid(e, "quick", &ParamSpec::quick), grid(e, "full", &ParamSpec::full), only, which);
    constexpr size_t kIndent = 26;
    return label.size() + 2 > kIndent ? label + "\n" + wrap("", kIndent, text, width, " ")
                                      : wrap(label, kIndent, text, width, " ");
  };
  auto names = [](const std::vector<const Mechanism*>& ms) {
    std::string out;
    for (auto* m : ms) out += (out.empty() ? "" : ", ") + m->name;
    return out;
  };
  bool shared_header = false;
  for (auto& e : params) {
    const auto& takers = e.takers;
    if (takers.size() < 2) continue;
    if (!shared_header)
      fmt::print("{}\n", wrap("", 0,
                              fmt::format("Parameters of {} mechanisms (-p NAME=VALUE, the default after the "
                                          "'='; each mechanism's own beneath it):",
                                          *suite_filter),
                              width, " "));
    shared_header = true;
    std::string which = " [every mechanism]";
    if (takers.size() < mechs.size()) {
      std::vector<const Mechanism*> without;
      for (auto* m : mechs)
        if (std::find(takers.begin(), takers.end(), m) == takers.end()) without.push_back(m);
      which = without.size() < takers.size() ? " [all but " + names(without) + "]"
                                             : " [only " + names(takers) + "]";
    }
    fmt::print("{}\n", param_line(e, which));
  }
  if (shared_header) fmt::print("\n");
  for (const Mechanism* m : mechs) {
    const char* kind = m->transport ? "transport" : m->loop ? "loop" : "workload";
    fmt::print("{}  [{}]\n{}\n", m->full_name(), kind, wrap("", 4, m->help, width, " "));
    for (auto& e : params)
      if (e.takers.size() == 1 && e.takers.front() == m) fmt::print("{}\n", param_line(e, ""));
  }
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
  // A readable table (--json for the JSON): each row a label and its value in words, wrapped to the
  // terminal under the value's column.
  auto row = [](const char* label, const std::string& text) {
    fmt::print("{}\n", wrap(label, 13, text, text_width(), ", "));
  };
  // An object as "key value, key value"; a true flag as its key alone, a false one as "no key", a
  // nested object (soft and hard limits) in parentheses.
  std::function<std::string(const nlohmann::json&)> words = [&](const nlohmann::json& j) -> std::string {
    if (j.is_null()) return "n/a";
    if (j.is_string()) return j.get<std::string>();
    if (j.is_number_float()) return fmt::format("{:.2f}", j.get<double>());
    if (j.is_array()) {
      std::string out;
      for (auto& v : j) out += (out.empty() ? "" : " ") + words(v);
      return out;
    }
    if (!j.is_object()) return j.dump();
    std::string out;
    for (auto& [k, v] : j.items()) {
      std::string item = v.is_boolean()  ? (v.get<bool>() ? k : "no " + k)
                         : v.is_object() ? fmt::format("{} ({})", k, words(v))
                                         : fmt::format("{} {}", k, words(v));
      out += (out.empty() ? "" : ", ") + item;
    }
    return out;
  };
  auto& cpu = ctx["cpu"];
  row("CPU", fmt::format("{} — {} logical CPUs, {} cores, SMT {}", cpu["model"].get<std::string>(),
                         cpu["logical_cpus"].get<long>(), cpu["physical_cores"].get<long>(),
                         cpu["smt"].get<bool>() ? "on" : "off"));
  if (const auto& t = cpu["topology"]; t.is_object()) {
    std::string text =
        fmt::format("{} package(s), {} NUMA node(s), {} last-level cache(s), {} core(s)",
                    t.value("packages", 0), t.value("nodes", 0), t.value("llcs", 0), t.value("cores", 0));
    if (t.contains("c2c")) {
      std::vector<double> ns;
      for (auto& p : t["c2c"]["pairs"]) ns.push_back(p["c2c_ns"].get<double>());
      if (!ns.empty()) {
        const double lo = *std::min_element(ns.begin(), ns.end()),
                     hi = *std::max_element(ns.begin(), ns.end());
        text += fmt::format(", cache-line round trip {} over {} pair(s) in {} class(es) (`ipclab topo`)",
                            lo == hi ? fmt::format("{:.0f} ns", lo) : fmt::format("{:.0f}–{:.0f} ns", lo, hi),
                            ns.size(), t["c2c"].value("classes", 0));
      }
    }
    row("Topology", text);
  }
  row("Caches", words(cpu["caches"]));
  row("Kernel",
      fmt::format("{} ({})", ctx["kernel"].get<std::string>(), ctx["virtualization"].get<std::string>()));
  if (const auto& v = ctx["vcpus"]; v.is_object()) {
    std::string text = v.value("emulation", "?");
    if (v["hypervisor"].is_string()) text += " (" + v["hypervisor"].get<std::string>() + ")";
    if (const auto& st = v["steal_since_boot"]; st.is_object())
      text +=
          fmt::format(", steal {:.2f}% of their busy time since boot{}", 100 * st.value("share_of_busy", 0.0),
                      v["overcommitted"] == true ? ": overcommitted" : "");
    row("vCPUs", text);
  }
  row("Governor", words(ctx["governor"]));
  row("Load average", words(ctx["load_avg"]) + " (1, 5, 15 min)");
  if (ctx.contains("other_load"))
    row("Other load",
        fmt::format("{:.1f} runnable tasks of other processes (warned above {:.1f})",
                    ctx["other_load"].value("runnable", 0.0), ctx["other_load"].value("threshold", 0.0)));
  row("Limits", words(ctx["limits"]));
  row("io_uring", words(ctx["io_uring"]));
  // The shortest window a figure may come from here, and what sets it (core/machine/window.hpp).
  if (const auto& f = ctx["window_floor"]; f.is_object()) {
    const double tick = f.value("tick_s", 0.0),
                 slice = f["slice_s"].is_number() ? f["slice_s"].get<double>() : 0;
    row("Window floor",
        fmt::format("{:.3g} ms (a shorter window is flagged short_window and never ranked): {:g} scheduler "
                    "quanta of {}, {:.3g} ms; the timer's bound {:.3g} ms (1000 x two {:.1f} ns clock reads)",
                    1e3 * f.value("floor_s", 0.0), WindowFloor::kQuanta,
                    slice > tick ? fmt::format("{:.3g} ms (the scheduler's slice)", 1e3 * slice)
                                 : fmt::format("{:.3g} ms (the tick{})", 1e3 * tick,
                                               slice > 0 ? "" : "; the kernel shows no slice"),
                    1e3 * f.value("scheduler_floor_s", 0.0), 1e3 * f.value("timer_floor_s", 0.0),
                    f.value("clock_read_ns", 0.0)));
  }
  // The vulnerabilities this CPU is affected by, each with what the kernel does; the rest counted.
  {
    std::string text;
    int unaffected = 0;
    for (auto& [k, v] : ctx["mitigations"].items()) {
      const std::string state = words(v);
      if (state == "Not affected")
        ++unaffected;
      else
        text += (text.empty() ? "" : ", ") + fmt::format("{}: {}", k, state);
    }
    row("Mitigations", text + (text.empty() ? "" : ", ") + fmt::format("{} not affected", unaffected));
  }
  {
    // The flags as words: blanks collapsed, an empty "sanitize=" left out.
    std::string flags;
    std::istringstream in(ctx["build_flags"].get<std::string>());
    for (std::string w; in >> w;)
      if (w != "sanitize=") flags += (flags.empty() ? "" : " ") + w;
    row("Build", fmt::format("{}, {}{}", ctx["compiler"].get<std::string>(),
                             ctx["build_type"].get<std::string>(), flags.empty() ? "" : ", " + flags));
  }
  if (ctx.contains("started_from")) row("Started from", words(ctx["started_from"]));
  row("Libraries", words(ctx["libraries"]));
  row("Git", words(ctx["git_sha"]));
  // The machine's conditions, which hold from run to run: said here, and kept in every record.
  // As rows of their own, their words continued under the values.
  for (auto& w : ctx.value("conditions", nlohmann::json::array()))
    fmt::print("{}\n", wrap("condition:", 13, output::warning_text(w), text_width(), " "));
  for (auto& w : ctx["warnings"])
    fmt::print("{}\n", wrap("warning:", 13, output::warning_text(w), text_width(), " "));
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
  for (auto& p : m.fleeting_siblings)
    fmt::print(
        stderr,
        "warning: {}: the VM's vCPUs move between the host's cores — which CPUs share a core holds only "
        "for a moment here; compare only paired runs (`ipclab ab`)\n",
        topo::fleeting_text(m, p));
  return 0;
}

// report and compare live in the Python package report/ (matplotlib, scipy); the user need not
// know: exec it with the same arguments. A bundle leaves the package out (core/machine/home.hpp).
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
  // The report reads the registry of a result file that carries none (one older than the registry
  // in the context) from this binary: `ipclab list --json`.
  std::vector<char> self(4096);
  if (ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1); n > 0)
    setenv("IPCLAB_BIN", std::string(self.data(), size_t(n)).c_str(), 1);
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
