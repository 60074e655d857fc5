#pragma once
// One result record: what a benchmark repetition produced. Every output format is derived from it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/cpu.hpp"
#include "core/base/params.hpp"
#include "core/stats/flags.hpp"
#include "core/stats/histogram.hpp"

namespace ipclab {

enum class Status { Ok, Failed, Skipped };
const char* status_name(Status s);

/// Each message has one verdict, decided by its sequence number (docs/methodology.md#integrity):
/// received intact, lost (sent, never received), duplicated (received again), reordered (received
/// after a later one of the same sender, by a transport that promises order) or corrupt (a byte
/// differs, or it is no message of this run). received <= sent always.
struct Integrity {
  uint64_t sent = 0, received = 0, lost = 0, duplicated = 0, reordered = 0, corrupt = 0;
  bool clean() const { return lost == 0 && duplicated == 0 && reordered == 0 && corrupt == 0; }
  Integrity& operator+=(const Integrity& o) {
    sent += o.sent;
    received += o.received;
    lost += o.lost;
    duplicated += o.duplicated;
    reordered += o.reordered;
    corrupt += o.corrupt;
    return *this;
  }
  /// "3 lost, 0 duplicated, 0 reordered, 1 corrupt of 1000 sent": the one wording of a verdict.
  std::string text() const;
};

/// Summary of a latency histogram as exported (the histogram itself is sparse).
struct Latency {
  std::string kind;  // rtt | one_way | session | op | io | batch_mean | sched_error (docs/json-schema.md)
  uint64_t count = 0, min = 0, max = 0, p50 = 0, p90 = 0, p95 = 0, p99 = 0, p999 = 0;
  double mean = 0;
  std::vector<uint64_t> values, counts;

  static Latency from(const std::string& kind, const Histogram& h);
};

struct Side {
  std::string role;  // producer, consumer, client, server, host, guest, worker, ...
  int index = 0;
  std::vector<int> pinned;    // CPUs it was pinned to; empty = unpinned
  std::vector<int> observed;  // CPUs it was seen running on
};

struct Placement {
  std::string layout = "unpinned";
  std::vector<int> cpus;
  std::vector<Side> sides;
  /// A two-sided pinned layout (cross, or a class): the CPUs of side 0 and side 1, their measured
  /// cache-line round trip (0: not measured) and why the pair is in its class (resolve_pair).
  std::vector<int> pair;
  double c2c_ns = 0;
  std::string basis;
};

struct Record {
  std::string name, suite, mechanism;
  Params params;
  std::string run_type = "iteration";
  std::string aggregate_name;
  int repetition = 0;
  Status status = Status::Ok;
  std::string error;
  uint64_t ops = 0, bytes = 0;
  double wall_s = 0;
  nlohmann::json rates = nlohmann::json::object();  // beyond ops/bytes per second
  std::optional<Latency> latency;
  CpuUsage cpu;
  // The steal of the measured windows (core/measure/session.cpp; a peer's: core/peers/peer.hpp):
  // none where /proc/stat has no steal figure.
  std::optional<Steal> steal;
  // What the workers' threads waited on a run queue over the measured windows — runnable, not
  // running: another task or interrupt on their CPU had it (schedstat; core/base/cpu.hpp). Peers,
  // servers and daemons are not in it. None where the kernel keeps no schedstat.
  std::optional<double> run_queue_wait_s;
  Placement placement;
  Integrity integrity;
  nlohmann::json extra = nlohmann::json::object();
  nlohmann::json spread;  // aggregates only
  nlohmann::json
      series;  // iterations of run_workers runs: the time series (core/stats/series.hpp); null: none
  // Aggregates only (statistics.hpp, runner.hpp): bootstrap confidence intervals of the medians
  // and --repetitions auto's outcome. `flags`: an aggregate's are those of its repetitions and of
  // their spread; an iteration's, its own beyond its series' (`steal`, flag_steal).
  nlohmann::json ci, flags, repetitions_auto;
  // What a person should know of this record and can act on: [{message, remedy}], as the
  // context's warnings (flag_steal's). Iterations only.
  nlohmann::json warnings = nlohmann::json::array();
  // Kernel counters of the measured window (core/measure/kcounters.hpp): scope, totals, per_op, and the
  // counters that were not available and why. Empty object: none were taken.
  nlohmann::json kernel = nlohmann::json::object();

  double time_per_op_ns() const { return ops ? wall_s * 1e9 / double(ops) : 0.0; }
  double cpu_per_op_ns() const { return ops ? cpu.total_s() * 1e9 / double(ops) : 0.0; }
  double ctx_per_op() const { return ops ? double(cpu.ctx_vol + cpu.ctx_invol) / double(ops) : 0.0; }
  double faults_per_op() const { return ops ? double(cpu.faults) / double(ops) : 0.0; }
  double steal_per_op_ns() const { return ops && steal ? steal->steal_s * 1e9 / double(ops) : 0.0; }
  /// Marks the record failed with `why` unless it already failed (the first reason is kept).
  void fail(const std::string& why);
};

/// Adds the steal of one measured window to the record's (a record of several windows sums them).
void add_steal(Record& r, const Steal& window);

/// The share of a window's CPU time lost to steal above which a record is flagged `steal`: 5%, a
/// loss that moves a time per op more than most differences worth reporting.
constexpr double kStealFlagShare = 0.05;
/// Flags an iteration whose windows lost more than kStealFlagShare of their CPU time to steal, even
/// at the least the tick counts allow (Steal::least_share), and adds the warning that says so.
void flag_steal(Record& r);

/// Flags an iteration whose measured window (wall_s) is shorter than `floor_s`, the shortest this
/// machine's timer and scheduler allow (core/machine/window.hpp), `short_window`, and adds the
/// warning that says so and its remedy. Such a record, and an aggregate of it, is never ranked.
void flag_short_window(Record& r, double floor_s);

/// The flags an ok record shows in its status (status_text), flag_table()'s: its series' and its
/// own `flags` (an id no flag has left out), a missed CI target, kernel counters unavailable.
std::set<Flag> record_flags(const Record& r);

/// The status as the console and Markdown tables show it: the status (and error), then what casts
/// doubt on an ok figure — an aggregate's 95% CI of its median time per op (±%), an auto
/// repetition's missed CI target, the series' flags (non-steady, bimodal; bimodal repetitions),
/// the record's own (steal, with an iteration's share: "steal 12%"), and kernel counters asked for
/// and unavailable — and the notes the record carries for its reader (extra.notes: where the
/// shared memory lies): "ok ±1.4%, non-steady, memory on node 1".
std::string status_text(const Record& r);

nlohmann::json to_json(const Record& r);
/// The record as one line of JSON with its newline (bytes that are not UTF-8 replaced): a line of
/// the results journal, as it is appended and as the crash handler writes it.
std::string to_json_line(const Record& r);
/// A latency summary with its histogram, as `latency_ns` (and the open-loop figures) hold it.
nlohmann::json to_json(const Latency& l);
/// Where each side was seen running, for tables: `producer0@0 consumer0@1+0` (`?`: not seen).
std::string observed_text(const Placement& p);
/// Reads a record (a peer's line, or a result file's entry); throws std::runtime_error on bad shape.
Record record_from_json(const nlohmann::json& j);

}  // namespace ipclab
