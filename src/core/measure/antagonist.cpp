// Antagonists (see antagonist.hpp and docs/noise.md).
#include "core/measure/antagonist.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "core/base/affinity.hpp"
#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/base/params.hpp"
#include "core/machine/topology.hpp"
#include "core/ownership/journal.hpp"
#include "core/process/process.hpp"

namespace ipclab {

namespace {

// "0-3,5": the CPUs as stress-ng's --taskset and the kernel write a list.
std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += (out.empty() ? "" : ",") +
           (j > i ? fmt::format("{}-{}", cpus[i], cpus[j]) : fmt::format("{}", cpus[i]));
    i = j + 1;
  }
  return out;
}

// A LEVEL as stress-ng's options and the record's text take it: whole numbers in full (stress-ng
// refuses "1e+06", which {:g} makes of a million), others with their decimals.
std::string level_text(double v) {
  return v == std::floor(v) && std::abs(v) < 1e15 ? fmt::format("{:.0f}", v) : fmt::format("{:g}", v);
}

// --- the processes of a group, from /proc ------------------------------------------------------

struct Member {
  pid_t pid = 0;
  ProcStat st;
  double cpu_s = 0;
};

// The live processes of process group `pgid` (zombies left out), with their CPU so far.
std::vector<Member> group_members(pid_t pgid) {
  std::vector<Member> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const pid_t pid = pid_t(std::atol(e->d_name));
    if (getpgid(pid) != pgid) continue;
    Member m{pid, proc_stat(pid), 0};
    if (m.st.state == 0 || m.st.state == 'Z' || m.st.state == 'X') continue;
    m.cpu_s = cpu_seconds_of(pid);
    out.push_back(std::move(m));
  }
  closedir(d);
  return out;
}

// The last non-empty line of a file, for a program's own word on why it ended.
std::string last_line(const std::string& path) {
  std::ifstream f(path);
  std::string line, last;
  while (std::getline(f, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last;
}

// --- stress-ng ----------------------------------------------------------------------------------

const char* const kInstallHint =
    "stress-ng is not installed (apt-get install stress-ng; scripts/setup.sh installs it)";

std::string stress_ng_path() { return find_program("stress-ng"); }

// `stress-ng --version`'s line, asked once per program path.
std::string stress_ng_version(const std::string& program) {
  static std::mutex mu;
  static std::map<std::string, std::string> seen;
  std::lock_guard lock(mu);
  auto it = seen.find(program);
  if (it == seen.end()) it = seen.emplace(program, command_output({program, "--version"}, 10)).first;
  return it->second;
}

// Figures of stress-ng's YAML report (--yaml): of its `metrics` entries, summed over them.
struct Metrics {
  bool found = false;
  double bogo_ops = 0, wall_s = 0, user_s = 0, sys_s = 0;
};
Metrics read_metrics(const std::string& path) {
  Metrics m;
  std::ifstream f(path);
  bool in_metrics = false;
  for (std::string line; std::getline(f, line);) {
    if (!line.empty() && line[0] != ' ' && line[0] != '-') in_metrics = line.rfind("metrics:", 0) == 0;
    if (!in_metrics) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon), text = line.substr(colon + 1);
    key.erase(0, key.find_first_not_of(" -"));
    text.erase(0, text.find_first_not_of(' '));
    const auto value = parse_real(text);
    if (!value) continue;
    if (key == "bogo-ops") {
      m.bogo_ops += *value;
      m.found = true;
    } else if (key == "wall-clock-time") {
      m.wall_s = std::max(m.wall_s, *value);
    } else if (key == "user-time") {
      m.user_s += *value;
    } else if (key == "system-time") {
      m.sys_s += *value;
    }
  }
  return m;
}

const AntagonistKind* find_kind(const std::string& name);

// Whether `kind` takes a LEVEL (and so has one, given or its default).
bool takes_level(const std::string& kind) {
  const AntagonistKind* k = find_kind(kind);
  return k && !k->level_is.empty();
}

// What both sorts of antagonist share: the spec, the CPUs, the process group, the window's figures.
class GroupAntagonist : public Antagonist {
 public:
  GroupAntagonist(const AntagonistSpec& spec, const AntagonistTarget& target) : spec_(spec), target_(target) {
    rec_ = {{"kind", spec.kind},
            {"where", spec.where},
            {"level", takes_level(spec.kind) ? nlohmann::json(spec.level) : nullptr},
            {"text", spec.text()},
            {"cpus", target.cpus}};
  }
  ~GroupAntagonist() override = default;

  std::string lost() override {
    if (stopped_ || proc_.alive()) return "";
    return fmt::format("{} (pid {}) {}", who(), proc_.pid(), proc_.death());
  }

  void window_open() override {
    at_open_.clear();
    for (auto& m : group_members(proc_.pid())) at_open_[m.pid] = m;
    opened_ = true;
  }

  std::string window_close(double window_s) override {
    if (!opened_) return "";
    opened_ = false;
    if (auto why = lost(); !why.empty()) return why + " during the measured window";
    const auto now = group_members(proc_.pid());
    double used = 0;
    for (pid_t w : workers_) {
      auto it = std::find_if(now.begin(), now.end(), [&](const Member& m) { return m.pid == w; });
      if (it == now.end())
        return fmt::format("{}: its worker (pid {}) died during the measured window", who(), w);
      if (it->st.state == 'T' || it->st.state == 't')
        return fmt::format("{}: its worker (pid {}) was stopped (state {}) during the measured window", who(),
                           w, it->st.state);
    }
    for (auto& m : now)
      if (auto it = at_open_.find(m.pid); it != at_open_.end() && m.cpu_s >= it->second.cpu_s)
        used += m.cpu_s - it->second.cpu_s;
    window_cpu_s_ += used;
    ++windows_;
    if (progresses() && used == 0 && window_s >= kJudgedWindowS)
      return fmt::format("{}: stalled: its workers used no CPU in the measured window", who());
    return "";
  }

  nlohmann::json record() const override {
    nlohmann::json r = rec_;
    r["window_cpu_s"] = window_cpu_s_;
    r["windows"] = windows_;
    return r;
  }

 protected:
  // Whether it must use CPU in a window (stress-ng's stressors) or may not (the idle stand-in).
  virtual bool progresses() const = 0;
  virtual std::string who() const = 0;

  // Until its `instances` workers — the leader's children named "stress-ng-<stressor>", or the
  // leader itself for a stand-in — exist and have run.
  std::string await_workers(size_t instances, bool leader_is_worker, double timeout_s) {
    const uint64_t deadline = now_ns() + uint64_t(timeout_s * 1e9);
    for (;;) {
      if (!proc_.alive()) return fmt::format("{} {} at its start{}", who(), proc_.death(), said());
      std::vector<pid_t> found;
      bool ran = true;
      for (auto& m : group_members(proc_.pid())) {
        const bool worker = leader_is_worker
                                ? m.pid == proc_.pid()
                                : m.st.ppid == proc_.pid() && m.st.comm.rfind("stress-ng-", 0) == 0;
        if (!worker) continue;
        found.push_back(m.pid);
        ran = ran && (m.cpu_s > 0 || !progresses());
      }
      if (found.size() >= instances && ran) {
        workers_ = found;
        return "";
      }
      if (now_ns() > deadline)
        return fmt::format("{} did not start its {} worker{} within {:g} s ({} running){}", who(), instances,
                           instances == 1 ? "" : "s", timeout_s, found.size(), said());
      sleep_ns(2'000'000);
    }
  }
  virtual std::string said() const { return ""; }

  AntagonistSpec spec_;
  AntagonistTarget target_;
  Process proc_;
  std::vector<pid_t> workers_;
  std::map<pid_t, Member> at_open_;
  nlohmann::json rec_;
  double window_cpu_s_ = 0;
  int windows_ = 0;
  bool opened_ = false, stopped_ = false;
};

// A stress-ng run of one stressor, one worker per CPU of its set, pinned there with --taskset.
class StressNg final : public GroupAntagonist {
 public:
  StressNg(const AntagonistSpec& spec, const AntagonistTarget& target, const AntagonistKind& kind)
      : GroupAntagonist(spec, target) {
    const std::string program = stress_ng_path();
    if (program.empty()) throw Skip(kInstallHint);
    const int instances = int(target.cpus.size());
    instances_ = size_t(instances);
    std::vector<std::string> argv{program};
    for (auto& o : kind.options(instances, spec.level, target.scratch)) argv.push_back(o);
    const std::string dir = ipc::run_dir();
    yaml_ = dir + ipc::unique_name("stress-ng.yaml");
    const long life = std::max(1L, std::lround(std::ceil(target.life_s)));
    for (const std::string& o :
         {std::string("--taskset"), cpu_list_text(target.cpus), std::string("--timeout"),
          fmt::format("{}", life), std::string("--metrics-brief"), std::string("--yaml"), yaml_,
          std::string("--no-rand-seed")})
      argv.push_back(o);
    ipc::track_path(yaml_);  // journaled before stress-ng may write it
    const int log = ipc::create_file(dir, "stress-ng", 0600, log_);
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    try {
      proc_ = Process::exec({.stdin_fd = null, .stdout_fd = log, .stderr_fd = log, .own_group = true}, argv);
    } catch (...) {
      ::close(log);
      if (null >= 0) ::close(null);
      throw;
    }
    ::close(log);
    if (null >= 0) ::close(null);
    rec_["program"] = "stress-ng";
    rec_["version"] = stress_ng_version(program);
    rec_["argv"] = argv;
    rec_["pid"] = proc_.pid();
    rec_["bogo_ops"] = nullptr;
    rec_["bogo_ops_per_s"] = nullptr;
    rec_["run_s"] = nullptr;
    rec_["cpu_s"] = nullptr;
  }
  ~StressNg() override { stop(); }

  std::string await_running(double timeout_s) override { return await_workers(instances_, false, timeout_s); }

  // SIGTERM to stress-ng itself: it stops its workers and writes its report; the whole group is
  // killed if it has not ended 2 s later.
  void stop() override {
    if (stopped_) return;
    stopped_ = true;
    proc_.stop(2.0);
    const Metrics m = read_metrics(yaml_);
    if (m.found) {
      rec_["bogo_ops"] = m.bogo_ops;
      rec_["run_s"] = m.wall_s;
      rec_["bogo_ops_per_s"] = m.wall_s > 0 ? m.bogo_ops / m.wall_s : 0.0;
      rec_["cpu_s"] = m.user_s + m.sys_s;
    }
    ipc::remove(ipc::Kind::Path, yaml_);
    ipc::remove(ipc::Kind::File, log_);
  }

 protected:
  bool progresses() const override { return true; }
  std::string who() const override { return fmt::format("antagonist {} (stress-ng)", spec_.text()); }
  std::string said() const override {
    const std::string line = last_line(log_);
    return line.empty() ? "" : fmt::format("; it said: {}", brief(line, 300));
  }

 private:
  size_t instances_ = 1;
  std::string yaml_, log_;
};

// `none`: an idle stand-in — one forked process, pinned to the set, that waits in pause() and so
// uses no CPU: what having an antagonist process costs without its load (the A/A check).
class Idle final : public GroupAntagonist {
 public:
  Idle(const AntagonistSpec& spec, const AntagonistTarget& target) : GroupAntagonist(spec, target) {
    cpu_set_t set;  // made before the fork: the child does not allocate
    CPU_ZERO(&set);
    for (int c : target.cpus)
      if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
    // Stopped with SIGKILL (grace 0): a forked child has the harness's signal handlers.
    proc_ = Process::fork(Spawn{.own_group = true}, [set](int) {
      sched_setaffinity(0, sizeof set, &set);
      for (;;) pause();
      return 0;
    });
    rec_["program"] = "an idle process (pause())";
    rec_["version"] = nullptr;
    rec_["argv"] = nlohmann::json::array();
    rec_["pid"] = proc_.pid();
    rec_["bogo_ops"] = nullptr;
    rec_["bogo_ops_per_s"] = nullptr;
    rec_["run_s"] = nullptr;
    rec_["cpu_s"] = nullptr;
    started_ = now_ns();
  }
  ~Idle() override { stop(); }

  std::string await_running(double timeout_s) override { return await_workers(1, true, timeout_s); }

  void stop() override {
    if (stopped_) return;
    stopped_ = true;
    proc_.stop(0);
    rec_["run_s"] = double(now_ns() - started_) * 1e-9;
    rec_["cpu_s"] = proc_.usage().total_s();
  }

 protected:
  bool progresses() const override { return false; }
  std::string who() const override { return fmt::format("antagonist {} (idle stand-in)", spec_.text()); }

 private:
  uint64_t started_ = 0;
};

std::unique_ptr<Antagonist> start_stress_ng(const AntagonistSpec& spec, const AntagonistTarget& target) {
  return std::make_unique<StressNg>(spec, target, *find_kind(spec.kind));
}

std::vector<AntagonistKind> builtin_kinds() {
  auto n = [](int i) { return fmt::format("{}", i); };
  std::vector<AntagonistKind> k;
  k.push_back({"none", "an idle stand-in process that uses no CPU (the A/A check)", "", 0, 0, 0, false,
               nullptr,
               [](const AntagonistSpec& s, const AntagonistTarget& t) -> std::unique_ptr<Antagonist> {
                 return std::make_unique<Idle>(s, t);
               }});
  k.push_back({"cpu", "busy loops (stress-ng --cpu)", "the load of each CPU in percent (--cpu-load)", 1, 100,
               100, true,
               [n](int i, double level, const std::string&) {
                 return std::vector<std::string>{"--cpu", n(i), "--cpu-load", level_text(level)};
               },
               start_stress_ng});
  k.push_back({"cache", "last-level cache thrash (stress-ng --cache --cache-level 3)", "", 0, 0, 0, true,
               [n](int i, double, const std::string&) {
                 return std::vector<std::string>{"--cache", n(i), "--cache-level", "3"};
               },
               start_stress_ng});
  k.push_back({"membw", "memory bandwidth (stress-ng --stream)", "", 0, 0, 0, true,
               [n](int i, double, const std::string&) {
                 return std::vector<std::string>{"--stream", n(i)};
               },
               start_stress_ng});
  k.push_back({"irq", "timer interrupts and their signals (stress-ng --timer)",
               "the timer frequency in Hz (--timer-freq)", 1000, 1'000'000, 1'000'000, true,
               [n](int i, double level, const std::string&) {
                 return std::vector<std::string>{"--timer", n(i), "--timer-freq", level_text(level)};
               },
               start_stress_ng});
  k.push_back({"fork", "process creation, exit and their page faults (stress-ng --fork)",
               "the children each worker forks per round (--fork-max)", 1, 1024, 1, true,
               [n](int i, double level, const std::string&) {
                 return std::vector<std::string>{"--fork", n(i), "--fork-max", level_text(level)};
               },
               start_stress_ng});
  k.push_back({"io", "page-cache writes to files in the run's folder (stress-ng --hdd, 64 MiB a worker)", "",
               0, 0, 0, true,
               [n](int i, double, const std::string& scratch) {
                 return std::vector<std::string>{"--hdd", n(i), "--hdd-bytes", "64M", "--temp-path", scratch};
               },
               start_stress_ng});
  // The sides themselves under a CPU quota (core/measure/quota.cpp): LEVEL percent of one CPU per
  // 100 ms period, up to every CPU this process may use (beyond it the quota cannot throttle).
  k.push_back({"quota", "the sides under a CPU quota in a cgroup (cpu.cfs_quota_us or cpu.max)",
               "percent of one CPU per 100 ms period", 1, 100.0 * double(allowed_cpus().size()), 50, false,
               nullptr, start_quota, true});
  return k;
}

std::vector<AntagonistKind>& kinds() {
  static std::vector<AntagonistKind> all = builtin_kinds();
  return all;
}

const AntagonistKind* find_kind(const std::string& name) {
  for (auto& k : kinds())
    if (k.name == name) return &k;
  return nullptr;
}

std::string kind_names() {
  std::string out;
  for (auto& k : kinds())
    if (k.start) out += (out.empty() ? "" : ", ") + k.name;
  return out;
}

std::string where_names() {
  std::string out;
  for (auto& w : antagonist_wheres()) out += (out.empty() ? "" : ", ") + w;
  return out;
}

}  // namespace

std::string AntagonistSpec::text() const {
  const AntagonistKind* k = find_kind(kind);
  return kind + (k && k->on_sides ? "" : "@" + where) + (takes_level(kind) ? ":" + level_text(level) : "");
}

bool antagonist_on_sides(const AntagonistSpec& spec) {
  const AntagonistKind* k = find_kind(spec.kind);
  return k && k->on_sides;
}

void check_antagonist_runnable(const AntagonistSpec& spec) {
  const AntagonistKind* k = find_kind(spec.kind);
  if (k && k->needs_stress_ng && stress_ng_path().empty()) throw Skip(kInstallHint);
}

const std::vector<std::string>& antagonist_wheres() {
  static const std::vector<std::string> w{"same", "smt", "llc", "cross_numa", "others"};
  return w;
}

void register_antagonist_kind(AntagonistKind kind) {
  for (auto& k : kinds())
    if (k.name == kind.name) {
      k = std::move(kind);
      return;
    }
  kinds().push_back(std::move(kind));
}

const std::vector<AntagonistKind>& antagonist_kinds() { return kinds(); }

AntagonistSpec parse_antagonist(const std::string& text) {
  const std::string example = "e.g. --antagonist cpu@others or --antagonist cpu@same:50";
  AntagonistSpec s;
  std::string rest = text;
  std::string level;
  if (const size_t colon = rest.find(':'); colon != std::string::npos) {
    level = rest.substr(colon + 1);
    rest.resize(colon);
    if (level.empty())
      throw UsageError(fmt::format("--antagonist '{}': give a LEVEL after the ':' or leave it out; {}",
                                   brief(text), example));
  }
  if (const size_t at = rest.find('@'); at != std::string::npos) {
    s.where = rest.substr(at + 1);
    rest.resize(at);
    const auto& w = antagonist_wheres();
    if (std::find(w.begin(), w.end(), s.where) == w.end())
      throw UsageError(fmt::format("--antagonist '{}': unknown WHERE '{}'; use one of {}; {}", brief(text),
                                   brief(s.where), where_names(), example));
  }
  s.kind = rest;
  const AntagonistKind* k = find_kind(s.kind);
  if (!k)
    throw UsageError(fmt::format("--antagonist '{}': unknown KIND '{}'; use one of {}; {}", brief(text),
                                 brief(s.kind), kind_names(), example));
  if (!k->start)
    throw UsageError(fmt::format("--antagonist '{}': {} ({}) is not built in this binary yet; use one of {}",
                                 brief(text), k->name, k->what, kind_names()));
  if (k->on_sides && text.find('@') != std::string::npos)
    throw UsageError(
        fmt::format("--antagonist '{}': {} acts on the sides themselves and takes no WHERE; e.g. "
                    "--antagonist {}:{}",
                    brief(text), k->name, k->name, level_text(k->level_default)));
  if (!level.empty()) {
    if (k->level_is.empty())
      throw UsageError(fmt::format("--antagonist '{}': {} takes no LEVEL; drop ':{}'", brief(text), k->name,
                                   brief(level)));
    const auto v = parse_real(level);
    if (!v || !(*v >= k->level_min && *v <= k->level_max))
      throw UsageError(
          fmt::format("--antagonist '{}': LEVEL of {} is {}, a number from {} to {}; e.g. {}@{}:{}",
                      brief(text), k->name, k->level_is, level_text(k->level_min), level_text(k->level_max),
                      k->name, s.where, level_text(k->level_default)));
    s.level = *v;
    s.level_given = true;
  } else {
    s.level = k->level_default;
  }
  return s;
}

std::vector<int> resolve_antagonist_cpus(const std::string& where, int side0, int side1,
                                         const std::vector<int>& allowed, const topo::Topology& t) {
  auto is_side = [&](int c) { return c == side0 || c == side1; };
  auto cpu_of = [&](int id) -> const topo::Cpu* {
    for (auto& c : t.cpus)
      if (c.id == id) return &c;
    return nullptr;
  };
  std::vector<int> out;
  if (where == "others") {
    for (int c : allowed)
      if (side0 < 0 || !is_side(c)) out.push_back(c);
    if (out.empty())
      throw Skip(fmt::format("antagonist @others: every allowed CPU ({}) is a side's; none is left for it",
                             cpu_list_text(allowed)));
    return out;
  }
  if (side0 < 0)
    throw Skip(
        fmt::format("antagonist @{}: the sides are unpinned, so no CPU is theirs to be relative to; pin them "
                    "(-p placement=same or cross) or use @others",
                    where));
  if (where == "same") return {side0};
  const topo::Cpu* s0 = cpu_of(side0);
  if (!s0)
    throw Skip(
        fmt::format("antagonist @{}: CPU {} of side 0 is not in this machine's topology", where, side0));
  auto allowed_here = [&](int c) { return std::find(allowed.begin(), allowed.end(), c) != allowed.end(); };
  // The CPUs of the class (`in`), and those of them no side uses and this process may use.
  auto pick = [&](auto&& in, const std::string& none_here) {
    bool any = false;
    for (auto& c : t.cpus) {
      if (c.id == side0 || !in(c)) continue;
      any = true;
      if (!is_side(c.id) && allowed_here(c.id)) out.push_back(c.id);
    }
    if (!any) throw Skip(fmt::format("antagonist @{}: {}", where, none_here));
    if (out.empty())
      throw Skip(
          fmt::format("antagonist @{}: every CPU of that class relative to CPU {} (side 0) is a side's or "
                      "not allowed here",
                      where, side0));
  };
  if (where == "smt") {
    pick([&](const topo::Cpu& c) { return c.core == s0->core && c.package == s0->package; },
         fmt::format("CPU {} (side 0) has no SMT sibling here{}", side0,
                     t.smt ? "" : " (no SMT on this machine)"));
    return out;
  }
  if (where == "llc") {
    pick(
        [&](const topo::Cpu& c) {
          return c.llc == s0->llc && !(c.core == s0->core && c.package == s0->package);
        },
        fmt::format("no other core shares the last-level cache of CPU {} (side 0) here", side0));
    return {out.front()};
  }
  if (where == "cross_numa") {
    pick([&](const topo::Cpu& c) { return c.node != s0->node; },
         fmt::format("no CPU here is on another NUMA node than CPU {} (side 0){}", side0,
                     t.nodes > 1 ? "" : ": this machine has one node"));
    return {out.front()};
  }
  throw UsageError(fmt::format("antagonist @{}: unknown WHERE; use one of {}", where, where_names()));
}

Noise::Noise(const std::vector<Plan>& plans) {
  for (auto& p : plans) {
    const AntagonistKind* k = find_kind(p.spec.kind);
    if (!k || !k->start) throw std::logic_error("antagonist kind not built: " + p.spec.kind);
    running_.push_back(k->start(p.spec, p.target));
  }
}

Noise::~Noise() {
  for (auto& a : running_) a->stop();
}

std::string Noise::await_running(double timeout_s) {
  const uint64_t deadline = now_ns() + uint64_t(timeout_s * 1e9);
  for (auto& a : running_) {
    const double left = std::max(0.05, double(deadline - std::min(deadline, now_ns())) * 1e-9);
    if (auto why = a->await_running(left); !why.empty()) return why;
  }
  return "";
}

void Noise::attach(const SideTasks& sides) {
  for (auto& a : running_) a->attach(sides);
}

void Noise::window_open() {
  for (auto& a : running_) a->window_open();
  opened_ = true;
}

std::string Noise::lost() {
  for (auto& a : running_)
    if (auto why = a->lost(); !why.empty()) return why;
  return "";
}

std::string Noise::window_close(double window_s) {
  std::string first;
  for (auto& a : running_)
    if (auto why = a->window_close(window_s); first.empty()) first = why;
  opened_ = false;
  return first;
}

void Noise::stop_into(nlohmann::json& extra) {
  for (auto& a : running_) a->stop();
  if (running_.empty()) return;
  nlohmann::json& list = extra["antagonists"];
  if (!list.is_array() || list.size() != running_.size()) {
    list = nlohmann::json::array();
    for (auto& a : running_) list.push_back(a->record());
    return;
  }
  // A second window of the same repetition: its progress adds to the first's.
  for (size_t i = 0; i < running_.size(); ++i) {
    const nlohmann::json r = running_[i]->record();
    nlohmann::json& e = list[i];
    for (const char* key : {"bogo_ops", "run_s", "cpu_s", "window_cpu_s"})
      if (r[key].is_number())
        e[key] = (e[key].is_number() ? e[key].get<double>() : 0.0) + r[key].get<double>();
    e["windows"] = e.value("windows", 0) + r.value("windows", 0);
    if (e["bogo_ops"].is_number() && e["run_s"].is_number() && e["run_s"].get<double>() > 0)
      e["bogo_ops_per_s"] = e["bogo_ops"].get<double>() / e["run_s"].get<double>();
  }
}

}  // namespace ipclab
