#pragma once
// The output formats' building blocks, all reading the same records; reporter.hpp drives them.
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/planned.hpp"
#include "core/stats/record.hpp"

namespace ipclab::output {

constexpr int kSchemaVersion = 1;

/// Refuses, before any work, a result path ipclab could not or must not write: not plain UTF-8,
/// in a missing or unwritable folder, naming a folder, a symbolic link or a special file.
/// `option` is the flag it came from (--json, --csv, --markdown, --out).
void check_target(const std::string& option, const std::string& path);

/// What a result path names, for telling two outputs apart: the real path of its folder (links
/// resolved as far as the folder exists) and its file name.
std::string target_identity(const std::string& path);

/// Makes the result file at `path` this run's alone until the run ends (a machine-wide lock named
/// after target_identity): UsageError, naming the run that holds it, when another run writes it.
void hold_target(const std::string& option, const std::string& path);

/// A result file in the making: its temporary of the run is created at once (so a place that
/// cannot be written is found before the run), and commit() writes, syncs and renames it over
/// `path` — never a half-written file, never a write through a link, mode 0644 whatever the
/// umask. Not committed, the temporary is removed.
class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  void commit(const std::string& content);

 private:
  std::string path_, tmp_;
  int fd_ = -1;
};

/// AtomicFile(path).commit(content).
void write_file_atomic(const std::string& path, const std::string& content);

/// The result file of SPEC §2: {schema_version, context, benchmarks}.
std::string json_document(const nlohmann::json& context, const std::vector<Record>& records);

/// CSV header: the leading columns of every suite present that declares them (e.g. the messaging
/// suite's reference columns), then ours.
std::vector<std::string> csv_header(const std::set<std::string>& suites);
std::vector<std::string> csv_header(const std::vector<Record>& records);
std::string csv_rows(const std::vector<std::string>& header, const std::vector<Record>& records);
/// Before the run: UsageError when `path` exists with a header other than these suites' one.
void check_csv(const std::string& path, const std::set<std::string>& suites);
/// Appends whole rows to `path` under a lock (creating it 0644 with a header); UsageError when
/// its header differs.
void append_csv(const std::string& path, const std::vector<Record>& records);

/// Names for the tables people read (console, Markdown): the full name stays the key of JSON and
/// CSV, but a table shows a benchmark as its mechanism and the parameters whose values vary
/// among the planned benchmarks of that mechanism (`messaging/pipe size:64`); sizes as 1K, 1M.
struct TableNames {
  std::map<std::string, std::string> short_name;  // full benchmark name → table name
  /// Per mechanism (in plan order), its parameters that do not vary: `name:value name:value`.
  std::vector<std::pair<std::string, std::string>> fixed;
  /// The table name of a full benchmark name; the name itself when it was not planned.
  const std::string& of(const std::string& name) const;
};
TableNames table_names(const std::vector<PlannedBenchmark>& plan);

/// One column of the result tables: the console's, the Markdown file's (--markdown) and the
/// report's (HTML and summary.md, which read them from `ipclab list --json`), in columns().
struct Column {
  std::string key;  // its header, and the report's key for its cells
  std::vector<std::string>
      value;           // the record's JSON field it shows, e.g. {"latency_ns", "p50"}; none: name, status
  std::string format;  // name | time (ns) | rate (per second) | ratio (two decimals) | kind | status
  int width;           // on the console (name and status: sized by their text)
  std::string help;
  /// The run's option (a context key) without which no record has the figure: the console leaves
  /// the column out unless the context holds it true ("" for every run). A table written at the
  /// end (Markdown) leaves out any figure column no row has.
  std::string needs = "";
};
/// latency_ns.kind as the tables word it ("rtt": "round trip", "one_way": "one-way+q", ...; "-" for
/// none); the latency column's help says what each means.
std::string latency_kind_text(const std::string& kind);
/// {kind: its text} for every kind latency_kind_text words (the registry's latency column carries it).
nlohmann::json latency_kind_texts();
/// What latency_ns.kind measures, in words ("a request and its reply ...").
std::string latency_kind_meaning(const std::string& kind);
/// The columns of every result table, in order.
const std::vector<Column>& columns();
/// A figure column's cell for a record's JSON (to_json): "-" where the record has no figure.
std::string figure_cell(const Column& c, const nlohmann::json& record);

/// The registry as `ipclab list --json` prints it and a result's context carries it (`registry`):
/// the columns of every result table, suites in their order (with help, mechanisms and table columns), and
/// every mechanism with its kind, help and parameters (type, default, choices, preset grids, help). `suites`
/// non-empty: those suites and their mechanisms only.
nlohmann::json registry_json(const std::set<std::string>& suites = {});

/// The run's antagonists as its context names them (`context.antagonists`, docs/noise.md),
/// comma-separated: "cpu@others:100, none@same"; "" for a run without --antagonist.
std::string antagonists_text(const nlohmann::json& context);
/// The Markdown result: machine line, warnings, one row per benchmark (its median when there are
/// repetitions) under its table name, then each mechanism's constant parameters.
std::string markdown(const nlohmann::json& context, const TableNames& names,
                     const std::vector<Record>& records);

/// What moved since the last comparable run in the store (the records' `extra.since`): a heading
/// naming the run compared with, a line per benchmark that moved (or may have: too few
/// repetitions), and one counting those within their noise band. Empty when nothing was compared.
struct SinceText {
  std::string heading;
  std::vector<std::string> lines;
};
SinceText since_text(const std::vector<Record>& records, const TableNames& names);
/// What the antagonists did to each median of a paired run (extra.inflation): a heading and a line
/// per point, its p50, p99, p99.9 and time/op as factors and its throughput as a change, each with
/// its interval; empty when no median was paired (output/noise.cpp).
SinceText inflation_text(const std::vector<Record>& records, const TableNames& names);

/// A warning ({message, remedy}: the context's, a record's) as one line of text: `message — remedy`.
std::string warning_text(const nlohmann::json& w);

/// "1.23 us", "456 ns", "2.00 s": three significant digits.
std::string human_ns(double ns);
/// "1.23M/s" style rates.
std::string human_rate(double per_s);

}  // namespace ipclab::output
