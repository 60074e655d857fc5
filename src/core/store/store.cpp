#include "core/store/store.hpp"

#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <map>

#include "core/base/error.hpp"
#include "core/base/fs.hpp"
#include "core/stats/change.hpp"
#include "core/stats/statistics.hpp"
#include "ipclab_store_schema.hpp"

namespace ipclab::store {

namespace {

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// A random (version 4) UUID: the id of a stored run, unique across the machines of a shared store.
std::string random_uuid() {
  unsigned char b[16];
  if (getrandom(b, sizeof b, 0) != ssize_t(sizeof b)) throw Unavailable("getrandom failed: no run id");
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  std::string s;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += fmt::format("{:02x}", b[i]);
  }
  return s;
}

std::string text(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

int64_t whole(const nlohmann::json& j, const nlohmann::json::json_pointer& p) {
  return j.contains(p) && j.at(p).is_number() ? j.at(p).get<int64_t>() : 0;
}

Value num(std::optional<double> v) {
  if (!v) return std::nullopt;
  return fmt::format("{:.17g}", *v);
}

std::optional<double> as_double(const Value& v) {
  if (!v) return std::nullopt;
  char* end = nullptr;
  const double d = std::strtod(v->c_str(), &end);
  if (end == v->c_str()) return std::nullopt;
  return d;
}

// The DMI product UUID, unless absent, unreadable (it is root's) or one of the placeholders
// firmware fills it with.
std::string dmi_uuid() {
  std::string u = read_first_line("/sys/class/dmi/id/product_uuid");
  std::transform(u.begin(), u.end(), u.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (u.size() < 32 || u.find_first_not_of("0-") == std::string::npos ||
      u.find_first_not_of("f-") == std::string::npos || u == "03000200-0400-0500-0006-000700080009")
    return "";
  return u;
}

int schema_version(Db& db) {
  const auto rows = db.query("SELECT value FROM ipclab_store WHERE key = 'schema_version'");
  if (rows.empty() || !rows[0][0]) return 0;
  return std::atoi(rows[0][0]->c_str());
}

// What a store file must be before a run writes to it; "" when it is (or is still to be made).
void check_schema(Db& db) {
  if (db.has_table("ipclab_store")) {
    const int v = schema_version(db);
    if (v > kSchemaVersion)
      throw UsageError(fmt::format(
          "--store {}: a store of schema version {}, newer than this ipclab's ({}); use a newer ipclab, "
          "another --store, or --no-store",
          db.where(), v, kSchemaVersion));
    if (v < 1)
      throw UsageError(
          fmt::format("--store {}: its schema version is unreadable; choose another store "
                      "with --store, or --no-store",
                      db.where()));
    return;
  }
  if (db.holds_other_data())
    throw UsageError(fmt::format(
        "--store {}: an SQLite database, but not an ipclab store; choose another file with --store, or "
        "--no-store",
        db.where()));
}

// The iteration records' figures of one run of a benchmark; when it kept none (a reduced file),
// its median's spread of repetitions, else its median alone.
struct RunValues {
  std::string run_id, date, git_sha, kernel, version;
  std::vector<double> values;
  std::optional<double> aggregate;
  std::vector<double> spread = {};
  double median() const { return values.empty() ? aggregate.value_or(0) : median_of(values); }
  std::vector<double> sample() const {
    if (!values.empty()) return values;
    if (!spread.empty()) return spread;
    return aggregate ? std::vector<double>{*aggregate} : std::vector<double>{};
  }
};

}  // namespace

std::optional<std::string> default_target(const std::optional<std::string>& store, bool no_store,
                                          const std::optional<std::string>& out_dir) {
  if (store) return store;
  if (no_store) return std::nullopt;
  if (const char* off = std::getenv("IPCLAB_NO_STORE"); off && *off) return std::nullopt;
  if (!out_dir) return std::nullopt;
  std::string d = *out_dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return folder_of(d) + "/ipclab.sqlite";
}

Figure figure_of(const nlohmann::json& r) {
  Figure f{"time/op", std::nullopt, false};
  const nlohmann::json params = r.value("params", nlohmann::json::object());
  const bool rate = params.value("pattern", "") == "rate";
  const bool ok = r.value("status", "") == "ok";
  if (rate && params.contains("rate") && params["rate"] == "auto") {
    f = {"capacity", std::nullopt, true};
    const auto p = "/extra/capacity/capacity_per_s"_json_pointer;
    if (ok && r.contains(p) && r.at(p).is_number()) f.value = r.at(p).get<double>();
  } else if (rate) {
    f.metric = "p99";
    const auto sat = "/extra/rate/saturated"_json_pointer;
    const auto p99 = "/latency_ns/p99"_json_pointer;
    if (ok && !(r.contains(sat) && r.at(sat) == true) && r.contains(p99) && r.at(p99).is_number())
      f.value = r.at(p99).get<double>();
  } else if (ok && r.contains("time_per_op_ns") && r["time_per_op_ns"].is_number()) {
    f.value = r["time_per_op_ns"].get<double>();
  }
  return f;
}

Machine machine_of(Db& db, const nlohmann::json& context, bool create) {
  Machine m;
  m.cpu_model = context.contains("/cpu/model"_json_pointer) ? text(context["cpu"], "model") : "";
  m.logical_cpus = whole(context, "/cpu/logical_cpus"_json_pointer);
  m.packages = whole(context, "/cpu/topology/packages"_json_pointer);
  m.numa_nodes = whole(context, "/cpu/topology/nodes"_json_pointer);
  m.hostname = text(context, "hostname");
  const std::string shape = fmt::format("{}|{}|{}|{}", m.cpu_model, m.logical_cpus, m.packages, m.numa_nodes);
  std::string own = dmi_uuid();
  m.source = "dmi";
  if (own.empty()) {
    // No id of its own that this user may read: one generated for this host and shape, kept in
    // the store, so that its next runs find it.
    m.source = "generated";
    const std::string key = "generated_machine:" + m.hostname + ":" + shape;
    if (auto rows = db.query("SELECT value FROM ipclab_store WHERE key = ?", {key});
        !rows.empty() && rows[0][0]) {
      own = *rows[0][0];
    } else if (create) {
      own = random_uuid();
      db.exec("INSERT INTO ipclab_store (key, value) VALUES (?, ?)", {key, own});
    } else {
      return m;  // id empty: no run of this machine is stored yet
    }
  }
  m.id = fmt::format("{:016x}", seed_of(own + "|" + shape));
  return m;
}

Store::Store(std::string spec, double wait_s) : spec_(std::move(spec)), wait_s_(wait_s) {}
Store::~Store() = default;

std::unique_ptr<Store> Store::open(const std::string& spec, bool implicit, double wait_s, std::string* note) {
  if (is_postgres(spec)) {
    // A shared server: checked now (its schema), skipped with a line when it cannot be reached.
    std::unique_ptr<Store> s(new Store(spec, wait_s));
    s->url_ = spec;
    try {
      auto db = s->connect(false);
      check_schema(*db);
      s->spec_ = db->where();  // messages name it without its password
    } catch (const Unavailable& e) {
      if (note) *note = fmt::format("store not used: {}", e.what());
      return nullptr;
    }
    return s;
  }
  if (spec.empty()) throw UsageError("--store: give a file path (e.g. results/ipclab.sqlite), or --no-store");
  struct stat st {};
  if (lstat(spec.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode))
      throw UsageError(
          fmt::format("--store {}: a symbolic link, which ipclab does not follow; give the file "
                      "it names, or --no-store",
                      spec));
    if (!S_ISREG(st.st_mode))
      throw UsageError(fmt::format("--store {}: not a regular file; give a file path, or --no-store", spec));
    if (implicit && st.st_uid != geteuid()) {
      if (note) *note = fmt::format("store {} belongs to another user: not used; give --store PATH", spec);
      return nullptr;
    }
    std::unique_ptr<Store> s(new Store(spec, wait_s));
    try {
      auto db = s->connect(false);
      check_schema(*db);
    } catch (const Unavailable& e) {
      if (note) *note = fmt::format("store not used: {}", e.what());
      return nullptr;
    }
    return s;
  } else if (errno != ENOENT) {
    throw UsageError(
        fmt::format("--store {}: {}; give a file path you can write, or --no-store", spec, strerror(errno)));
  }
  const std::string dir = folder_of(spec);
  if (struct stat ds{}; !implicit && (stat(dir.c_str(), &ds) != 0 || !S_ISDIR(ds.st_mode)))
    throw UsageError(fmt::format("--store {}: no folder {}; create it, or give another path", spec, dir));
  return std::unique_ptr<Store>(new Store(spec, wait_s));
}

std::unique_ptr<Db> Store::connect(bool write) {
  if (!url_.empty()) return open_postgres(url_, wait_s_);
  return open_sqlite(spec_, write, wait_s_);
}

namespace {

// A benchmark of this run: its summary (its median, or its one repetition) and its repetitions'
// figures; found in the store, its series, oldest first, and how far its median moved since the last.
struct NowPoint {
  Record* summary = nullptr;
  std::vector<double> values;
  std::string metric;
  bool higher_better = false;
  std::vector<RunValues> runs;
  double log_ratio = 0;
};

std::map<std::string, NowPoint> points_of(std::vector<Record>& records) {
  std::map<std::string, NowPoint> points;
  for (auto& r : records) {
    NowPoint& p = points[r.name];
    if (r.run_type == "aggregate" || !p.summary) p.summary = &r;
    if (r.run_type != "iteration") continue;
    const Figure f = figure_of(to_json(r));
    p.metric = f.metric, p.higher_better = f.higher_better;
    if (f.value) p.values.push_back(*f.value);
  }
  return points;
}

// Every earlier run of benchmark `name` in its series (this machine, build type and flags),
// oldest first. A reduced file keeps no repetitions, but its median's spread holds their times
// per op: the last run's are read from it.
std::vector<RunValues> earlier_runs(Db& db, const std::string& name, const std::string& metric,
                                    const Machine& m, const std::string& type, const std::string& flags) {
  const auto rows = db.query(
      "SELECT r.id, r.date, r.git_sha, r.kernel, r.version, x.run_type, x.value FROM results x "
      "JOIN runs r ON r.id = x.run_id WHERE x.name = ? AND x.metric = ? AND x.status = 'ok' AND x.value "
      "IS NOT NULL AND r.machine_id = ? AND r.build_type = ? AND r.build_flags = ? AND r.kind IN ('run', "
      "'import') ORDER BY r.date, r.stored, x.seq",
      {name, metric, m.id, type, flags});
  std::vector<RunValues> runs;
  for (auto& row : rows) {
    if (runs.empty() || runs.back().run_id != *row[0])
      runs.push_back({*row[0],
                      row[1].value_or(""),
                      row[2].value_or(""),
                      row[3].value_or(""),
                      row[4].value_or(""),
                      {},
                      std::nullopt});
    const auto v = as_double(row[6]);
    if (!v) continue;
    if (row[5] == Value("aggregate"))
      runs.back().aggregate = v;
    else
      runs.back().values.push_back(*v);
  }
  if (runs.empty()) return runs;
  RunValues& base = runs.back();
  if (base.values.empty() && metric == "time/op") {
    const auto recs = db.query(
        "SELECT record FROM results WHERE run_id = ? AND name = ? AND run_type = 'aggregate' LIMIT 1",
        {base.run_id, name});
    if (!recs.empty() && recs[0][0]) {
      const auto rec = nlohmann::json::parse(*recs[0][0], nullptr, false);
      const auto p = "/spread/values"_json_pointer;
      if (rec.contains(p) && rec.at(p).is_array())
        for (auto& x : rec.at(p))
          if (x.is_number() && x.get<double>() > 0) base.spread.push_back(x.get<double>());
    }
  }
  return runs;
}

std::string placement_class(const Record& r) {
  const std::string p = r.params.str_or("placement", "");
  return p.empty() ? std::string("unpinned") : p;
}

// How far the machine moved between the runs, for benchmark `name` in its placement class: its
// anchors' moves and its other mechanisms' (compare.py's noise model), so that a host that moved
// the vCPUs is not taken for a change of every cross-CPU benchmark.
MachineMove machine_move_around(const std::map<std::string, NowPoint>& points, const std::string& name) {
  const Record* rec = points.at(name).summary;
  const std::string cls = placement_class(*rec), mech = rec->suite + "/" + rec->mechanism;
  std::vector<std::pair<std::string, double>> anchors;
  std::vector<double> others;
  for (auto& [other_name, q] : points) {
    if (q.runs.empty() || other_name == name || placement_class(*q.summary) != cls) continue;
    if (q.summary->suite == "anchors")
      anchors.emplace_back(q.summary->suite + "/" + q.summary->mechanism, q.log_ratio);
    if (q.summary->suite + "/" + q.summary->mechanism != mech) others.push_back(q.log_ratio);
  }
  return machine_move(anchors, others, cls);
}

// A summary record's extra.since: the verdict on its move since the last comparable run.
nlohmann::json since_block(const Change& c, const NowPoint& point) {
  const RunValues& base = point.runs.back();
  return {{"verdict", c.verdict},
          {"why", c.why},
          {"metric", point.metric},
          {"higher_better", point.higher_better},
          {"ratio", c.ratio},
          {"ci", c.ci},
          {"p", c.p},
          {"band", c.band},
          {"band_source", c.band_source},
          {"median", median_of(point.values)},
          {"n", point.values.size()},
          {"base",
           {{"run_id", base.run_id},
            {"date", base.date},
            {"git_sha", base.git_sha},
            {"kernel", base.kernel},
            {"version", base.version},
            {"median", base.median()},
            {"n", base.sample().size()}}},
          {"history_runs", point.runs.size()}};
}

}  // namespace

std::string Store::compare(std::vector<Record>& records, const nlohmann::json& context) {
  struct stat st {};
  if (url_.empty() && lstat(spec_.c_str(), &st) != 0)
    return "";  // a file still to be made holds no earlier run
  try {
    auto db = connect(false);
    if (!db->has_table("runs")) return "";
    const Machine m = machine_of(*db, context, false);
    if (m.id.empty()) return "";
    const std::string flags = text(context, "build_flags"), type = text(context, "build_type");
    std::map<std::string, NowPoint> points = points_of(records);
    for (auto& [name, point] : points) {
      if (point.values.empty()) continue;
      std::vector<RunValues> runs = earlier_runs(*db, name, point.metric, m, type, flags);
      if (runs.empty()) continue;
      const double now = median_of(point.values), base = runs.back().median();
      if (base > 0 && now > 0) point.log_ratio = std::log(now / base);
      point.runs = std::move(runs);
    }
    for (auto& [name, point] : points) {
      if (point.runs.empty()) continue;
      const MachineMove moved = machine_move_around(points, name);
      std::vector<double> history;
      for (auto& r : point.runs) history.push_back(r.median());
      const Change c = judge_change(point.runs.back().sample(), point.values, point.higher_better, history,
                                    seed_of(name), moved);
      point.summary->extra["since"] = since_block(c, point);
    }
  } catch (const Unavailable& e) {
    return fmt::format("store: no comparison with earlier runs: {}", e.what());
  } catch (const UsageError& e) {
    return fmt::format("store: no comparison with earlier runs: {}", e.what());
  }
  return "";
}

bool Store::holds(const nlohmann::json& context) {
  if (url_.empty()) {
    struct stat st {};
    if (lstat(spec_.c_str(), &st) != 0) return false;
  }
  auto db = connect(false);
  if (!db->has_table("runs")) return false;
  return !db->query(
                "SELECT 1 FROM runs WHERE date = ? AND hostname = ? AND command_line = ? AND git_sha = ? "
                "LIMIT 1",
                {text(context, "date"), text(context, "hostname"), text(context, "command_line"),
                 text(context, "git_sha")})
              .empty();
}

std::string Store::append(const std::string& kind, const nlohmann::json& context,
                          const std::vector<nlohmann::json>& records, const std::string& source) {
  std::unique_ptr<Db> db;
  try {
    db = connect(true);
    db->begin_write();
    if (!db->has_table("ipclab_store")) {
      check_schema(*db);  // a database that gained other tables since the check is not made a store
      db->script(kSchemaSql);
      db->exec("INSERT INTO ipclab_store (key, value) VALUES ('schema_version', ?), ('created', ?)",
               {std::to_string(kSchemaVersion), utc_now()});
    } else {
      check_schema(*db);
    }
    const Machine m = machine_of(*db, context, true);
    db->exec(
        "INSERT INTO machines (id, source, cpu_model, logical_cpus, packages, numa_nodes, hostname, "
        "first_seen) "
        "SELECT ?, ?, ?, ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM machines WHERE id = ?)",
        {m.id, m.source, m.cpu_model, std::to_string(m.logical_cpus), std::to_string(m.packages),
         std::to_string(m.numa_nodes), m.hostname, utc_now(), m.id});
    const std::string id = random_uuid();
    const auto load = "/load_avg/0"_json_pointer;
    db->exec(
        "INSERT INTO runs (id, kind, date, stored, machine_id, version, git_sha, build_type, build_flags, "
        "compiler, kernel, hostname, command_line, load_avg, source, context) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        {id, kind, text(context, "date").empty() ? utc_now() : text(context, "date"), utc_now(), m.id,
         text(context, "ipclab_version"), text(context, "git_sha"), text(context, "build_type"),
         text(context, "build_flags"), text(context, "compiler"), text(context, "kernel"),
         text(context, "hostname"), text(context, "command_line"),
         num(context.contains(load) && context.at(load).is_number()
                 ? std::optional(context.at(load).get<double>())
                 : std::nullopt),
         source, context.dump()});
    int64_t seq = 0;
    for (auto& r : records) {
      const Figure f = figure_of(r);
      db->exec(
          "INSERT INTO results (run_id, seq, name, suite, mechanism, run_type, repetition, status, metric, "
          "value, higher_better, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
          {id, std::to_string(seq++), text(r, "name"), text(r, "suite"), text(r, "mechanism"),
           r.value("run_type", "iteration"), std::to_string(r.value("repetition", 0)), text(r, "status"),
           f.metric, num(f.value), f.higher_better ? "1" : "0", r.dump()});
    }
    db->commit();
  } catch (const std::exception& e) {
    if (db) db->rollback();
    return fmt::format("store: this run is not in {}: {}", spec_, e.what());
  }
  return "";
}

}  // namespace ipclab::store
