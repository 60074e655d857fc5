#pragma once
// Antagonists (`--antagonist KIND[@WHERE][:LEVEL]`, docs/noise.md): real interference run through
// every measured window of a point — stress-ng's stressors, or an idle stand-in (`none`, the A/A
// check) — pinned by topology class relative to the sides' CPUs. The session starts them before
// each warm-up and waits until they run, checks over the window that they lived and progressed
// (a point they did not is failed: it was not measured under noise), stops them once the window
// closes, and records what ran (extra.antagonists). Every antagonist is a child of the harness in
// a process group of its own (core/process: Spawn::own_group), stopped on every path: the normal
// end, a failed point, a signal, the harness's death (stress-ng's workers die with their parent).
#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ipclab {

namespace topo {
struct Topology;
}

/// One --antagonist as given: its kind, where it runs relative to the sides, and its level.
struct AntagonistSpec {
  std::string kind;
  std::string where = "others";
  bool level_given = false;
  double level = 0;  // the kind's default when not given (AntagonistKind::level_default)
  /// "kind@where[:level]", as the record and the context name it.
  std::string text() const;
};

/// The WHERE classes, in the order help lists them: `same` (side 0's CPU), `smt` (an SMT sibling
/// of it), `llc` (another core of its last-level cache), `cross_numa` (a CPU of another NUMA node),
/// `others` (every allowed CPU the sides do not use; the default).
const std::vector<std::string>& antagonist_wheres();

class Antagonist;

/// The shortest window in which an antagonist that used no CPU is taken to have stalled: in a
/// shorter one a light antagonist (1% load) may not have been scheduled at all.
constexpr double kJudgedWindowS = 0.05;

/// The tasks of a point's sides once its workers exist: threads of this process (gettid()) and whole
/// processes (forked workers, peers). What an antagonist acting on the sides themselves (`quota`)
/// is given (Antagonist::attach).
struct SideTasks {
  std::vector<pid_t> threads;
  std::vector<pid_t> processes;
};

/// Where one antagonist runs and for how long at most: what its kind's start gets.
struct AntagonistTarget {
  std::vector<int> cpus;  // the CPUs it is pinned to (resolve_antagonist_cpus)
  double life_s = 60;     // a stress-ng run ends by itself after this (a safety net)
  std::string scratch;    // a folder of the run for its files (the run's own folder)
};

/// A kind: what it is, its LEVEL, and how it starts. The built-in kinds (none, cpu, cache, membw,
/// irq, fork, io) are registered by antagonist.cpp; another (quota, whose runner is built beside
/// this file) registers itself with register_antagonist_kind and is then parsed, resolved and run as
/// they are. A kind known by name but not built (`start` empty) is a usage error saying so.
struct AntagonistKind {
  std::string name;
  std::string what;      // for help and errors: "busy loops (stress-ng --cpu, LEVEL: --cpu-load %)"
  std::string level_is;  // "" when it takes no LEVEL; else what LEVEL is, for the error
  double level_min = 0, level_max = 0, level_default = 0;
  bool needs_stress_ng = true;  // Skip with the install hint when stress-ng is missing
  /// stress-ng's options for this kind: `instances` workers at `level`, files in `scratch`.
  std::function<std::vector<std::string>(int instances, double level, const std::string& scratch)> options;
  /// Starts one (empty: the kind is not built in this binary). Throws Skip when the machine cannot run it.
  std::function<std::unique_ptr<Antagonist>(const AntagonistSpec&, const AntagonistTarget&)> start;
  /// It acts on the sides themselves (quota), not beside them: no WHERE, no CPUs of its own; it is
  /// given the sides' tasks once they exist (Antagonist::attach).
  bool on_sides = false;
};
/// Adds (or, by name, replaces) a kind.
void register_antagonist_kind(AntagonistKind kind);
/// The registered kinds, in registration order.
const std::vector<AntagonistKind>& antagonist_kinds();

/// The `quota` kind's start (core/measure/quota.cpp): the sides under a CPU quota in a cgroup of
/// the run's, from attach to stop.
std::unique_ptr<Antagonist> start_quota(const AntagonistSpec& spec, const AntagonistTarget& target);

/// Parses "KIND[@WHERE][:LEVEL]": UsageError (one line naming the fix) for an unknown kind or
/// WHERE, a LEVEL that is no number or out of the kind's range, a LEVEL for a kind that takes
/// none, and a kind that is not built in this binary.
AntagonistSpec parse_antagonist(const std::string& text);

/// Whether `spec`'s kind acts on the sides themselves (AntagonistKind::on_sides).
bool antagonist_on_sides(const AntagonistSpec& spec);

/// Skip, with the install hint, when `spec`'s kind needs stress-ng and there is none on PATH.
void check_antagonist_runnable(const AntagonistSpec& spec);

/// The CPUs antagonist `where` runs on, for sides on `side0` and `side1` (-1: unpinned) among the
/// `allowed` CPUs of topology `t`: `same` side 0's CPU; `smt` its SMT siblings that no side uses;
/// `llc` one CPU of side 0's last-level cache on another core, no side's; `cross_numa` one CPU of
/// another NUMA node, no side's; `others` every allowed CPU no side uses (every allowed CPU when
/// the sides are unpinned). Skip, with the reason, when the class is missing here, when the sides
/// are unpinned for a class relative to them, or when no CPU is left for it.
std::vector<int> resolve_antagonist_cpus(const std::string& where, int side0, int side1,
                                         const std::vector<int>& allowed, const topo::Topology& t);

/// One antagonist started by its kind. Its process (group) is stopped by stop() or its destructor.
class Antagonist {
 public:
  virtual ~Antagonist() = default;
  /// "" once it runs (its workers exist and have run), or why it did not within `timeout_s`.
  virtual std::string await_running(double timeout_s) = 0;
  /// The sides' tasks, once the workers exist and before their warm-up (after await_running): for a
  /// kind that acts on them (AntagonistKind::on_sides). Skip when it cannot act on them here.
  virtual void attach(const SideTasks&) {}
  /// The measured window opens: what its progress over the window is measured from.
  virtual void window_open() = 0;
  /// Cheap, polled while it should run: "" or why it is gone (its process died).
  virtual std::string lost() = 0;
  /// The window closed after `window_s`: "" or why it was not under noise (the antagonist died, was
  /// stopped, or — in a window of at least kJudgedWindowS — used no CPU in it).
  virtual std::string window_close(double window_s) = 0;
  /// Stops it (the whole group) and completes record(); idempotent.
  virtual void stop() = 0;
  /// What ran: kind, where, level, cpus, program, version, argv, progress (docs/json-schema.md).
  virtual nlohmann::json record() const = 0;
};

/// The antagonists of one measured window, started together and stopped together (on every path:
/// the destructor stops what is still running). The session's one hold on them.
class Noise {
 public:
  struct Plan {
    AntagonistSpec spec;
    AntagonistTarget target;
  };
  /// Starts each planned antagonist; throws (std::runtime_error) when one cannot be started.
  explicit Noise(const std::vector<Plan>& plans);
  ~Noise();
  Noise(const Noise&) = delete;
  Noise& operator=(const Noise&) = delete;
  bool empty() const { return running_.empty(); }
  /// "" once every antagonist runs, or why one did not (at most `timeout_s` in all).
  std::string await_running(double timeout_s);
  /// The sides' tasks to each antagonist (Antagonist::attach).
  void attach(const SideTasks& sides);
  void window_open();
  /// "" or why one is gone (cheap: for the coordinator's polls).
  std::string lost();
  /// "" or why the window (of `window_s`) was not under noise.
  std::string window_close(double window_s);
  /// Stops them all and adds what ran to `extra["antagonists"]` (a second window of the same
  /// repetition adds its progress to the first's entries).
  void stop_into(nlohmann::json& extra);

 private:
  std::vector<std::unique_ptr<Antagonist>> running_;
  bool opened_ = false;
};

}  // namespace ipclab
