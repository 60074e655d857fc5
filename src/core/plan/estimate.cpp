#include "core/plan/estimate.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <tuple>

#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/base/fdio.hpp"
#include "core/base/fs.hpp"
#include "core/base/params.hpp"
#include "core/machine/home.hpp"
#include "core/ownership/journal.hpp"
#include "core/stats/statistics.hpp"

namespace ipclab {

namespace {

constexpr const char* kModelFile = "costs.json";
constexpr int kModelVersion = 1;
constexpr size_t kModelMaxBytes = 4 << 20;  // larger is not a file ipclab wrote

// Seconds as the budget line and the docs write them: 1 → "1", 0.25 → "0.25".
std::string seconds_text(double s) { return fmt::format("{:g}", std::round(s * 1000) / 1000); }

// A budget as --budget takes it back: "5m", "1h", "90s".
std::string budget_text(double s) {
  if (s >= 3600 && std::fmod(s, 3600) == 0) return fmt::format("{:g}h", s / 3600);
  if (s >= 60 && std::fmod(s, 60) == 0) return fmt::format("{:g}m", s / 60);
  return fmt::format("{:g}s", s);
}

int planned_repetitions(const RunOptions& opts) {
  return opts.ci_target_pct > 0 ? kAutoMinRepetitions : opts.repetitions;
}

}  // namespace

std::string duration_text(double s) {
  s = std::max(0.0, std::round(s));
  if (s < 60) return fmt::format("{:.0f}s", s);
  if (s < 3600) return fmt::format("{:.0f}m{:02.0f}s", std::floor(s / 60), std::fmod(s, 60));
  return fmt::format("{:.0f}h{:02.0f}m", std::floor(s / 3600), std::floor(std::fmod(s, 3600) / 60));
}

std::string CostModel::default_path() {
  const std::string dir = user_state_dir();
  return dir.empty() ? "" : dir + "/" + kModelFile;
}

namespace {

// An entry of the file (a mechanism's or a point's), or nullopt for one ipclab did not write.
std::optional<CostModel::Observations> parse_entry(const nlohmann::json& e) {
  if (!e.is_object() || !e.contains("overhead_s") || !e["overhead_s"].is_number() || !e.contains("samples") ||
      !e["samples"].is_number_integer())
    return std::nullopt;
  const auto within = [](double lo, double hi) {
    return [lo, hi](const nlohmann::json& v) {
      return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= lo && v.get<double>() < hi;
    };
  };
  const auto sane = within(0, 3600), signed_sane = within(-3600, 3600), positive = within(1e-9, 3600);
  const long n = e["samples"].get<long>();
  if (!sane(e["overhead_s"]) || n <= 0) return std::nullopt;
  CostModel::Observations entry{.recent = {e["overhead_s"].get<double>()}, .samples = n};
  // "recent" since the median, "planned" since fixed work was told apart (a repetition that
  // ended before its window has a negative one); a file written before has the one figure.
  if (auto r = e.find("recent"); r != e.end() && r->is_array() && !r->empty() &&
                                 r->size() <= CostModel::kRecent &&
                                 std::all_of(r->begin(), r->end(), signed_sane)) {
    entry.recent = r->get<std::vector<double>>();
    if (auto pl = e.find("planned"); pl != e.end() && pl->is_array() && pl->size() == r->size() &&
                                     std::all_of(pl->begin(), pl->end(), positive))
      entry.planned = pl->get<std::vector<double>>();
    else if (!std::all_of(r->begin(), r->end(), sane))
      entry.recent = {e["overhead_s"].get<double>()};
  }
  if (auto l = e.find("last"); l != e.end() && l->is_number_unsigned()) entry.last = l->get<uint64_t>();
  return entry;
}

}  // namespace

CostModel CostModel::load(const std::string& path) {
  CostModel m;
  m.path_ = path;
  if (path.empty()) return m;
  const int fd = open_own_file(path, O_RDONLY);
  if (fd < 0) return m;
  std::string text = read_from_start(fd);
  ::close(fd);
  if (text.size() > kModelMaxBytes) return m;
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || j.value("version", 0) != kModelVersion || !j.contains("mechanisms") ||
      !j["mechanisms"].is_object())
    return m;
  for (auto& [name, e] : j["mechanisms"].items())
    if (auto entry = parse_entry(e)) m.entries_[name] = std::move(*entry);
  // "points" since the start-up was learned per point; a file written before has none.
  if (auto pts = j.find("points"); pts != j.end() && pts->is_object())
    for (auto& [name, e] : pts->items())
      if (auto entry = parse_entry(e); entry && m.points_.size() < kMaxPoints) {
        m.learned_ = std::max(m.learned_, entry->last);
        m.points_[name] = std::move(*entry);
      }
  return m;
}

const CostModel::Observations* CostModel::find(const std::string& mechanism, const std::string& point) const {
  if (auto it = points_.find(point); !point.empty() && it != points_.end()) return &it->second;
  if (auto it = entries_.find(mechanism); it != entries_.end()) return &it->second;
  return nullptr;
}

double CostModel::overhead_s(const std::string& mechanism, const std::string& point) const {
  if (const Observations* e = find(mechanism, point)) return e->overhead_s();
  // A mechanism nothing was learned of starts like its suite's others (a runtime peer like the
  // other runtime peers, a fio run like the other fileio engines): the median of theirs.
  const std::string suite = mechanism.substr(0, mechanism.find('/') + 1);
  std::vector<double> siblings;
  if (suite.size() > 1)
    for (auto it = entries_.lower_bound(suite); it != entries_.end() && it->first.rfind(suite, 0) == 0; ++it)
      if (!it->second.fixed_s()) siblings.push_back(it->second.overhead_s());
  return siblings.empty() ? kDefaultOverheadS : median_of(siblings);
}

std::optional<double> CostModel::fixed_s(const std::string& mechanism, const std::string& point) const {
  const Observations* e = find(mechanism, point);
  return e ? e->fixed_s() : std::nullopt;
}

double CostModel::Observations::overhead_s() const { return std::max(0.0, median_of(recent)); }

std::optional<double> CostModel::Observations::fixed_s() const {
  if (planned.size() != recent.size() || planned.empty()) return std::nullopt;
  std::vector<double> walls, shares;
  for (size_t i = 0; i < recent.size(); ++i) {
    walls.push_back(std::max(0.0, planned[i] + recent[i]));
    shares.push_back(walls.back() / planned[i]);
  }
  if (median_of(shares) >= 1) return std::nullopt;
  return median_of(walls);
}

void CostModel::Observations::take(double wall_s, double planned_s) {
  if (planned.size() != recent.size()) recent.clear();  // a file's one figure: start afresh
  ++samples;
  recent.push_back(std::clamp(wall_s - planned_s, -3600.0, 3600.0));
  planned.push_back(std::min(planned_s, 3600.0));
  if (recent.size() > kRecent) {
    recent.erase(recent.begin());
    planned.erase(planned.begin());
  }
}

void CostModel::learn(const std::string& mechanism, double wall_s, double planned_s,
                      const std::string& point) {
  if (!std::isfinite(wall_s) || !std::isfinite(planned_s) || planned_s <= 0) return;
  entries_[mechanism].take(wall_s, planned_s);
  if (point.empty()) return;
  Observations& p = points_[point];
  p.take(wall_s, planned_s);
  p.last = ++learned_;
  if (points_.size() > kMaxPoints)  // the point learned longest ago goes
    points_.erase(std::min_element(points_.begin(), points_.end(),
                                   [](auto& a, auto& b) { return a.second.last < b.second.last; }));
}

std::string CostModel::save() const {
  if (path_.empty()) return "no state folder to keep it in (set XDG_STATE_HOME or HOME)";
  std::string why;
  if (private_state_dir(why).empty()) return why;
  auto entries = [](const std::map<std::string, Observations>& from, bool with_last) {
    nlohmann::json out = nlohmann::json::object();
    for (auto& [name, e] : from) {
      out[name] = {{"overhead_s", e.overhead_s()},
                   {"samples", e.samples},
                   {"recent", e.recent},
                   {"planned", e.planned}};
      if (with_last) out[name]["last"] = e.last;
    }
    return out;
  };
  const nlohmann::json j{
      {"version", kModelVersion},
      {"about",
       "ipclab's cost model: per mechanism and per point, the seconds a repetition takes beyond its "
       "warm-up and measured window (start-up and tear-down; negative for fixed work that ends before "
       "them) and the warm-up and window each was planned for, learned from past runs; used for "
       "estimates and --budget (docs/methodology.md). Safe to delete."},
      {"mechanisms", entries(entries_, false)},
      {"points", entries(points_, true)}};
  // A name that is not UTF-8 (a -p value's bytes) is kept with U+FFFD: it then matches no point.
  const std::string text = j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const std::string folder = path_.substr(0, path_.rfind('/'));
  std::string tmp;
  try {
    const int fd = ipc::create_file(folder, "costs", 0600, tmp);
    try {
      write_all(fd, reinterpret_cast<const std::byte*>(text.data()), text.size());
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (::close(fd) != 0) throw std::system_error(errno, std::generic_category(), "close " + tmp);
    ipc::commit_file(tmp, path_, true);
  } catch (const std::exception& e) {
    if (!tmp.empty()) ipc::remove(ipc::Kind::File, tmp);
    return e.what();
  }
  return "";
}

PlanHooks learning_hooks(PlanHooks hooks, std::shared_ptr<CostModel> model) {
  // Saving after every repetition would write the whole file hundreds of times a run; what was
  // learned since the last save is written when the hooks go (the run's end, or its unwinding).
  struct State {
    std::shared_ptr<CostModel> model;
    uint64_t started = 0, saved = 0;
    std::string point;
    double planned_s = 0;  // the warm-up and window of the repetition under way
    double runs = 1;       // the runs it makes (2: paired with a quiet one)
    bool dirty = false, warned = false;
    void save() {
      dirty = false;
      saved = now_ns();
      if (std::string why = model->save(); !why.empty() && !warned) {
        warned = true;
        fmt::print(
            stderr,
            "warning: cannot keep the cost model in {}: {} — estimates go on from the ones ipclab had\n",
            model->path().empty() ? "the state folder" : model->path(), why);
      }
    }
    ~State() {
      if (dirty) save();
    }
  };
  auto st = std::make_shared<State>();
  st->model = std::move(model);
  PlanHooks out;
  out.options = std::move(hooks.options);
  out.starting = [st, inner = hooks.starting](const PlannedBenchmark& b, const RunOptions& o, size_t done,
                                              size_t total) {
    if (inner) inner(b, o, done, total);
    st->point = b.name;
    st->planned_s = o.warmup_s + o.duration_s;
    st->runs = paired(o) ? 2 : 1;  // a noisy repetition and its quiet pair: each learned as one
    st->started = now_ns();
  };
  out.finished = [st, inner = hooks.finished](const Record& r) {
    const uint64_t ended = now_ns();
    if (inner) inner(r);
    if (r.run_type == "aggregate" || r.status != Status::Ok || !st->started) return;
    st->model->learn(r.suite + "/" + r.mechanism, double(ended - st->started) * 1e-9 / st->runs,
                     st->planned_s, st->point);
    st->dirty = true;
    if (double(ended - st->saved) * 1e-9 >= kModelSaveEveryS) st->save();
  };
  return out;
}

double estimate_repetition(const PlannedBenchmark& b, const RunOptions& opts, const CostModel& model) {
  const double runs = paired(opts) ? 2 : 1;  // a noisy repetition and its quiet pair
  if (auto fixed = model.fixed_s(b.mech->full_name(), b.name)) return runs * *fixed;
  return runs * (opts.warmup_s + opts.duration_s + model.overhead_s(b.mech->full_name(), b.name));
}

double estimate_point(const PlannedBenchmark& b, const RunOptions& opts, const CostModel& model) {
  return double(planned_repetitions(opts)) * estimate_repetition(b, opts, model);
}

double estimate_plan(const std::vector<PlannedBenchmark>& benchmarks, const RunOptions& opts,
                     const CostModel& model) {
  double t = 0;
  for (auto& b : benchmarks) t += estimate_point(b, opts, model);
  return t;
}

std::string BudgetFit::text() const {
  std::string what;
  auto change = [&](const char* label, const std::string& from, const std::string& to, const char* unit) {
    if (from != to) what += fmt::format("{}{} {}→{}{}", what.empty() ? "" : ", ", label, from, to, unit);
  };
  change("windows", seconds_text(asked.duration_s), seconds_text(fitted.duration_s), " s");
  change("warm-up", seconds_text(asked.warmup_s), seconds_text(fitted.warmup_s), " s");
  if (asked.ci_target_pct > 0)
    change("max repetitions", std::to_string(asked.max_repetitions), std::to_string(fitted.max_repetitions),
           "");
  else
    change("repetitions", std::to_string(asked.repetitions), std::to_string(fitted.repetitions), "");
  return fmt::format("budget {}{}: {}; estimate {}", budget_s ? budget_text(*budget_s) : "none",
                     source == "preset" ? " (the preset's)" : "", what.empty() ? "fits as planned" : what,
                     duration_text(estimate_s));
}

nlohmann::json BudgetFit::to_json() const {
  auto options = [](const RunOptions& o) {
    nlohmann::json j{{"duration_s", o.duration_s}, {"warmup_s", o.warmup_s}};
    if (o.ci_target_pct > 0) {
      j["repetitions"] = "auto";
      j["max_repetitions"] = o.max_repetitions;
    } else {
      j["repetitions"] = o.repetitions;
    }
    return j;
  };
  return {{"limit_s", budget_s ? nlohmann::json(*budget_s) : nlohmann::json(nullptr)},
          {"source", source},
          {"estimate_s", estimate_s},
          {"fitted", changed},
          {"asked", options(asked)},
          {"ran", options(fitted)},
          {"floors",
           {{"duration_s", kFloors.duration_s},
            {"warmup_s", kFloors.warmup_s},
            {"repetitions", kFloors.repetitions}}}};
}

namespace {

// The warm-up and window of `asked` shortened by one factor `s` (1: as asked), rounded down to the
// millisecond, never below their floors (a floor never lengthens what was asked).
std::pair<double, double> shortened(const RunOptions& asked, double s) {
  if (s >= 1) return {asked.duration_s, asked.warmup_s};
  auto ms = [](double x) { return std::floor(x * 1000 + 1e-6) / 1000; };  // 0.39999.. is 0.4
  return {std::max(std::min(asked.duration_s, kFloors.duration_s), ms(asked.duration_s * s)),
          std::max(std::min(asked.warmup_s, kFloors.warmup_s), ms(asked.warmup_s * s))};
}

// The seconds of one repetition of every point of `points` with `asked`'s windows shortened by `s`:
// the windows of the points whose repetitions last their window, and every point's overhead or
// fixed length.
double round_cost(std::span<const PlannedBenchmark> points, const RunOptions& asked, double s,
                  const CostModel& model) {
  RunOptions o = asked;
  std::tie(o.duration_s, o.warmup_s) = shortened(asked, s);
  double t = 0;
  for (auto& b : points) t += estimate_repetition(b, o, model);
  return t;
}

}  // namespace

std::optional<FittedWindows> longest_windows(std::span<const PlannedBenchmark> points,
                                             const RunOptions& asked, int repetitions, double limit_s,
                                             const CostModel& model) {
  const double limit = limit_s * (1 + 1e-9);  // the sums' rounding is no reason to refuse
  const double r = std::max(1, repetitions);
  if (r * round_cost(points, asked, 0, model) > limit) return std::nullopt;
  double lo = 0, hi = 1;  // the longest windows that fit: bisection on the factor
  if (r * round_cost(points, asked, 1, model) <= limit) lo = 1;
  for (int i = 0; i < 60 && lo < 1; ++i) {
    const double mid = (lo + hi) / 2;
    (r * round_cost(points, asked, mid, model) <= limit ? lo : hi) = mid;
  }
  const auto [d, w] = shortened(asked, lo);
  return FittedWindows{d, w, round_cost(points, asked, lo, model)};
}

BudgetFit fit_budget(const std::vector<PlannedBenchmark>& benchmarks, const RunOptions& opts,
                     std::optional<double> budget_s, const std::string& source, const CostModel& model) {
  BudgetFit fit;
  fit.budget_s = budget_s;
  fit.source = budget_s ? source : "none";
  fit.asked = fit.fitted = opts;
  fit.estimate_s = estimate_plan(benchmarks, opts, model);
  const bool autorep = opts.ci_target_pct > 0;
  // Within the budget as asked: nothing to do, but for auto's most repetitions.
  if (!budget_s || (fit.estimate_s <= *budget_s && !autorep)) return fit;
  const double budget = *budget_s;

  const int r0 = planned_repetitions(opts);
  const int r_floor = autorep ? kAutoMinRepetitions : std::min(r0, kFloors.repetitions);
  for (int r = r0; r >= r_floor; --r) {
    const auto w = longest_windows(benchmarks, opts, r, budget, model);
    if (!w) continue;
    fit.fitted.duration_s = w->duration_s;
    fit.fitted.warmup_s = w->warmup_s;
    if (autorep) {
      // The fewest repetitions fit; the most auto may run are capped at what fits besides.
      const int cap = int(std::floor(budget * (1 + 1e-9) / w->round_s));
      fit.fitted.max_repetitions = std::clamp(cap, kAutoMinRepetitions, opts.max_repetitions);
    } else {
      fit.fitted.repetitions = r;
    }
    fit.estimate_s = estimate_plan(benchmarks, fit.fitted, model);
    fit.changed = fit.fitted.duration_s != opts.duration_s || fit.fitted.warmup_s != opts.warmup_s ||
                  fit.fitted.repetitions != opts.repetitions ||
                  fit.fitted.max_repetitions != opts.max_repetitions;
    return fit;
  }
  // Not even the floors fit: refused, with a budget that would (rounded up, as --budget writes it).
  const double need = double(r_floor) * round_cost(benchmarks, opts, 0, model);
  const std::string larger = need < 120 ? fmt::format("{:.0f}s", std::ceil(need * 1.05))
                                        : fmt::format("{:.0f}m", std::ceil(need * 1.05 / 60));
  throw UsageError(fmt::format(
      "budget {}{}: the {} planned points take about {} even at the floors (windows {} s, warm-up {} s, {} "
      "repetition{}); give a larger budget, e.g. --budget {}{}, or a narrower selection (fewer suites, "
      "mechanisms or -p values)",
      budget_text(budget), source == "preset" ? " (the preset's)" : "", benchmarks.size(),
      duration_text(need), seconds_text(std::min(opts.duration_s, kFloors.duration_s)),
      seconds_text(std::min(opts.warmup_s, kFloors.warmup_s)), r_floor, r_floor == 1 ? "" : "s", larger,
      source == "preset" ? " or --budget none" : ""));
}

BudgetPacer::BudgetPacer(const std::vector<PlannedBenchmark>& benchmarks, const BudgetFit& fit,
                         std::shared_ptr<const CostModel> model)
    : benchmarks_(benchmarks), fit_(fit), model_(std::move(model)), options_(benchmarks.size(), fit.fitted) {}

RunOptions BudgetPacer::start(size_t index, double elapsed_s) {
  RunOptions o = index < options_.size() ? options_[index] : fit_.fitted;  // the last point's windows
  if (fit_.budget_s && index < benchmarks_.size()) {
    // The points still to run, this one first, at the repetitions fit_budget chose, in what the
    // budget has left. Windows that hold it within kPaceBand are kept (a run's windows do not
    // move by a millisecond at every point for a start-up's jitter); others are fitted anew, or
    // the floors when not even they fit (the run overruns, and its time left says by how much).
    const std::span<const PlannedBenchmark> rest(benchmarks_.data() + index, benchmarks_.size() - index);
    const double left = std::max(0.0, *fit_.budget_s - elapsed_s);
    const int reps = planned_repetitions(fit_.fitted);
    const double at_these = double(reps) * round_cost(rest, o, 1, *model_);
    const bool longest = o.duration_s == fit_.asked.duration_s && o.warmup_s == fit_.asked.warmup_s;
    if (at_these > left * (1 + kPaceBand) || (at_these < left * (1 - kPaceBand) && !longest)) {
      const auto w = longest_windows(rest, fit_.asked, reps, left, *model_);
      const auto floors = shortened(fit_.asked, 0);
      o.duration_s = w ? w->duration_s : floors.first;
      o.warmup_s = w ? w->warmup_s : floors.second;
    }
    ++paced_;
    if (o.duration_s != fit_.fitted.duration_s || o.warmup_s != fit_.fitted.warmup_s) {
      shortest_ = moved_ ? std::min(shortest_, o.duration_s) : o.duration_s;
      longest_ = moved_ ? std::max(longest_, o.duration_s) : o.duration_s;
      ++moved_;
    }
  }
  // The points after this one would start with what this one got, as far as is known now.
  for (size_t i = index; i < options_.size(); ++i) options_[i] = o;
  return o;
}

const RunOptions& BudgetPacer::options_of(size_t index) const { return options_.at(index); }

std::string BudgetPacer::text() const {
  if (!moved_) return "";
  const std::string range = shortest_ == longest_
                                ? seconds_text(shortest_)
                                : fmt::format("{} to {}", seconds_text(shortest_), seconds_text(longest_));
  return fmt::format(
      "budget {}: {} of {} points ran with windows of {} s, not {} s: fitted again to the time left as "
      "the run learned its costs (each such record's extra.window says its own)",
      budget_text(*fit_.budget_s), moved_, paced_, range, seconds_text(fit_.fitted.duration_s));
}

std::function<RunOptions(size_t, const RunOptions&)> BudgetPacer::hook() {
  return [this, started = std::optional<uint64_t>()](size_t index, const RunOptions&) mutable {
    if (!started) started = now_ns();
    return start(index, double(now_ns() - *started) * 1e-9);
  };
}

std::optional<double> parse_duration(std::string_view text) {
  double scale = 1;
  if (text.size() > 2 && text.substr(text.size() - 2) == "ms") {
    scale = 1e-3;
    text.remove_suffix(2);
  } else if (!text.empty() && (text.back() == 's' || text.back() == 'm' || text.back() == 'h')) {
    scale = text.back() == 's' ? 1 : text.back() == 'm' ? 60 : 3600;
    text.remove_suffix(1);
  }
  const auto v = parse_real(text);
  if (!v) return std::nullopt;
  return *v * scale;
}

std::optional<double> parse_budget(const std::string& text, const std::string& option, double min_s,
                                   double max_s, bool none_ok) {
  if (none_ok && text == "none") return std::nullopt;
  const auto v = parse_duration(text);
  if (!v || !(*v >= min_s && *v <= max_s))
    throw UsageError(fmt::format("{} '{}': give a time from {} to {} ({}), e.g. {} 5m{}", option, brief(text),
                                 budget_text(min_s), budget_text(max_s), kDurationSyntax, option,
                                 none_ok ? ", or none" : ""));
  return *v;
}

}  // namespace ipclab
