#include "core/stats/record.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ipclab {

static_assert(kStealFlagShare == 0.05, "flag_table()'s steal meaning says 5%");

const char* status_name(Status s) {
  switch (s) {
    case Status::Ok:
      return "ok";
    case Status::Failed:
      return "failed";
    case Status::Skipped:
      return "skipped";
  }
  return "?";
}

namespace {

bool ci_target_missed(const Record& r) {
  return r.repetitions_auto.is_object() && !r.repetitions_auto.value("met", true);
}

// The kernel counters asked for and refused: "syscalls, faults"; empty when none.
std::string unavailable_counters(const Record& r) {
  std::string which;
  if (r.kernel.is_object() && r.kernel.contains("unavailable") && r.kernel["unavailable"].is_object())
    for (auto& [k, v] : r.kernel["unavailable"].items()) which += (which.empty() ? "" : ", ") + k;
  return which;
}

// The ids in the record's flags: an aggregate's hold its repetitions'; an iteration's are its
// series' and its own.
std::vector<std::string> flag_ids(const Record& r) {
  std::vector<std::string> ids;
  auto add = [&](const nlohmann::json& fs) {
    if (fs.is_array())
      for (auto& f : fs)
        if (f.is_string()) ids.push_back(f.get<std::string>());
  };
  if (r.run_type != "aggregate" && r.series.is_object()) add(r.series.value("flags", nlohmann::json()));
  add(r.flags);
  return ids;
}

}  // namespace

std::set<Flag> record_flags(const Record& r) {
  std::set<Flag> out;
  if (r.status != Status::Ok) return out;
  for (auto& id : flag_ids(r))
    if (const FlagInfo* f = find_flag(id)) out.insert(f->flag);
  if (ci_target_missed(r)) out.insert(Flag::CiTargetMissed);
  if (!unavailable_counters(r).empty()) out.insert(Flag::CountersUnavailable);
  return out;
}

std::string status_text(const Record& r) {
  std::string out = status_name(r.status);
  if (!r.error.empty()) return out + ": " + r.error;
  if (r.status != Status::Ok) return out;
  std::vector<std::string> notes;
  const double tpo = r.time_per_op_ns();
  if (r.ci.is_object() && r.ci.contains("time_per_op_ns") && r.ci["time_per_op_ns"].is_array() && tpo > 0) {
    const auto& ci = r.ci["time_per_op_ns"];
    out += fmt::format(" ±{:.1f}%", 50.0 * (ci[1].get<double>() - ci[0].get<double>()) / tpo);
  }
  if (ci_target_missed(r))
    notes.push_back(fmt::format("CI target ±{}% missed", r.repetitions_auto.value("target_pct", 0.0)));
  for (const std::string& id : flag_ids(r)) {  // the table's word; an id no flag has, in words
    const FlagInfo* f = find_flag(id);
    std::string word = f ? f->word : id;
    if (f && f->flag == Flag::Steal && r.run_type != "aggregate" && r.steal)
      word = fmt::format("{} {:.0f}%", word, 100 * r.steal->share());
    std::replace(word.begin(), word.end(), '_', ' ');
    notes.push_back(word);
  }
  if (const std::string which = unavailable_counters(r); !which.empty())
    notes.push_back(fmt::format("{}: {}", flag_info(Flag::CountersUnavailable).word, which));
  // What a mechanism noted for the tables (extra.notes), e.g. where the shared memory lies.
  if (r.extra.is_object() && r.extra.contains("notes") && r.extra["notes"].is_array())
    for (auto& n : r.extra["notes"])
      if (n.is_string()) notes.push_back(n.get<std::string>());
  for (auto& n : notes) out += ", " + n;
  return out;
}

std::string Integrity::text() const {
  return fmt::format("{} lost, {} duplicated, {} reordered, {} corrupt of {} sent", lost, duplicated,
                     reordered, corrupt, sent);
}

Latency Latency::from(const std::string& kind, const Histogram& h) {
  Latency l;
  l.kind = kind;
  l.count = h.count();
  l.min = h.min();
  l.max = h.max();
  l.mean = h.mean();
  l.p50 = h.quantile(0.50);
  l.p90 = h.quantile(0.90);
  l.p95 = h.quantile(0.95);
  l.p99 = h.quantile(0.99);
  l.p999 = h.quantile(0.999);
  h.sparse(l.values, l.counts);
  return l;
}

nlohmann::json to_json(const Latency& l) {
  return {{"kind", l.kind},
          {"count", l.count},
          {"mean", l.mean},
          {"min", l.min},
          {"p50", l.p50},
          {"p90", l.p90},
          {"p95", l.p95},
          {"p99", l.p99},
          {"p999", l.p999},
          {"max", l.max},
          {"histogram", {{"sub_buckets", Histogram::kSub}, {"values", l.values}, {"counts", l.counts}}}};
}

void add_steal(Record& r, const Steal& window) {
  if (r.steal)
    *r.steal += window;
  else
    r.steal = window;
}

namespace {
// Adds `flag` to the record's flags; false when it holds it already (its warning was given).
bool add_flag(Record& r, const FlagInfo& flag) {
  if (!r.flags.is_array()) r.flags = nlohmann::json::array();
  for (auto& f : r.flags)
    if (f == flag.id) return false;
  r.flags.push_back(flag.id);
  return true;
}
}  // namespace

void flag_steal(Record& r) {
  if (r.run_type == "aggregate" || !r.steal || !(r.steal->least_share() > kStealFlagShare)) return;
  const FlagInfo& flag = flag_info(Flag::Steal);
  if (!add_flag(r, flag)) return;
  std::string cpus;
  for (int c : r.steal->cpus) cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
  r.warnings.push_back(
      {{"message",
        fmt::format("the hypervisor ran other work on the vCPUs of this run (CPU {}) for {:.1f}% of "
                    "its measured window (steal time; ipclab flags more than {:.0f}%): its "
                    "time per op holds waits that are not the benchmark's",
                    cpus, 100 * r.steal->share(), 100 * kStealFlagShare)},
       {"remedy", flag.remedy}});
}

void flag_short_window(Record& r, double floor_s) {
  if (r.run_type == "aggregate" || r.status != Status::Ok || !(floor_s > 0) || !(r.wall_s < floor_s)) return;
  if (!add_flag(r, flag_info(Flag::ShortWindow))) return;
  r.warnings.push_back(
      {{"message",
        fmt::format("its measured window lasted {:.3g} ms, under the {:.3g} ms this machine's timer and "
                    "scheduler allow (context.window_floor): one preemption or clock step moves its "
                    "figure, so it is not ranked",
                    r.wall_s * 1e3, floor_s * 1e3)},
       {"remedy",
        fmt::format("rerun with --duration {:.2g} or more (count-based benchmarks repeat their n until "
                    "the window holds --duration)",
                    2 * floor_s)}});
}

void Record::fail(const std::string& why) {
  if (status == Status::Failed) return;
  status = Status::Failed;
  error = why;
}

static nlohmann::json num_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

nlohmann::json to_json(const Record& r) {
  using nlohmann::json;
  json j;
  j["name"] = r.name;
  j["suite"] = r.suite;
  j["mechanism"] = r.mechanism;
  j["params"] = r.params.to_json();
  j["run_type"] = r.run_type;
  if (!r.aggregate_name.empty()) j["aggregate_name"] = r.aggregate_name;
  j["repetition"] = r.repetition;
  j["status"] = status_name(r.status);
  j["error"] = r.error.empty() ? json(nullptr) : json(r.error);
  j["ops"] = r.ops;
  j["bytes"] = r.bytes;
  j["wall_s"] = num_or_null(r.wall_s);
  j["time_per_op_ns"] = num_or_null(r.time_per_op_ns());
  json rates = r.rates;
  if (r.wall_s > 0) {
    rates["ops_per_s"] = double(r.ops) / r.wall_s;
    if (r.bytes) {
      rates["bytes_per_s"] = double(r.bytes) / r.wall_s;
      rates["MiB_per_s"] = double(r.bytes) / r.wall_s / (1024.0 * 1024.0);
    }
  }
  j["rates"] = rates;
  j["latency_ns"] = r.latency ? to_json(*r.latency) : nlohmann::json(nullptr);
  j["cpu"] = {{"user_s", r.cpu.user_s},         {"sys_s", r.cpu.sys_s},
              {"per_op_ns", r.cpu_per_op_ns()}, {"ctx_vol", r.cpu.ctx_vol},
              {"ctx_invol", r.cpu.ctx_invol},   {"ctx_per_op", r.ctx_per_op()},
              {"faults", r.cpu.faults},         {"faults_per_op", r.faults_per_op()}};
  // Steal over the windows (null where not measured): seconds, per op, and the share of the CPUs'
  // time in the windows (wall x CPUs read).
  j["cpu"]["steal_s"] = r.steal ? json(r.steal->steal_s) : json(nullptr);
  j["cpu"]["steal_per_op_ns"] = r.steal ? json(r.steal_per_op_ns()) : json(nullptr);
  j["cpu"]["steal_share"] = r.steal ? json(r.steal->share()) : json(nullptr);
  j["cpu"]["steal_cpus"] = r.steal ? json(r.steal->cpus) : json(nullptr);
  // Where the rest of the windows' time went on those CPUs, and how long the workers waited for
  // them (docs/methodology.md, "Where the time went").
  j["cpu"]["irq_s"] = r.steal ? json(r.steal->irq_s) : json(nullptr);
  j["cpu"]["softirq_s"] = r.steal ? json(r.steal->softirq_s) : json(nullptr);
  j["cpu"]["run_queue_wait_s"] = r.run_queue_wait_s ? json(*r.run_queue_wait_s) : json(nullptr);
  j["cpu"]["run_queue_wait_per_op_ns"] =
      r.run_queue_wait_s && r.ops ? json(*r.run_queue_wait_s * 1e9 / double(r.ops)) : json(nullptr);
  json sides = json::array();
  for (auto& s : r.placement.sides)
    sides.push_back({{"role", s.role}, {"index", s.index}, {"pinned", s.pinned}, {"observed", s.observed}});
  j["placement"] = {{"layout", r.placement.layout}, {"cpus", r.placement.cpus}, {"sides", sides}};
  if (!r.placement.pair.empty()) {
    j["placement"]["pair"] = r.placement.pair;
    j["placement"]["c2c_ns"] =
        r.placement.c2c_ns > 0 ? json(std::round(r.placement.c2c_ns * 10) / 10) : json(nullptr);
    j["placement"]["basis"] = r.placement.basis;
  }
  j["integrity"] = {{"sent", r.integrity.sent},           {"received", r.integrity.received},
                    {"lost", r.integrity.lost},           {"duplicated", r.integrity.duplicated},
                    {"reordered", r.integrity.reordered}, {"corrupt", r.integrity.corrupt}};
  j["extra"] = r.extra;
  if (!r.kernel.empty()) j["kernel"] = r.kernel;
  if (!r.spread.is_null()) j["spread"] = r.spread;
  if (!r.series.is_null()) j["series"] = r.series;
  if (r.run_type == "aggregate") {
    j["ci"] = r.ci;
    j["flags"] = r.flags.is_null() ? json::array() : r.flags;
    if (!r.repetitions_auto.is_null()) j["repetitions_auto"] = r.repetitions_auto;
  } else if (r.flags.is_array() && !r.flags.empty()) {
    j["flags"] = r.flags;
  }
  if (r.warnings.is_array() && !r.warnings.empty()) j["warnings"] = r.warnings;
  return j;
}

namespace {

// A record's latency_ns: from its histogram, where it has one, and the writer's exact figures.
Latency latency_from_json(const nlohmann::json& l) {
  Histogram h;
  if (l.contains("histogram"))
    h.add_sparse(l["histogram"].value("values", std::vector<uint64_t>{}),
                 l["histogram"].value("counts", std::vector<uint64_t>{}));
  Latency lat = h.count() ? Latency::from(l.value("kind", "op"), h) : Latency{};
  lat.kind = l.value("kind", "op");
  // Exact figures from the writer win over the histogram's bucket estimates.
  for (auto [key, field] : {std::pair{"count", &lat.count},
                            {"min", &lat.min},
                            {"max", &lat.max},
                            {"p50", &lat.p50},
                            {"p90", &lat.p90},
                            {"p95", &lat.p95},
                            {"p99", &lat.p99},
                            {"p999", &lat.p999}})
    if (l.contains(key) && l[key].is_number()) *field = l[key].get<uint64_t>();
  if (l.contains("mean") && l["mean"].is_number()) lat.mean = l["mean"].get<double>();
  // A quantile the histogram estimates (a bucket's midpoint) stays within the writer's exact min
  // and max, as Histogram::quantile keeps it within its own.
  if (lat.count && lat.min <= lat.max)
    for (uint64_t* q : {&lat.p50, &lat.p90, &lat.p95, &lat.p99, &lat.p999})
      *q = std::clamp(*q, lat.min, lat.max);
  return lat;
}

// A record's cpu block into `r` (whose wall_s is read).
void cpu_from_json(Record& r, const nlohmann::json& c) {
  r.cpu.user_s = c.value("user_s", 0.0);
  r.cpu.sys_s = c.value("sys_s", 0.0);
  r.cpu.ctx_vol = c.value("ctx_vol", int64_t(0));
  r.cpu.ctx_invol = c.value("ctx_invol", int64_t(0));
  r.cpu.faults = c.value("faults", int64_t(0));
  // One window (a remote side's record): its capacity is its wall time x the CPUs read.
  if (c.contains("steal_s") && c["steal_s"].is_number()) {
    Steal s;
    s.steal_s = c["steal_s"].get<double>();
    if (c.contains("steal_cpus") && c["steal_cpus"].is_array())
      for (auto& v : c["steal_cpus"])
        if (v.is_number_integer()) s.cpus.push_back(v.get<int>());
    s.capacity_s = std::max(0.0, r.wall_s) * double(s.cpus.size());
    s.resolution_s = double(s.cpus.size()) * tick_s();
    s.irq_s = c.value("irq_s", 0.0);
    s.softirq_s = c.value("softirq_s", 0.0);
    r.steal = s;
  }
  if (c.contains("run_queue_wait_s") && c["run_queue_wait_s"].is_number())
    r.run_queue_wait_s = c["run_queue_wait_s"].get<double>();
}

Integrity integrity_from_json(const nlohmann::json& in) {
  Integrity i;
  i.sent = in.value("sent", uint64_t(0));
  i.received = in.value("received", uint64_t(0));
  i.lost = in.value("lost", uint64_t(0));
  i.duplicated = in.value("duplicated", uint64_t(0));
  i.reordered = in.value("reordered", uint64_t(0));  // absent from older files and peers
  i.corrupt = in.value("corrupt", uint64_t(0));
  return i;
}

// A record's placement block into `pl` (whose layout stays where the block has none).
void placement_from_json(Placement& pl, const nlohmann::json& p) {
  pl.layout = p.value("layout", pl.layout);
  pl.cpus = p.value("cpus", std::vector<int>{});
  for (auto& s : p.value("sides", nlohmann::json::array()))
    pl.sides.push_back({.role = s.value("role", ""),
                        .index = s.value("index", 0),
                        .pinned = s.value("pinned", std::vector<int>{}),
                        .observed = s.value("observed", std::vector<int>{})});
  pl.pair = p.value("pair", std::vector<int>{});
  if (p.contains("c2c_ns") && p["c2c_ns"].is_number()) pl.c2c_ns = p["c2c_ns"].get<double>();
  pl.basis = p.value("basis", "");
}

}  // namespace

Record record_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::runtime_error("record is not a JSON object");
  for (const char* k : {"name", "ops", "wall_s", "integrity"})
    if (!j.contains(k)) throw std::runtime_error(std::string("record lacks '") + k + "'");
  Record r;
  r.name = j.at("name").get<std::string>();
  auto first = r.name.find('/');
  r.suite = j.value("suite", r.name.substr(0, first));
  r.mechanism = j.value("mechanism", first == std::string::npos
                                         ? std::string()
                                         : r.name.substr(first + 1, r.name.find('/', first + 1) - first - 1));
  if (j.contains("params") && j["params"].is_object())
    for (auto& [k, v] : j["params"].items()) r.params.set(k, v.is_string() ? v.get<std::string>() : v.dump());
  r.run_type = j.value("run_type", "iteration");
  r.repetition = j.value("repetition", 0);
  std::string st = j.value("status", "ok");
  r.status = st == "failed" ? Status::Failed : st == "skipped" ? Status::Skipped : Status::Ok;
  if (j.contains("error") && j["error"].is_string()) r.error = j["error"].get<std::string>();
  r.ops = j.at("ops").get<uint64_t>();
  r.bytes = j.value("bytes", uint64_t(0));
  r.wall_s = j.at("wall_s").get<double>();
  if (j.contains("rates") && j["rates"].is_object()) r.rates = j["rates"];
  if (j.contains("latency_ns") && j["latency_ns"].is_object()) r.latency = latency_from_json(j["latency_ns"]);
  if (j.contains("cpu") && j["cpu"].is_object()) cpu_from_json(r, j["cpu"]);
  r.integrity = integrity_from_json(j.at("integrity"));
  if (j.contains("extra") && j["extra"].is_object()) r.extra = j["extra"];
  for (auto [key, field] : {std::pair{"series", &r.series},
                            {"ci", &r.ci},
                            {"flags", &r.flags},
                            {"repetitions_auto", &r.repetitions_auto}})
    if (j.contains(key)) *field = j[key];
  if (j.contains("kernel") && j["kernel"].is_object()) r.kernel = j["kernel"];
  if (j.contains("warnings") && j["warnings"].is_array()) r.warnings = j["warnings"];
  if (j.contains("placement") && j["placement"].is_object()) placement_from_json(r.placement, j["placement"]);
  return r;
}

std::string to_json_line(const Record& r) {
  return to_json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string observed_text(const Placement& p) {
  std::string out;
  for (auto& side : p.sides) {
    std::string cpus;
    for (int c : side.observed) cpus += (cpus.empty() ? "" : "+") + std::to_string(c);
    out +=
        (out.empty() ? "" : " ") + side.role + std::to_string(side.index) + "@" + (cpus.empty() ? "?" : cpus);
  }
  return out;
}

}  // namespace ipclab
