#pragma once
// The one interface the results store speaks to its database through: statements with `?`
// parameters, every value as text or NULL (each engine converts it to the column's type), and
// explicit transactions. SQLite (sqlite.cpp, the default: a file) and PostgreSQL (a shared server)
// implement it; nothing above this file knows which one it talks to.
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ipclab::store {

using Value = std::optional<std::string>;  // NULL, or the value as text
using Row = std::vector<Value>;

/// A store that cannot be used now (locked past the wait, unreachable, a failed write): the run
/// says so in one line and goes on without it.
struct Unavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Db {
 public:
  virtual ~Db() = default;
  /// Runs one statement; `?` parameters take `args` in order.
  virtual void exec(const std::string& sql, const std::vector<Value>& args = {}) = 0;
  /// Runs one statement and returns its rows.
  virtual std::vector<Row> query(const std::string& sql, const std::vector<Value>& args = {}) = 0;
  /// Runs statements separated by ';' (the schema), without parameters.
  virtual void script(const std::string& sql) = 0;
  /// A transaction that takes the write lock at once (SQLite: BEGIN IMMEDIATE), so that two
  /// writers queue rather than both reading and one failing at its first write.
  virtual void begin_write() = 0;
  virtual void commit() = 0;
  virtual void rollback() noexcept = 0;
  /// Whether the table exists.
  virtual bool has_table(const std::string& name) = 0;
  /// Whether it holds tables of something else (a file that is another program's database).
  virtual bool holds_other_data() = 0;
  /// What the store is, for messages: its path, or its server without the password.
  virtual std::string where() const = 0;
};

/// Opens the SQLite file at `path`: read-only (it must exist) or read-write (created when absent).
/// Never follows a symbolic link; waits up to `wait_s` for a lock held by another writer.
/// Throws UsageError for a file that is no SQLite database or is damaged, Unavailable otherwise.
std::unique_ptr<Db> open_sqlite(const std::string& path, bool write, double wait_s);
/// Whether `spec` names a PostgreSQL server (postgresql://… or postgres://…).
bool is_postgres(const std::string& spec);
/// Connects to the PostgreSQL database `url` names (a libpq connection URI), waiting up to
/// `wait_s` for the connection and for locks. Throws Unavailable when it cannot.
std::unique_ptr<Db> open_postgres(const std::string& url, double wait_s);

}  // namespace ipclab::store
