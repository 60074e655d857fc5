// The results store in PostgreSQL (libpq, Debian's), for many machines writing to one database:
// the same schema as the SQLite file. Writers take one transaction-scoped advisory lock, so that
// two first writers do not both create the schema and a machine's generated id is made once; the
// rows of runs themselves need no lock (each run has its own id).
#include <libpq-fe.h>

#include <fmt/format.h>

#include <cmath>
#include <regex>

#include "core/store/db.hpp"

namespace ipclab::store {

namespace {

// The advisory lock every writer of an ipclab store takes (an arbitrary constant: "ipclab" in ASCII).
constexpr const char* kWriterLock = "SELECT pg_advisory_xact_lock(105112099108097098)";

std::string without_password(const std::string& url) {
  // postgresql://user:secret@host/db → postgresql://user:***@host/db; password=… in the query too.
  std::string s = std::regex_replace(url, std::regex(R"((://[^:/@?]*):[^@/?]*@)"), "$1:***@");
  return std::regex_replace(s, std::regex(R"(([?&]password=)[^&]*)"), "$1***");
}

class Postgres final : public Db {
 public:
  Postgres(const std::string& url, double wait_s) : where_(without_password(url)), wait_s_(wait_s) {
    const std::string timeout = std::to_string(std::max(2, int(std::ceil(wait_s))));
    const char* keys[] = {"dbname", "connect_timeout", "application_name", nullptr};
    const char* values[] = {url.c_str(), timeout.c_str(), "ipclab", nullptr};
    conn_ = PQconnectdbParams(keys, values, 1);
    if (!conn_ || PQstatus(conn_) != CONNECTION_OK) {
      const std::string why = conn_ ? first_line(PQerrorMessage(conn_)) : "out of memory";
      PQfinish(conn_);
      conn_ = nullptr;
      throw Unavailable(fmt::format("cannot reach {}: {}", where_, why));
    }
    exec(fmt::format("SET lock_timeout = {}", int64_t(wait_s * 1000)), {});
  }
  ~Postgres() override { PQfinish(conn_); }

  void exec(const std::string& sql, const std::vector<Value>& args) override { run(sql, args); }
  std::vector<Row> query(const std::string& sql, const std::vector<Value>& args) override {
    PGresult* res = run(sql, args, true);
    std::vector<Row> rows;
    for (int r = 0; r < PQntuples(res); ++r) {
      Row row;
      for (int c = 0; c < PQnfields(res); ++c)
        row.emplace_back(PQgetisnull(res, r, c) ? Value() : Value(std::string(PQgetvalue(res, r, c))));
      rows.push_back(std::move(row));
    }
    PQclear(res);
    return rows;
  }
  void script(const std::string& sql) override {
    PGresult* res = PQexec(conn_, sql.c_str());
    check(res);
    PQclear(res);
  }
  void begin_write() override {
    exec("BEGIN", {});
    exec(kWriterLock, {});
  }
  void commit() override { exec("COMMIT", {}); }
  void rollback() noexcept override { PQclear(PQexec(conn_, "ROLLBACK")); }
  bool has_table(const std::string& name) override {
    return !query(
                "SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND "
                "table_name = ?",
                {name})
                .empty();
  }
  // A database named for the store may hold other tables: only the store's own are checked.
  bool holds_other_data() override { return false; }
  std::string where() const override { return where_; }

 private:
  static std::string first_line(const char* msg) {
    std::string s = msg ? msg : "";
    if (const auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
    return s;
  }
  // `?` placeholders (the store's statements hold no '?' in a literal) become libpq's $1, $2, ….
  static std::string numbered(const std::string& sql) {
    std::string out;
    int n = 0;
    for (char c : sql) out += c == '?' ? "$" + std::to_string(++n) : std::string(1, c);
    return out;
  }
  void check(PGresult* res) {
    const auto st = PQresultStatus(res);
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return;
    const char* state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
    const std::string why = first_line(PQresultErrorMessage(res));
    const std::string code = state ? state : "";
    PQclear(res);
    if (code == "55P03")
      throw Unavailable(fmt::format("{} is locked by another writer past the wait", where_));
    throw Unavailable(fmt::format("{}: {}", where_, why.empty() ? first_line(PQerrorMessage(conn_)) : why));
  }
  PGresult* run(const std::string& sql, const std::vector<Value>& args, bool keep = false) {
    std::vector<const char*> params;
    for (auto& a : args) params.push_back(a ? a->c_str() : nullptr);
    PGresult* res = PQexecParams(conn_, numbered(sql).c_str(), int(params.size()), nullptr, params.data(),
                                 nullptr, nullptr, 0);
    check(res);
    if (keep) return res;
    PQclear(res);
    return nullptr;
  }

  std::string where_;
  double wait_s_;
  PGconn* conn_ = nullptr;
};

}  // namespace

bool is_postgres(const std::string& spec) {
  return spec.rfind("postgresql://", 0) == 0 || spec.rfind("postgres://", 0) == 0;
}

std::unique_ptr<Db> open_postgres(const std::string& url, double wait_s) {
  return std::make_unique<Postgres>(url, wait_s);
}

}  // namespace ipclab::store
