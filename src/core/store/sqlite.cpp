// The results store in an SQLite file (libsqlite3, Debian's). Rollback journal, not WAL: WAL needs
// shared memory beside the file, which NFS and some FUSE file systems do not give; the rollback
// journal with synchronous=FULL keeps every committed run across a crash, on any of them.
#include <sqlite3.h>

#include <fmt/format.h>

#include "core/base/error.hpp"
#include "core/store/db.hpp"

namespace ipclab::store {

namespace {

class Sqlite final : public Db {
 public:
  Sqlite(const std::string& path, bool write, double wait_s) : path_(path) {
    const int flags = (write ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE : SQLITE_OPEN_READONLY) |
                      SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX;
    const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
    if (rc != SQLITE_OK) {
      const std::string why = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      sqlite3_close(db_);
      db_ = nullptr;
      throw Unavailable(fmt::format("{}: {}", path, why));
    }
    sqlite3_extended_result_codes(db_, 1);
    sqlite3_busy_timeout(db_, int(wait_s * 1000));
    // Reading the schema is the first read of the file: a file that is no database, or a damaged
    // one, is refused here, before anything is written to it.
    try {
      query("SELECT count(*) FROM sqlite_master", {});
      if (write) exec("PRAGMA synchronous=FULL", {});
    } catch (...) {
      sqlite3_close(db_);
      db_ = nullptr;
      throw;
    }
  }
  ~Sqlite() override { sqlite3_close(db_); }

  void exec(const std::string& sql, const std::vector<Value>& args) override { run(sql, args, nullptr); }
  std::vector<Row> query(const std::string& sql, const std::vector<Value>& args) override {
    std::vector<Row> rows;
    run(sql, args, &rows);
    return rows;
  }
  void script(const std::string& sql) override {
    char* err = nullptr;
    if (const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err); rc != SQLITE_OK) {
      const std::string why = err ? err : sqlite3_errstr(rc);
      sqlite3_free(err);
      fail(rc, why);
    }
  }
  void begin_write() override { exec("BEGIN IMMEDIATE", {}); }
  void commit() override { exec("COMMIT", {}); }
  void rollback() noexcept override { sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr); }
  bool has_table(const std::string& name) override {
    return !query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", {name}).empty();
  }
  bool holds_other_data() override {
    return !query("SELECT name FROM sqlite_master WHERE type = 'table' LIMIT 1", {}).empty();
  }
  std::string where() const override { return path_; }

 private:
  // A damaged or foreign file is the user's to look at (usage: choose another store); a lock held
  // past the wait, a full disk or a read-only file make the store unavailable for this run.
  [[noreturn]] void fail(int rc, const std::string& why) const {
    const int primary = rc & 0xff;
    if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT)
      throw UsageError(
          fmt::format("--store {}: {} (left as it is); choose another store with --store, or "
                      "--no-store",
                      path_, why));
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
      throw Unavailable(fmt::format("{} is locked by another writer past the wait", path_));
    throw Unavailable(fmt::format("{}: {}", path_, why));
  }

  void run(const std::string& sql, const std::vector<Value>& args, std::vector<Row>* rows) {
    sqlite3_stmt* st = nullptr;
    if (const int rc = sqlite3_prepare_v2(db_, sql.c_str(), int(sql.size()), &st, nullptr); rc != SQLITE_OK)
      fail(rc, sqlite3_errmsg(db_));
    struct Finalize {
      sqlite3_stmt* s;
      ~Finalize() { sqlite3_finalize(s); }
    } fin{st};
    for (size_t i = 0; i < args.size(); ++i) {
      const int rc =
          args[i] ? sqlite3_bind_text(st, int(i + 1), args[i]->data(), int(args[i]->size()), SQLITE_TRANSIENT)
                  : sqlite3_bind_null(st, int(i + 1));
      if (rc != SQLITE_OK) fail(rc, sqlite3_errmsg(db_));
    }
    for (;;) {
      const int rc = sqlite3_step(st);
      if (rc == SQLITE_DONE) return;
      if (rc != SQLITE_ROW) fail(rc, sqlite3_errmsg(db_));
      if (!rows) continue;
      Row row;
      for (int c = 0; c < sqlite3_column_count(st); ++c) {
        if (sqlite3_column_type(st, c) == SQLITE_NULL) {
          row.emplace_back(std::nullopt);
        } else {
          const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(st, c));
          row.emplace_back(std::string(text, size_t(sqlite3_column_bytes(st, c))));
        }
      }
      rows->push_back(std::move(row));
    }
  }

  std::string path_;
  sqlite3* db_ = nullptr;
};

}  // namespace

std::unique_ptr<Db> open_sqlite(const std::string& path, bool write, double wait_s) {
  return std::make_unique<Sqlite>(path, write, wait_s);
}

}  // namespace ipclab::store
