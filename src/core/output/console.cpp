// The console table, in the manner of Google Benchmark's: a row per point as it completes (its
// median when there are repetitions; each repetition too with --verbose), under a header per suite
// in the columns every result table has (columns()); at the end, the first answer again and what
// the row's latency kinds and flags mean.
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <functional>

#include "core/base/params.hpp"
#include "core/output/reporter.hpp"

#include <fmt/format.h>

namespace ipclab::output {

namespace {

constexpr const char* kMedian = " (median)";
constexpr size_t kMinName = 20;
constexpr size_t kStatus = 8;  // room kept for the status: "ok ±1.2%" mostly

// What a flag (status_text's word) means and what to do about it: one line each.
const std::vector<std::pair<std::string, std::string>> kFlagRemedies = {
    {"non-steady",
     "the window's time slices drifted (a trend or a step): lengthen the window (--duration 1) or "
     "stop other work, and re-run"},
    {"bimodal repetitions",
     "the repetitions fell into two clusters (a placement or frequency change between them): pin "
     "the sides (-p placement=cross, --cpus) and re-run with --repetitions 7"},
    {"bimodal",
     "the window's time slices fell into two levels: pin the sides (-p placement=cross, --cpus) "
     "and re-run"},
    {"steal",
     "the hypervisor took CPU time from this VM during the window: re-run when the host is quieter, "
     "or on a machine with dedicated vCPUs"},
    {"CI target",
     "the repetitions' interval stayed wider than --ci-target: raise --max-repetitions or "
     "lengthen the window (--duration)"},
    {"counters unavailable", "the kernel refused a counter: `ipclab env` says why and how to allow it"},
};

}  // namespace

std::string warning_text(const nlohmann::json& w) {
  return fmt::format("{} — {}", w.value("message", ""), w.value("remedy", ""));
}

size_t terminal_columns(FILE* out) {
  winsize ws{};
  if (!isatty(fileno(out)) || ioctl(fileno(out), TIOCGWINSZ, &ws) != 0) return 0;
  return ws.ws_col;
}

size_t console_columns(FILE* out) {
  if (const size_t tty = terminal_columns(out)) return tty;
  if (const char* env = std::getenv("COLUMNS"))
    if (auto v = parse_integer(env); v && *v >= 40 && *v <= 1000) return size_t(*v);
  return kConsoleDefaultColumns;
}

bool ConsoleReporter::shown(const Record& r) const {
  return verbose_ || !medians_ || r.run_type == "aggregate";
}

void ConsoleReporter::begin(const nlohmann::json& context, const std::vector<PlannedBenchmark>& plan) {
  names_ = table_names(plan);
  // "auto" (--repetitions auto) runs five or more.
  const auto reps = context.value("repetitions", nlohmann::json(1));
  medians_ = reps.is_string() || (reps.is_number() && reps.get<int>() > 1);
  shown_.clear();
  for (auto& c : columns())
    if (c.needs.empty() || context.value(c.needs, false)) shown_.push_back(&c);
  // Each suite's rows are as wide as its own widest name, not the run's.
  widest_.clear();
  for (auto& b : plan) {
    const size_t w = names_.of(b.name).size() + (medians_ && verbose_ ? std::string(kMedian).size() : 0);
    widest_[b.mech->suite] = std::max(widest_[b.mech->suite], w);
  }
  // The default preset's first answer is a table of its own, under its title, before the rest.
  for (auto& b : plan)
    if (!b.first.empty()) first_.insert(b.name);
  if (!plan.empty() && !plan.front().first.empty()) {
    title_ = plan.front().first;
    fmt::print(out_, "{}\n", title_);
  }
}

size_t ConsoleReporter::figures_width() const {
  size_t w = 2 + kStatus;
  for (auto* c : shown_)
    if (c->width > 0) w += 1 + size_t(c->width);
  return w;
}

std::string ConsoleReporter::row_text(const std::string& name,
                                      const std::function<std::string(const Column&)>& cell) const {
  std::string line = fmt::format("{:<{}}", name, width_);
  for (auto* c : shown_) {
    if (c->format == "name") continue;
    line += c->format == "status" ? "  " + cell(*c) : fmt::format(" {:>{}}", cell(*c), c->width);
  }
  return line;
}

void ConsoleReporter::header(const std::string& suite) {
  // On the terminal's width where the names allow; a longer name is then printed whole on a line of
  // its own, its figures on the next (see print_row), never cut.
  const size_t room = columns_ > figures_width() ? columns_ - figures_width() : 0;
  const size_t widest = std::max(widest_[suite], suite.size());
  width_ = std::max(kMinName, columns_ ? std::min(widest, room) : widest);
  std::string h = row_text(suite, [](const Column& c) { return c.key; });
  while (!h.empty() && h.back() == ' ') h.pop_back();
  fmt::print(out_, "\n{}\n{}\n", h, std::string(std::min(h.size() + 4, std::max(columns_, h.size())), '-'));
  suite_ = suite;
}

void ConsoleReporter::print_row(const Record& r) {
  if (suite_ != r.suite) header(r.suite);
  std::string name = names_.of(r.name);
  if (medians_ && verbose_ && r.run_type == "aggregate") name += kMedian;
  if (name.size() > width_) {
    fmt::print(out_, "{}\n", name);
    name.clear();
  }
  const nlohmann::json j = to_json(r);
  std::string line = row_text(
      name, [&](const Column& c) { return c.format == "status" ? status_text(r) : figure_cell(c, j); });
  fmt::print(out_, "{}\n", line);
}

void ConsoleReporter::print_wrapped(const std::string& text, size_t indent) const {
  // Words to the console's width (kConsoleDefaultColumns where it has none), later lines indented
  // two more than the first.
  const size_t width = columns_ ? columns_ : kConsoleDefaultColumns;
  std::string line(indent, ' ');
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (line.size() > indent + 2 && line.size() + 1 + word.size() > width) {
      fmt::print(out_, "{}\n", line);
      line = std::string(indent + 2, ' ');
    }
    line += (line.size() > indent && line.back() != ' ' ? " " : "") + word;
    start = end + 1;
  }
  fmt::print(out_, "{}\n", line);
}

void ConsoleReporter::record(const Record& r) {
  if (!shown(r)) return;
  if (!first_.empty() && !rest_begun_ && !first_.count(r.name)) {
    rest_begun_ = true;
    fmt::print(out_, "\nThe rest of the run\n");
    suite_.clear();
  }
  print_row(r);
  // What the end explains: the latency kinds and the flags the rows carry.
  if (r.latency && !r.latency->kind.empty()) kinds_.insert(r.latency->kind);
  const std::string status = status_text(r);
  for (auto& [flag, _] : kFlagRemedies)
    if (status.find(flag) != std::string::npos) flags_.insert(flag);
  fflush(out_);
}

void ConsoleReporter::end(const std::vector<Record>& records) {
  // The answers once more, at the end, where a long run leaves the reader.
  if (!first_.empty() && rest_begun_) {
    fmt::print(out_, "\n{} (again)\n", title_);
    suite_.clear();
    for (auto& r : records)
      if (first_.count(r.name) && (medians_ ? r.run_type == "aggregate" : true)) print_row(r);
  }
  // Each on a line of its own, wrapped to the table's width.
  if (!kinds_.empty()) fmt::print(out_, "\nWhat p50 and p99 measure, as the latency column names it:\n");
  for (auto& k : kinds_) print_wrapped(latency_kind_text(k) + ": " + latency_kind_meaning(k));
  if (medians_ && !verbose_)
    print_wrapped(
        "Each row is the median of its repetitions, every column its own median; ± is the 95% "
        "interval of time/op; --verbose prints each repetition.",
        0);
  if (!flags_.empty()) fmt::print(out_, "What the flags in the status mean, and what to do:\n");
  for (auto& [flag, remedy] : kFlagRemedies)
    if (flags_.count(flag)) print_wrapped(flag + ": " + remedy);
  fflush(out_);
}

}  // namespace ipclab::output
