// `ipclab env [--json]`: the machine a run would measure on — the environment block every result
// carries, and its warnings.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "core/machine/env.hpp"
#include "core/machine/placement.hpp"
#include "core/machine/window.hpp"
#include "core/output/reporter.hpp"

namespace ipclab::cli {
namespace {

// A row of the readable table (--json for the JSON): a label and its value in words, wrapped to
// the terminal under the value's column.
void row(const char* label, const std::string& text) {
  fmt::print("{}\n", wrap(label, 13, text, text_width(), ", "));
}

// An object as "key value, key value"; a true flag as its key alone, a false one as "no key", a
// nested object (soft and hard limits) in parentheses.
std::string words(const nlohmann::json& j) {
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
}

// The topology as sysfs gives it, and the measured cache-line round trips when there are some.
std::string topology_text(const nlohmann::json& t) {
  std::string text =
      fmt::format("{} package(s), {} NUMA node(s), {} last-level cache(s), {} core(s)",
                  t.value("packages", 0), t.value("nodes", 0), t.value("llcs", 0), t.value("cores", 0));
  if (!t.contains("c2c")) return text;
  std::vector<double> ns;
  for (auto& p : t["c2c"]["pairs"]) ns.push_back(p["c2c_ns"].get<double>());
  if (ns.empty()) return text;
  const double lo = *std::min_element(ns.begin(), ns.end()), hi = *std::max_element(ns.begin(), ns.end());
  return text + fmt::format(", cache-line round trip {} over {} pair(s) in {} class(es) (`ipclab topo`)",
                            lo == hi ? fmt::format("{:.0f} ns", lo) : fmt::format("{:.0f}–{:.0f} ns", lo, hi),
                            ns.size(), t["c2c"].value("classes", 0));
}

// CPU, Topology, Caches.
void print_cpu(nlohmann::json& ctx) {
  auto& cpu = ctx["cpu"];
  row("CPU", fmt::format("{} — {} logical CPUs, {} cores, SMT {}", cpu["model"].get<std::string>(),
                         cpu["logical_cpus"].get<long>(), cpu["physical_cores"].get<long>(),
                         cpu["smt"].get<bool>() ? "on" : "off"));
  if (const auto& t = cpu["topology"]; t.is_object()) row("Topology", topology_text(t));
  row("Caches", words(cpu["caches"]));
}

// Kernel, vCPUs, Governor, Load average, Other load, Limits, io_uring.
void print_system(nlohmann::json& ctx) {
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
}

// The shortest window a figure may come from here, and what sets it (core/machine/window.hpp).
void print_window_floor(nlohmann::json& ctx) {
  const auto& f = ctx["window_floor"];
  if (!f.is_object()) return;
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
void print_mitigations(nlohmann::json& ctx) {
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

// Build (the flags as words: blanks collapsed, an empty "sanitize=" left out), Started from,
// Libraries, Git.
void print_build(nlohmann::json& ctx) {
  std::string flags;
  std::istringstream in(ctx["build_flags"].get<std::string>());
  for (std::string w; in >> w;)
    if (w != "sanitize=") flags += (flags.empty() ? "" : " ") + w;
  row("Build", fmt::format("{}, {}{}", ctx["compiler"].get<std::string>(),
                           ctx["build_type"].get<std::string>(), flags.empty() ? "" : ", " + flags));
  if (ctx.contains("started_from")) row("Started from", words(ctx["started_from"]));
  row("Libraries", words(ctx["libraries"]));
  row("Git", words(ctx["git_sha"]));
}

struct EnvArgs {
  bool json = false;
};

int cmd_env(const EnvArgs& a, const std::string& cmdline) {
  auto ctx = collect_environment(cmdline);
  // As `ipclab topo` shows it: sysfs, and the measured round trips between the allowed CPUs. (A run
  // measures them only when it places sides by class or over a CPU matrix.)
  add_measured_topology(ctx, allowed_cpus());
  if (a.json) {
    fmt::print("{}\n", ctx.dump(2));
    return 0;
  }
  print_cpu(ctx);
  print_system(ctx);
  print_window_floor(ctx);
  print_mitigations(ctx);
  print_build(ctx);
  // The machine's conditions, which hold from run to run: said here, and kept in every record.
  // As rows of their own, their words continued under the values.
  for (auto& w : ctx.value("conditions", nlohmann::json::array()))
    fmt::print("{}\n", wrap("condition:", 13, output::warning_text(w), text_width(), " "));
  for (auto& w : ctx["warnings"])
    fmt::print("{}\n", wrap("warning:", 13, output::warning_text(w), text_width(), " "));
  return 0;
}

Runner declare_env(CLI::App& sub) {
  auto a = std::make_shared<EnvArgs>();
  flag_once(sub, "--json", a->json, "print as JSON");
  return [a](const std::string& cmdline) { return cmd_env(*a, cmdline); };
}

}  // namespace

IPCLAB_COMMAND(Command{"env", "The environment block and its warnings", declare_env});

}  // namespace ipclab::cli
