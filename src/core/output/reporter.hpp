#pragma once
// Reporters: one per output format, each fed the same plan and records by the run. Each step
// happens at the moment the run's safety needs it:
//   constructor  checks the target, before anything is created: bad input is refused up front;
//   open()       creates what must exist before the run (a result file's temporary), once --out's
//                folder exists and before the environment is read or any benchmark runs;
//   begin()      the run starts, its plan and environment known (the console prints its header);
//   record()     a record has completed (each repetition, then the benchmark's median);
//   end()        every record, in run order: the result files are written here.
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/planned.hpp"
#include "core/output/output.hpp"
#include "core/stats/record.hpp"

namespace ipclab::output {

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void open() {}
  virtual void begin(const nlohmann::json& /*context*/, const std::vector<PlannedBenchmark>& /*plan*/) {}
  virtual void record(const Record& /*r*/) {}
  virtual void end(const std::vector<Record>& /*records*/) {}
};

/// The console table: a row per point as it completes (its median when the run has repetitions;
/// each repetition as well with `verbose`), under a header per suite naming the columns; at the end
/// the first answer again, what each latency kind shown measures and each flag shown's remedy.
class ConsoleReporter : public Reporter {
 public:
  /// `columns`: the width rows should fit (console_columns; 0: size the names to the widest).
  ConsoleReporter(FILE* out, size_t columns, bool verbose = false)
      : out_(out), columns_(columns), verbose_(verbose) {}
  void begin(const nlohmann::json& context, const std::vector<PlannedBenchmark>& plan) override;
  void record(const Record& r) override;
  void end(const std::vector<Record>& records) override;

 private:
  bool shown(const Record& r) const;
  size_t figures_width() const;
  std::string row_text(const std::string& name, const std::function<std::string(const Column&)>& cell) const;
  void header(const std::string& suite);
  void print_row(const Record& r);
  /// `text` on lines as wide as the console, `indent` spaces before the first, two more before the rest.
  void print_wrapped(const std::string& text, size_t indent = 2) const;

  FILE* out_;
  size_t columns_, width_ = 0;
  bool verbose_, medians_ = false;
  TableNames names_;
  std::vector<const Column*> shown_;      // the columns this run has figures for (Column::needs)
  std::map<std::string, size_t> widest_;  // per suite, its widest row name
  std::string suite_;                     // the suite whose header the rows are under
  std::string title_;                     // the first answer's
  std::set<std::string> first_;           // the names of the first answer's points (PlannedBenchmark::first)
  bool rest_begun_ = false;               // the table after the first answer has begun
  std::set<std::string> kinds_;           // the latency kinds the rows showed
  std::string antagonists_;               // the run's --antagonist, as the context names them ("": none)
  std::set<Flag> flags_;                  // the flags the rows showed
};

/// `text` after `lead` on lines of at most `width` columns (characters), the later ones `indent`
/// spaces in: broken after a `sep` (", " between items, " " between words) where the next piece
/// would pass the width (the first too, when `lead` leaves it no room), a piece longer than a line
/// between its words, a word longer than a line cut. `width` 0: one line.
std::string wrap_text(const std::string& lead, const std::string& text, size_t width, size_t indent,
                      const std::string& sep = " ");

/// The width of the terminal `out` writes to; 0 when it is not a terminal.
size_t terminal_columns(FILE* out);
/// The width the console's rows fit: the terminal's, else $COLUMNS, else kConsoleDefaultColumns.
constexpr size_t kConsoleDefaultColumns = 100;
size_t console_columns(FILE* out);

/// A result file written whole at the end through an AtomicFile (--json, --markdown).
class AtomicReporter : public Reporter {
 public:
  /// `folder_is_new`: the file goes into --out's folder, which this run creates after the checks
  /// (check_out_dir judged where it goes), so only open() can try the place.
  AtomicReporter(std::string option, std::string path, bool folder_is_new);
  void open() override;
  /// Keeps the run's context for end().
  void begin(const nlohmann::json& context, const std::vector<PlannedBenchmark>& plan) override;

 protected:
  /// Writes `content` over the target and says so on stderr.
  void commit(const std::string& content);
  nlohmann::json context_;

 private:
  std::string option_, path_;
  std::unique_ptr<AtomicFile> file_;
};

/// --json: the result file of docs/json-schema.md (json_document).
class JsonReporter : public AtomicReporter {
 public:
  using AtomicReporter::AtomicReporter;
  void end(const std::vector<Record>& records) override;
};

/// --markdown: the table of markdown(), short names and the constant parameters stated once.
class MarkdownReporter : public AtomicReporter {
 public:
  using AtomicReporter::AtomicReporter;
  void begin(const nlohmann::json& context, const std::vector<PlannedBenchmark>& plan) override;
  void end(const std::vector<Record>& records) override;

 private:
  TableNames names_;
};

/// --csv: rows appended in place at the end (append_csv), under the header of the run's suites.
class CsvReporter : public Reporter {
 public:
  /// Checks the target and, when it exists, its header against `suites` (check_csv).
  CsvReporter(std::string path, const std::set<std::string>& suites, bool folder_is_new);
  void end(const std::vector<Record>& records) override;

 private:
  std::string path_;
};

/// The run's results journal (docs/reliability.md): JSON lines next to the result files — a
/// header `{"ipclab_journal": 1, "schema_version": 1, "context": {...}}`, then each record as it
/// completes, appended with one write(2) — so that a crash, a signal or a failed write of the
/// result files at the end leaves every finished record on disk (`ipclab report` and `compare`
/// read it). It is written as a temporary of the run (ipc::create_file: a run stopped before its
/// first record leaves nothing) and renamed to `<folder>/<stem>.journal.<run id>.jsonl` with its
/// first record. Last among the reporters: its end() removes it once every result file is
/// written. A write that fails (EFBIG, ENOSPC) is cut back to the last whole line and stops the
/// run with a RunError.
class JournalReporter : public Reporter {
 public:
  /// `beside`: the result file it goes next to (its folder, and its name without extension).
  explicit JournalReporter(const std::string& beside);
  ~JournalReporter() override;
  void open() override;
  void begin(const nlohmann::json& context, const std::vector<PlannedBenchmark>& plan) override;
  void record(const Record& r) override;
  void end(const std::vector<Record>& records) override;
  /// Where the finished records are, once the journal holds one and the run did not end well
  /// ("" otherwise).
  std::string kept() const { return committed_ && !ended_ ? path_ : ""; }

 private:
  void append(const std::string& line);
  std::string folder_, stem_, path_, tmp_;
  int fd_ = -1;
  off_t size_ = 0;  // the whole lines written so far
  bool committed_ = false, ended_ = false;
};

}  // namespace ipclab::output
