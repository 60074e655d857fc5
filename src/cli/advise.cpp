// `ipclab advise`: answers "which mechanism should carry my messages?" on this machine. It takes
// what the user knows (message size, closed loop or a rate, threads or processes, a p99 bound, a
// CPU bound, where the two sides run), measures every messaging transport that can do that (each
// wait strategy of those that have several) within a time budget, interleaved, and ranks them:
// those that meet every bound first, by p99, then the rest; the answer and what each runner-up
// trades against it. It plans and runs through the runner like `ipclab run` (one way of running).
#include <fmt/format.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <random>

#include "cli/commands.hpp"
#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/machine/env.hpp"
#include "core/machine/placement.hpp"
#include "core/measure/antagonist.hpp"
#include "core/model/std_params.hpp"
#include "core/output/output.hpp"
#include "core/plan/estimate.hpp"
#include "core/plan/runner.hpp"
#include "core/stats/statistics.hpp"
#include "core/store/store.hpp"

namespace ipclab::cli {
namespace {

// `ipclab advise`'s arguments as given; parsed by parse_question.
struct AdviseArgs {
  std::optional<std::string> size, rate, mode, placement, p99_us, cpu_us, budget;
  std::optional<std::string> store;  // --store: the results store its measurements go into
  std::vector<std::string> only;
  std::vector<std::string> noisy;  // --noisy KIND[@WHERE][:LEVEL]: rank under these antagonists
  bool json = false;
};

struct Question {
  int64_t size = 64;
  int64_t rate = 0;  // 0: closed-loop round trips
  std::string mode = "processes", placement;
  double p99_us = 0, cpu_us = 0;  // 0: no bound
  double budget_s = 60;
  std::vector<std::string> only;      // mechanism filters within messaging
  std::vector<AntagonistSpec> noisy;  // --noisy: the interference the ranking is under
};

// Each candidate's window: what the budget leaves after every repetition's warm-up and start-up
// (core/plan/estimate's model, learned from past runs), at least the budget floor, at most this.
constexpr double kMaxDuration = 2.0;
constexpr int kRepetitions = 3;

Question parse_question(const AdviseArgs& a) {
  Question q;
  for (auto& text : a.noisy) q.noisy.push_back(parse_antagonist(text));
  if (a.size) {
    auto v = parse_integer(*a.size, true);
    if (!v || *v < 1 || *v > (64 << 20))
      throw UsageError(fmt::format(
          "--size '{}': give a message size in bytes from 1 to 64M, e.g. --size 64 or 4K", brief(*a.size)));
    q.size = *v;
  }
  if (a.rate) {
    auto v = parse_rate(*a.rate);
    if (!v || *v < 1)
      throw UsageError(
          fmt::format("--rate '{}': give messages per second, e.g. --rate 50k, or leave it out for "
                      "closed-loop round trips",
                      brief(*a.rate)));
    const int64_t most = std_params::rate_params().front().max;  // the open-loop rate parameter's bound
    if (*v > most)
      throw UsageError(fmt::format("--rate '{}': at most {} messages per second; give a lower rate",
                                   brief(*a.rate), rate_text(most)));
    q.rate = *v;
  }
  if (a.mode) {
    if (*a.mode != "threads" && *a.mode != "processes")
      throw UsageError(fmt::format("--sides '{}': use threads or processes", brief(*a.mode)));
    q.mode = *a.mode;
  }
  const std::vector<int> cpus = allowed_cpus();
  q.placement = cpus.size() > 1 ? "cross" : "same";
  if (a.placement) {
    if (*a.placement != "same" && *a.placement != "cross")
      throw UsageError(fmt::format("--placement '{}': use same (both sides on one CPU) or cross (two CPUs)",
                                   brief(*a.placement)));
    if (*a.placement == "cross" && cpus.size() < 2)
      throw UsageError("--placement cross needs two CPUs and this process may use one; use --placement same");
    q.placement = *a.placement;
  }
  auto bound = [](const std::optional<std::string>& text, const char* option, const char* example) {
    if (!text) return 0.0;
    auto v = parse_real(*text);
    if (!v || !(*v > 0 && *v <= 1e9))
      throw UsageError(
          fmt::format("{} '{}': give microseconds above 0, e.g. {}", option, brief(*text), example));
    return *v;
  };
  q.p99_us = bound(a.p99_us, "--p99-us", "--p99-us 50");
  q.cpu_us = bound(a.cpu_us, "--cpu-us", "--cpu-us 10");
  // As `ipclab run --budget` reads it (one syntax of time); whether the candidates fit in it is
  // checked once they are known (cmd_advise), naming the budget they need.
  if (a.budget) q.budget_s = *parse_budget(*a.budget, "--budget", 1, 3600, false);
  q.only = a.only;
  return q;
}

// One candidate: a messaging transport with one value of its wait strategy (if it has one).
struct Candidate {
  PlannedBenchmark bench;
  std::string label;
  std::string not_applicable;  // why it cannot run this question (then bench is unset)
};

std::vector<Candidate> candidates(const Question& q) {
  std::vector<std::string> filters;
  for (auto& f : q.only) filters.push_back(f.find('/') == std::string::npos ? "messaging/" + f : f);
  if (filters.empty()) filters.push_back("messaging");
  std::vector<Candidate> out;
  for (const Mechanism* m : select_mechanisms(filters)) {
    if (m->suite != "messaging")
      throw UsageError(
          fmt::format("--only {}/{}: advise compares messaging transports; name one of those "
                      "(`ipclab list messaging`)",
                      m->suite, m->name));
    if (!m->transport) continue;
    std::vector<std::string> waits{""};
    for (auto& spec : m->params)
      if (spec.name == "wait") waits = spec.choices;
    for (auto& wait : waits) {
      Overrides o;
      o["pattern"] = {q.rate ? "rate" : "roundtrip"};
      o["size"] = {std::to_string(q.size)};
      o["mode"] = {q.mode};
      o["placement"] = {q.placement};
      if (q.rate) o["rate"] = {std::to_string(q.rate)};
      if (!wait.empty()) o["wait"] = {wait};
      Candidate c;
      c.label = m->name + (wait.empty() ? "" : " wait=" + wait);
      try {
        auto planned = plan({m}, Preset::Default, o);
        c.bench = planned.front();
      } catch (const UsageError& e) {
        c.not_applicable = e.what();
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

struct Verdict {
  const Candidate* c;
  const Record* r = nullptr;  // the median aggregate (or the one repetition)
  double p50_us = 0, p99_us = 0, cpu_us = 0;
  double p99_lo_us = 0, p99_hi_us = 0;  // the repetitions' p99, lowest and highest
  double cpus_busy = 0;  // CPU seconds per second of wall time, both sides: a spinning side is 1
  // --noisy: the median p99 of the quiet pairs, and the p99's inflation (extra.inflation); 0: none.
  double quiet_p99_us = 0, p99_inflation = 0;
  bool ok = false, meets = false;
  std::string why;  // what it misses, or why it has no figure
};

// A wait that keeps a CPU busy whether or not a message comes: CPUs busy at or above this per
// side that waits (most of a whole CPU) reads as spinning.
constexpr double kSpinningCpus = 0.9;

std::string us(double v) {
  if (v >= 1000) return fmt::format("{:.1f} ms", v / 1000);
  return v < 10 ? fmt::format("{:.2f} us", v) : fmt::format("{:.1f} us", v);
}

// p99 figures within this fraction of each other are one figure on a shared VM (interleaved runs
// of one transport spread by a few percent): among those the answer is the one with least CPU.
constexpr double kTailTie = 0.10;

// The part of the budget round one takes; the rest measures a tie again.
constexpr double kFirstRound = 0.5;

Verdict judge(const Question& q, const Candidate& c, const std::vector<Record>& records) {
  Verdict v{&c};
  if (!c.not_applicable.empty()) {
    v.why = "cannot: " + c.not_applicable;
    return v;
  }
  for (auto& r : records)
    if (r.name == c.bench.name && (r.run_type == "aggregate" || !v.r)) v.r = &r;
  if (!v.r) {
    v.why = "no result";
    return v;
  }
  const Record& r = *v.r;
  if (r.status != Status::Ok) {
    v.why = fmt::format("{}: {}", status_name(r.status), r.error);
    return v;
  }
  // A figure from a window shorter than this machine allows is not ranked (flag_short_window).
  if (r.flags.is_array() && std::find(r.flags.begin(), r.flags.end(), "short_window") != r.flags.end()) {
    v.why = "not ranked: a measured window shorter than this machine's floor (short_window)";
    return v;
  }
  if (!r.latency || !r.latency->count) {
    v.why = q.rate ? "saturated: it could not carry the rate" : "no latency figure";
    return v;
  }
  v.ok = true;
  v.p50_us = double(r.latency->p50) / 1e3;
  v.p99_us = double(r.latency->p99) / 1e3;
  v.cpu_us = r.cpu_per_op_ns() / 1e3;
  // Its confidence: the p99 of each repetition (the aggregate's p99 is the median one's); its
  // occupancy: CPU time over wall time, the median over the repetitions.
  v.p99_lo_us = v.p99_hi_us = v.p99_us;
  std::vector<double> busy;
  for (auto& rep : records) {
    if (rep.name != c.bench.name || rep.run_type == "aggregate" || rep.status != Status::Ok) continue;
    if (rep.latency && rep.latency->count) {
      v.p99_lo_us = std::min(v.p99_lo_us, double(rep.latency->p99) / 1e3);
      v.p99_hi_us = std::max(v.p99_hi_us, double(rep.latency->p99) / 1e3);
    }
    if (rep.wall_s > 0) busy.push_back(rep.cpu.total_s() / rep.wall_s);
  }
  if (busy.empty() && r.wall_s > 0) busy.push_back(r.cpu.total_s() / r.wall_s);
  // Under --noisy: what the same candidate did quiet, a moment apart (core/plan/runner.hpp: the pairs).
  std::vector<double> quiet;
  for (auto& rep : records)
    if (rep.name == c.bench.name && rep.run_type != "aggregate" && rep.status == Status::Ok &&
        rep.extra.contains("noise_pair")) {
      const auto& q99 = rep.extra["noise_pair"]["quiet"];
      if (q99.contains("latency_ns")) quiet.push_back(q99["latency_ns"].value("p99", 0.0) / 1e3);
    }
  if (!quiet.empty()) v.quiet_p99_us = median_of(quiet);
  if (r.extra.contains("inflation") && r.extra["inflation"]["p99"].is_object())
    v.p99_inflation = r.extra["inflation"]["p99"].value("ratio", 0.0);
  if (!busy.empty()) {
    std::sort(busy.begin(), busy.end());
    v.cpus_busy = busy[busy.size() / 2];
  }
  std::vector<std::string> misses;
  if (q.p99_us > 0 && v.p99_us > q.p99_us) misses.push_back(fmt::format("p99 over {}", us(q.p99_us)));
  if (q.cpu_us > 0 && v.cpu_us > q.cpu_us) misses.push_back(fmt::format("CPU over {}", us(q.cpu_us)));
  v.meets = misses.empty();
  for (auto& m : misses) v.why += (v.why.empty() ? "" : ", ") + m;
  return v;
}

// What a runner-up trades against the answer, from the figures: its tail and its CPU.
std::string trade(const Verdict& answer, const Verdict& v) {
  auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  std::vector<std::string> t;
  const double tail = ratio(v.p99_us, answer.p99_us), cpu = ratio(v.cpu_us, answer.cpu_us);
  t.push_back(fmt::format("p99 {:.1f}x", tail));
  if (cpu > 0)
    t.push_back(cpu < 1 ? fmt::format("{:.0f}% less CPU", (1 - cpu) * 100)
                        : fmt::format("{:.1f}x the CPU", cpu));
  t.push_back(fmt::format("{:.2f} CPUs busy (the answer {:.2f})", v.cpus_busy, answer.cpus_busy));
  std::string s;
  for (auto& x : t) s += (s.empty() ? "" : ", ") + x;
  return s;
}

nlohmann::json noisy_texts(const Question& q) {
  nlohmann::json j = nlohmann::json::array();
  for (auto& a : q.noisy) j.push_back(a.text());
  return j;
}

std::string question_text(const Question& q) {
  std::string s = fmt::format("{} B messages, ", q.size);
  s += q.rate ? fmt::format("{}/s offered (open loop: one-way latency from each intended send time)",
                            rate_text(q.rate))
              : "closed-loop round trips (latency = round trip)";
  s += fmt::format(", {} on {}", q.mode, q.placement == "same" ? "one CPU" : "two CPUs");
  if (q.p99_us > 0) s += fmt::format(", p99 <= {}", us(q.p99_us));
  if (q.cpu_us > 0) s += fmt::format(", CPU <= {} per {}", us(q.cpu_us), q.rate ? "message" : "round trip");
  if (!q.noisy.empty()) {
    std::string ants;
    for (auto& a : q.noisy) ants += (ants.empty() ? "" : " + ") + a.text();
    s += fmt::format(
        ", under {} (every figure below is under it; quiet p99 beside it, from repetitions "
        "paired with quiet ones)",
        ants);
  }
  return s;
}

// The candidates that can run the question, or a usage error with the reasons the others gave,
// each once: the fix is in them (a rate over a parameter's bound names the rate, a size over a
// transport's limit the size).
std::vector<PlannedBenchmark> runnable(const std::vector<Candidate>& cands) {
  std::vector<PlannedBenchmark> benches;
  for (auto& c : cands)
    if (c.not_applicable.empty()) benches.push_back(c.bench);
  if (!benches.empty()) return benches;
  std::vector<std::string> reasons;
  for (auto& c : cands)
    if (std::find(reasons.begin(), reasons.end(), c.not_applicable) == reasons.end())
      reasons.push_back(c.not_applicable);
  std::string why;
  for (size_t i = 0; i < reasons.size() && i < 3; ++i) why += (i ? "; " : "") + reasons[i];
  if (reasons.size() > 3) why += fmt::format("; and {} more", reasons.size() - 3);
  throw UsageError(
      fmt::format("no messaging transport can run this: {}", why.empty() ? "none is built" : why));
}

// Round one's options. The estimator of `ipclab run --budget`: the part of the plan a window does
// not scale (warm-up and each mechanism's start-up), then the window that fills the rest. Round one
// takes kFirstRound of the budget (all of it when that part would not hold the floors; then
// `rest_for_tie` is false); what is left measures a tie again (measure_tie_again).
RunOptions round_one(const Question& q, const std::vector<PlannedBenchmark>& benches, const CostModel& model,
                     bool& rest_for_tie) {
  RunOptions opts;
  opts.repetitions = kRepetitions;
  opts.warmup_s = 0.1;
  opts.cpus = allowed_cpus();
  opts.antagonists = q.noisy;  // each repetition then paired with a quiet one (run_noise_pair)
  opts.duration_s = 0;
  const double fixed_s = estimate_plan(benches, opts, model),
               slots = double(benches.size() * kRepetitions) * (paired(opts) ? 2 : 1);
  const double per_point = (q.budget_s - fixed_s) / slots;
  if (per_point < kFloors.duration_s)
    throw UsageError(fmt::format(
        "--budget {}: {} candidates x {} repetitions need at least {:.0f}s; give --budget {:.0f}s or more, "
        "or fewer --only",
        duration_text(q.budget_s), benches.size(), kRepetitions,
        std::ceil(fixed_s + slots * kFloors.duration_s), std::ceil(fixed_s + slots * kFloors.duration_s)));
  const double first = (q.budget_s * kFirstRound - fixed_s) / slots;
  rest_for_tie = first >= kFloors.duration_s;
  opts.duration_s = std::min(rest_for_tie ? first : per_point, kMaxDuration);
  return opts;
}

// The ranking: those that meet every bound first, by p99, then those that do not, then those
// without a figure. The answer: of the candidates that meet every bound and tie with the best on
// p99 (their repetitions' p99 ranges overlap, or the medians are within kTailTie), the one with
// least CPU — a spinning wait that buys nothing measurable is no answer. The tie is said, by name.
struct Ranking {
  std::vector<Verdict> vs;
  std::vector<std::string> tie;
  bool parts = false;  // the tie holds a candidate whose median p99 is beyond kTailTie of the best's
  const Verdict* answer() const { return !vs.empty() && vs.front().meets ? &vs.front() : nullptr; }
};

Ranking rank(const Question& q, const std::vector<Candidate>& cands, const std::vector<Record>& records) {
  Ranking out;
  auto& vs = out.vs;
  for (auto& c : cands) vs.push_back(judge(q, c, records));
  std::stable_sort(vs.begin(), vs.end(), [](const Verdict& x, const Verdict& y) {
    if (x.meets != y.meets) return x.meets;
    if (x.ok != y.ok) return x.ok;
    return x.ok && x.p99_us < y.p99_us;
  });
  if (vs.empty() || !vs.front().meets) return out;
  const Verdict best = vs.front();
  auto ties = [&](const Verdict& v) {
    return v.meets && (v.p99_lo_us <= best.p99_hi_us || v.p99_us <= best.p99_us * (1 + kTailTie));
  };
  // Every candidate that ties with the best (sorted by median p99, a wide range further down may
  // still reach the best one's).
  std::vector<size_t> tied{0};
  for (size_t i = 1; i < vs.size(); ++i)
    if (ties(vs[i])) tied.push_back(i);
  size_t pick = 0;
  for (size_t i : tied) {
    if (vs[i].cpu_us < vs[pick].cpu_us) pick = i;
    out.parts = out.parts || vs[i].p99_us > best.p99_us * (1 + kTailTie);
  }
  if (tied.size() > 1)
    for (size_t i : tied) out.tie.push_back(vs[i].c->label);
  std::rotate(vs.begin(), vs.begin() + long(pick), vs.begin() + long(pick) + 1);
  return out;
}

// What advise found, for the store and the reader.
struct Advice {
  Ranking ranking;
  std::vector<Record> records;
  std::vector<std::string> again_labels;  // the tie measured again (measure_tie_again)
  double again_window = 0;
  double duration_s = 0;  // round one's windows
  uint64_t seed = 0;
};

std::string joined_names(const std::vector<std::string>& names) {
  std::string out;
  for (auto& t : names) out += (out.empty() ? "" : ", ") + t;
  return out;
}

// A tie that longer windows may part (its medians further apart than kTailTie, its ranges
// overlapping): the tied candidates measured again with what the budget has left, in longer
// windows than round one's (1.5 x at least), and judged on the new figures alone.
void measure_tie_again(const Question& q, const std::vector<Candidate>& cands, const RunOptions& opts,
                       const std::shared_ptr<CostModel>& model, const PlanHooks& hooks, uint64_t started,
                       Advice& advice) {
  const auto& tie = advice.ranking.tie;
  std::vector<PlannedBenchmark> again;
  for (auto& c : cands)
    if (std::find(tie.begin(), tie.end(), c.label) != tie.end()) again.push_back(c.bench);
  RunOptions opts2 = opts;
  opts2.duration_s = 0;
  const double left = q.budget_s - double(now_ns() - started) * 1e-9;
  const double window = (left - estimate_plan(again, opts2, *model)) / double(again.size() * kRepetitions);
  if (window < 1.5 * opts.duration_s) return;  // longer windows, or nothing to learn
  opts2.duration_s = std::min(window, 2 * kMaxDuration);
  fmt::print(stderr, "advise: a tie on p99 ({}): measuring them again, {} repetitions of {:.2f} s each\n",
             joined_names(tie), kRepetitions, opts2.duration_s);
  advice.again_window = opts2.duration_s;
  std::vector<Record> more = run_plan(again, opts2, learning_hooks(hooks, model), advice.seed + 1);
  if (isatty(2)) fmt::print(stderr, "\r\033[K");
  auto& records = advice.records;
  std::erase_if(records, [&](const Record& r) {
    return std::any_of(again.begin(), again.end(), [&](auto& b) { return b.name == r.name; });
  });
  records.insert(records.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  advice.again_labels = tie;
  advice.ranking = rank(q, cands, records);
}

// Every measurement into the store, with the answer and the tie (a run of kind advise).
void store_advice(store::Store& s, nlohmann::json context, const Advice& advice) {
  const Verdict* answer = advice.ranking.answer();
  context["advise"] = {{"answer", answer ? nlohmann::json(answer->c->label) : nlohmann::json(nullptr)},
                       {"tie", advice.ranking.tie}};
  std::vector<nlohmann::json> stored;
  for (auto& r : advice.records) stored.push_back(to_json(r));
  if (const auto note = s.append("advise", context, stored); !note.empty())
    fmt::print(stderr, "warning: {}\n", note);
  else
    fmt::print(stderr, "advise: stored in {}\n", s.where());
}

// --json: the question, the answer and every candidate's figures.
void print_json(const Question& q, const Advice& advice, const nlohmann::json& context) {
  const Verdict* answer = advice.ranking.answer();
  nlohmann::json j{{"question",
                    {{"size", q.size},
                     {"rate_per_s", q.rate},
                     {"pattern", q.rate ? "rate" : "roundtrip"},
                     {"sides", q.mode},
                     {"placement", q.placement},
                     {"p99_us", q.p99_us > 0 ? nlohmann::json(q.p99_us) : nlohmann::json(nullptr)},
                     {"cpu_us", q.cpu_us > 0 ? nlohmann::json(q.cpu_us) : nlohmann::json(nullptr)}}},
                   {"answer", answer ? nlohmann::json(answer->c->label) : nlohmann::json(nullptr)},
                   {"tie", advice.ranking.tie},
                   {"measured_again", advice.again_labels},
                   {"duration_s", advice.duration_s},
                   {"repetitions", kRepetitions},
                   {"noisy", noisy_texts(q)},
                   {"interleave_seed", advice.seed},
                   {"load_avg", context.value("load_avg", nlohmann::json(nullptr))}};
  nlohmann::json list = nlohmann::json::array();
  for (auto& v : advice.ranking.vs) {
    nlohmann::json e{{"candidate", v.c->label}, {"meets", v.meets}, {"ok", v.ok}};
    if (v.r) e["name"] = v.r->name;
    if (v.ok)
      e.update({{"p50_us", v.p50_us},
                {"p99_us", v.p99_us},
                {"p99_range_us", {v.p99_lo_us, v.p99_hi_us}},
                {"cpu_us", v.cpu_us},
                {"cpus_busy", v.cpus_busy}});
    if (v.quiet_p99_us > 0) e.update({{"quiet_p99_us", v.quiet_p99_us}, {"p99_inflation", v.p99_inflation}});
    if (!v.why.empty()) e["why"] = v.why;
    if (answer && v.ok && &v != answer) e["trade"] = trade(*answer, v);
    list.push_back(std::move(e));
  }
  j["candidates"] = std::move(list);
  fmt::print("{}\n", j.dump(2));
}

// A paragraph after `label`, wrapped to the terminal under its first line's text.
std::string paragraph(const std::string& label, const std::string& text) {
  return wrap(label, label.size(), text, text_width(), " ");
}

// The ranking as a table: the candidates with a figure, ranked, then those without, each with its
// reason whole, wrapped under the reason's column.
void print_table(const Question& q, const std::vector<Verdict>& vs) {
  size_t width = 9;
  for (auto& v : vs) width = std::max(width, v.c->label.size());
  fmt::print("{:>4}  {:<{}}  {:>9}  {:>9}  {:>19}  {:>9}  {:>5}  {}\n", "rank", "mechanism", width, "p50",
             "p99", "p99 of repetitions", q.rate ? "CPU/msg" : "CPU/rt", "CPUs", "verdict");
  int rank = 0;
  for (auto& v : vs) {
    if (!v.ok) continue;
    fmt::print("{:>4}  {:<{}}  {:>9}  {:>9}  {:>19}  {:>9}  {:>5.2f}  {}\n", ++rank, v.c->label, width,
               us(v.p50_us), us(v.p99_us), us(v.p99_lo_us) + ".." + us(v.p99_hi_us), us(v.cpu_us),
               v.cpus_busy, v.meets ? "meets" : v.why);
  }
  for (auto& v : vs)
    if (!v.ok) fmt::print("{}\n", paragraph(fmt::format("   -  {:<{}}  ", v.c->label, width), v.why));
}

// What the CPUs column means, and who keeps CPUs busy while waiting.
void print_cpu_notes(const Question& q, const std::vector<Verdict>& vs) {
  fmt::print("\n{}\n", paragraph("",
                                 "CPUs: CPU seconds per second of wall time, both sides together (the median "
                                 "repetition's): a side that spins while it waits reads as a whole CPU."));
  // Those that keep CPUs busy while they wait, in one sentence: a spinning side is a whole CPU
  // whether or not a message comes.
  std::string busy;
  for (auto& v : vs)
    if (v.ok && v.cpus_busy >= kSpinningCpus)
      busy += fmt::format("{}{} {:.2f} CPUs", busy.empty() ? "" : ", ", v.c->label, v.cpus_busy);
  if (!busy.empty())
    fmt::print("{}\n",
               paragraph("", fmt::format("Kept busy while waiting (a side that spins is a whole CPU even "
                                         "when no message comes; this machine has {}): {}.",
                                         allowed_cpus().size(), busy)));
  // A wait named spin spins whatever this run measured: on a machine whose other work took CPU
  // time from it, it read less than a CPU here, but it takes one wherever it runs.
  for (auto& v : vs)
    if (v.ok && v.cpus_busy < kSpinningCpus && v.c->label.ends_with(" wait=spin"))
      fmt::print("{}\n", paragraph("", fmt::format("{} spins while it waits: a whole CPU per waiting side "
                                                   "while it runs; it read {:.2f} CPUs busy here, where "
                                                   "other work took CPU time from it.",
                                                   v.c->label, v.cpus_busy)));
  if (!q.rate)
    fmt::print("{}\n", paragraph("",
                                 "Closed loop: round trips back to back, each side always busy, so CPU per "
                                 "round trip is at full load; for the CPU at your load, ask with --rate "
                                 "(e.g. --rate 10k)."));
}

// --noisy: each under the noise beside itself quiet, a moment apart; and who would lead quiet.
void print_quiet(const std::vector<Verdict>& vs, const Verdict* answer) {
  std::string quiet;
  const Verdict* quiet_best = nullptr;
  for (auto& v : vs)
    if (v.ok && v.quiet_p99_us > 0) {
      quiet += fmt::format("{}{} {} (x{} under the noise)", quiet.empty() ? "" : ", ", v.c->label,
                           us(v.quiet_p99_us),
                           v.p99_inflation >= 100 ? fmt::format("{:.0f}", v.p99_inflation)
                                                  : fmt::format("{:.3g}", v.p99_inflation));
      if (!quiet_best || v.quiet_p99_us < quiet_best->quiet_p99_us) quiet_best = &v;
    }
  if (!quiet.empty()) fmt::print("{}\n", paragraph("", "Quiet p99, a moment apart: " + quiet + "."));
  if (answer && quiet_best && quiet_best != answer)
    fmt::print(
        "{}\n",
        paragraph("", fmt::format("What the answer gives up quiet: quiet, {} would lead (p99 {}); "
                                  "{}'s quiet p99 is {}, and under the noise {} reaches {}.",
                                  quiet_best->c->label, us(quiet_best->quiet_p99_us), answer->c->label,
                                  us(answer->quiet_p99_us), quiet_best->c->label, us(quiet_best->p99_us))));
  else if (answer && quiet_best == answer)
    fmt::print("{}\n", paragraph("", fmt::format("{} leads quiet too (p99 {}): under this noise it gives "
                                                 "up nothing to the others.",
                                                 answer->c->label, us(answer->quiet_p99_us))));
}

// The answer, how sure it is (the tie, or none), what was measured again, the runner-ups.
void print_answer(const Question& q, const Advice& advice, const Verdict& answer) {
  const auto& tie = advice.ranking.tie;
  fmt::print("{}\n",
             paragraph("", fmt::format("Answer: {} — p50 {}, p99 {}{} (repetitions {}..{}), CPU {} per {}, "
                                       "{:.2f} CPUs busy.",
                                       answer.c->label, us(answer.p50_us), us(answer.p99_us),
                                       q.p99_us > 0 ? fmt::format(" (bound {})", us(q.p99_us)) : "",
                                       us(answer.p99_lo_us), us(answer.p99_hi_us), us(answer.cpu_us),
                                       q.rate ? "message" : "round trip", answer.cpus_busy)));
  if (!tie.empty()) {
    // Medians within kTailTie are one figure here however long they are measured; ranges that
    // overlap with medians further apart may part with longer windows (measured again above when
    // the budget left room).
    const char* remedy = !advice.ranking.parts ? ""
                         : advice.again_labels.empty()
                             ? " A larger --budget measures them again, longer, to part them."
                             : " It stands after measuring them again.";
    fmt::print("{}\n",
               paragraph("", fmt::format("Tie: {} are one answer on p99 here (their repetitions' p99 "
                                         "ranges overlap or their medians are within {:.0f}%); {} is "
                                         "named for the least CPU.{}",
                                         joined_names(tie), kTailTie * 100, answer.c->label, remedy)));
  } else {
    fmt::print("Confidence: no other candidate's p99 range overlaps the answer's.\n");
  }
  if (!advice.again_labels.empty())
    fmt::print("{}\n",
               paragraph("", fmt::format("Measured again: {} tied after the first round; their figures "
                                         "above are of {} more repetitions of {:.2f} s each, {}.",
                                         joined_names(advice.again_labels), kRepetitions, advice.again_window,
                                         tie.empty() ? "which parted them" : "and a tie stands")));
  int shown = 0;
  for (auto& v : advice.ranking.vs) {
    if (&v == &answer || !v.ok || shown == 3) continue;
    if (!shown++) fmt::print("Runner-ups:\n");
    fmt::print("  {} — {}{}\n", v.c->label, trade(answer, v), v.meets ? "" : "; " + v.why);
  }
}

// The text a person reads: the question, the table, what its figures mean, the answer and how to
// measure it again. Exit code: 0 an answer, 1 none.
int print_advice(const Question& q, const Advice& advice) {
  const auto& vs = advice.ranking.vs;
  const Verdict* answer = advice.ranking.answer();
  fmt::print("Question: {}\n\n", question_text(q));
  print_table(q, vs);
  print_cpu_notes(q, vs);
  if (!q.noisy.empty()) print_quiet(vs, answer);
  fmt::print("\n");
  if (!answer) {
    fmt::print("Answer: none of the candidates meets every bound here; the closest is {} (p99 {}, CPU {}).\n",
               vs.front().ok ? vs.front().c->label : "-", us(vs.front().p99_us), us(vs.front().cpu_us));
    return 1;
  }
  print_answer(q, advice, *answer);
  std::string again = "ipclab run " + answer->r->suite + "/" + answer->r->mechanism;
  for (auto& [k, v] : answer->c->bench.params.items())
    if (k == "pattern" || k == "size" || k == "mode" || k == "placement" || k == "rate" || k == "wait")
      again += fmt::format(" -p {}={}", k, v);
  fmt::print(
      "\n{}\n  {} --repetitions 5\n",
      paragraph("", fmt::format("Measured here: {} repetitions of {:.2f} s each, interleaved; medians (p99 "
                                "ranges that overlap, or medians within {:.0f}%, count as a tie, broken by "
                                "CPU). The answer's spread and flags:",
                                kRepetitions, advice.duration_s, kTailTie * 100)),
      again);
  return 0;
}

// Measures the messaging transports that can carry the user's messages and ranks them against the
// user's bounds. Exit code: 0 an answer, 1 none meets the bounds.
int cmd_advise(const AdviseArgs& a, const std::string& cmdline) {
  const Question q = parse_question(a);
  const std::vector<Candidate> cands = candidates(q);
  const std::vector<PlannedBenchmark> benches = runnable(cands);
  const auto model = std::make_shared<CostModel>(CostModel::load(CostModel::default_path()));
  bool rest_for_tie = false;
  const RunOptions opts = round_one(q, benches, *model, rest_for_tie);
  const uint64_t started = now_ns();

  // The store, when asked for: checked before anything is created (core/store/store.hpp).
  std::unique_ptr<store::Store> results_store;
  if (a.store) {
    std::string note;
    results_store = store::Store::open(*a.store, false, store::kDefaultWaitS, &note);
    if (!note.empty()) fmt::print(stderr, "warning: {}\n", note);
  }
  start_owned_run();
  nlohmann::json context = collect_environment(cmdline);
  for (auto& w : context["warnings"]) fmt::print(stderr, "warning: {}\n", output::warning_text(w));
  Advice advice;
  advice.duration_s = opts.duration_s;
  advice.seed = std::random_device{}() & 0x7fffffff;
  fmt::print(stderr,
             "advise: {} candidates, {} repetitions of {:.2f} s each, interleaved (seed {}); about {}{}\n",
             benches.size(), kRepetitions, opts.duration_s, advice.seed,
             duration_text(estimate_plan(benches, opts, *model)),
             rest_for_tie ? ", the rest of the budget to measure a tie again" : "");
  PlanHooks hooks;
  const bool tty = isatty(2);
  hooks.starting = [tty](const PlannedBenchmark& b, const RunOptions&, size_t done, size_t total) {
    if (tty) fmt::print(stderr, "\r\033[K[{}/{}] {}", done + 1, total, b.mech->name);
  };
  advice.records = run_plan(benches, opts, learning_hooks(hooks, model), advice.seed);
  if (tty) fmt::print(stderr, "\r\033[K");
  advice.ranking = rank(q, cands, advice.records);
  if (advice.ranking.parts) measure_tie_again(q, cands, opts, model, hooks, started, advice);
  if (results_store) store_advice(*results_store, context, advice);
  if (a.json) {
    print_json(q, advice, context);
    return advice.ranking.answer() ? 0 : 1;
  }
  return print_advice(q, advice);
}

Runner declare_advise(CLI::App& sub) {
  auto args = std::make_shared<AdviseArgs>();
  AdviseArgs& a = *args;
  text_option(sub, "--size", a.size, "message size in bytes, e.g. 64 or 4K (default 64)")->type_name("BYTES");
  text_option(sub, "--rate", a.rate,
              "messages per second offered, e.g. 50k (default: closed-loop round trips)")
      ->type_name("PER_S");
  text_option(sub, "--sides", a.mode, "threads or processes (default processes)")
      ->type_name("threads|processes");
  text_option(sub, "--placement", a.placement, "same: both sides on one CPU; cross: on two (default cross)")
      ->type_name("same|cross");
  text_option(sub, "--p99-us", a.p99_us, "the p99 latency bound, microseconds")->type_name("US");
  text_option(sub, "--cpu-us", a.cpu_us,
              "the CPU bound per round trip (per message with --rate), microseconds")
      ->type_name("US");
  text_option(sub, "--budget", a.budget,
              "time to spend measuring, up to 1h: seconds (60) or with a unit (90s, 5m), as `run --budget`; "
              "at least what the candidates need at the shortest windows (a smaller one is refused, naming "
              "that least) (default 60s)")
      ->type_name("TIME");
  sub.add_option("--only", a.only,
                 "only these messaging transports (repeatable), e.g. --only pipe --only 'shm_*'");
  sub.add_option("--noisy", a.noisy,
                 "rank by p99 under this interference (repeatable; as run --antagonist, docs/noise.md): "
                 "each repetition paired with a quiet one, so that the answer says what it gives up quiet")
      ->type_name("KIND[@WHERE][:LEVEL]")
      ->allow_extra_args(false);
  text_option(sub, "--store", a.store,
              "add the measurements to this results store (docs/store.md): an SQLite file or postgresql://…")
      ->type_name("PATH");
  flag_once(sub, "--json", a.json, "print the ranking as JSON");
  sub.footer(
      "Examples:\n"
      "  ipclab advise --size 64 --p99-us 50 --sides processes\n"
      "  ipclab advise --size 4K --rate 50k --cpu-us 5 --budget 2m\n"
      "  ipclab advise --only pipe --only 'shm_*' --placement same --budget 30\n"
      "  ipclab advise --placement same --noisy cpu@same --budget 2m\n"
      "Exit: 0 an answer, 1 no candidate meets the bounds, 2 usage error.");

  return [args](const std::string& cmdline) { return cmd_advise(*args, cmdline); };
}

}  // namespace

IPCLAB_COMMAND(Command{
    "advise", "Which messaging transport for your messages? Measures the candidates here and ranks them",
    declare_advise});

}  // namespace ipclab::cli
