#pragma once
// The results store (docs/store.md): every run's records, environment, build, kernel and machine
// identity appended to one database — an SQLite file beside the result folders by default, or a
// PostgreSQL server shared by many machines — and, at the end of a run, what moved since the last
// comparable run in it (same machine, same build flags, same benchmark and parameters).
//
// The store never costs a run: it is checked before anything is created (a store that cannot be
// one is a usage error), read before the result files are written (for the comparison) and
// written after them, each in one transaction; a store locked past the wait or unreachable is
// skipped with one line, and the run's exit status is its own.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/stats/record.hpp"
#include "core/store/db.hpp"

namespace ipclab::store {

inline constexpr int kSchemaVersion = 1;
/// How long a run waits for a store another writer holds before it goes on without it.
inline constexpr double kDefaultWaitS = 10;

/// Where a run's store is: `--store SPEC` when given; none with `--no-store` or IPCLAB_NO_STORE set;
/// else the file ipclab.sqlite beside the run's result folder (`--out DIR`: in DIR's parent), so
/// that the runs of one results folder share it; none for a run without --out (a lone --json
/// file, the console only).
std::optional<std::string> default_target(const std::optional<std::string>& store, bool no_store,
                                          const std::optional<std::string>& out_dir);

/// The machine a run's figures belong to: its id and what it was made of.
struct Machine {
  std::string id, source, cpu_model, hostname;
  int64_t logical_cpus = 0, packages = 0, numa_nodes = 0;
};

class Store {
 public:
  /// Opens and checks `spec` (a path, or a postgresql:// URL) before the run creates anything.
  /// Throws UsageError for what cannot be a store: a symbolic link or other non-regular file, a
  /// file that is no ipclab store or is damaged, a store of a newer schema. `implicit` (the
  /// default place, not --store): a file of another user is skipped (nullptr, `note` says why).
  static std::unique_ptr<Store> open(const std::string& spec, bool implicit, double wait_s,
                                     std::string* note);
  ~Store();

  /// What moved since the last comparable run: sets `extra.since` on each benchmark's summary
  /// record (its median, or its one repetition). "" or the one line saying why it could not.
  std::string compare(std::vector<Record>& records, const nlohmann::json& context);
  /// Appends a run of `kind` (run, advise, import) in one transaction; `source`: the file it was
  /// imported from. "" or the one line saying why it was skipped.
  std::string append(const std::string& kind, const nlohmann::json& context,
                     const std::vector<nlohmann::json>& records, const std::string& source = "");
  /// Whether the store already holds the run `context` describes (its start date, host, command
  /// line and commit): an import of a file imported before, or of a run stored when it ran.
  bool holds(const nlohmann::json& context);
  std::string where() const { return spec_; }

 private:
  Store(std::string spec, double wait_s);
  std::unique_ptr<Db> connect(bool write);
  std::string spec_;  // the file, or the server's URL without its password
  std::string url_;   // a server's URL as given (with its password): connections only
  double wait_s_;
};

/// The figure a record is compared by, as compare.py's `compared`: a capacity (rate=auto, higher
/// is better), a rate record's corrected p99, else the time per op. Its value is empty when the
/// record has none (failed, saturated).
struct Figure {
  std::string metric;
  std::optional<double> value;
  bool higher_better = false;
};
Figure figure_of(const nlohmann::json& record);

/// This machine's identity from `context` (its topology and hostname) and the machine's own id:
/// the DMI product UUID where readable, else one generated once and kept in the store (`db`,
/// written only when `create`). Empty id when it is generated and none is kept yet.
Machine machine_of(Db& db, const nlohmann::json& context, bool create);

}  // namespace ipclab::store
