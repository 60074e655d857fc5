// The console table, in the manner of Google Benchmark's: a row per record as it completes, each
// benchmark under its table name (table_names), in the columns every result table has (columns()).
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <functional>

#include "core/output/reporter.hpp"

#include <fmt/format.h>

namespace ipclab::output {

namespace {

constexpr const char* kMedian = " (median)";
constexpr size_t kMinName = 20;
constexpr size_t kStatus = 6;  // room kept for the status ("ok" mostly)

std::string row_name(const TableNames& names, const Record& r) {
  return names.of(r.name) + (r.run_type == "aggregate" ? kMedian : "");
}

// What a row holds after the name: a space and each figure column, then two spaces and the status.
size_t figures_width() {
  size_t w = 2 + kStatus;
  for (auto& c : columns())
    if (c.width > 0) w += 1 + size_t(c.width);
  return w;
}

// A row: the name padded to `width`, each figure column right-aligned, the status last.
std::string row_text(const std::string& name, size_t width,
                     const std::function<std::string(const Column&)>& cell) {
  std::string line = fmt::format("{:<{}}", name, width);
  for (auto& c : columns()) {
    if (c.format == "name") continue;
    line += c.format == "status" ? "  " + cell(c) : fmt::format(" {:>{}}", cell(c), c.width);
  }
  return line;
}

}  // namespace

std::string warning_text(const nlohmann::json& w) {
  return fmt::format("{} — {}", w.value("message", ""), w.value("remedy", ""));
}

size_t terminal_columns(FILE* out) {
  winsize ws{};
  if (!isatty(fileno(out)) || ioctl(fileno(out), TIOCGWINSZ, &ws) != 0) return 0;
  return ws.ws_col;
}

void ConsoleReporter::begin(const nlohmann::json& context, const std::vector<PlannedBenchmark>& plan) {
  names_ = table_names(plan);
  // "auto" (--repetitions auto) runs five or more.
  const auto reps = context.value("repetitions", nlohmann::json(1));
  const bool medians = reps.is_string() || (reps.is_number() && reps.get<int>() > 1);
  size_t widest = 0;
  for (auto& [_, name] : names_.short_name)
    widest = std::max(widest, name.size() + (medians ? std::string(kMedian).size() : 0));
  // On a terminal the rows fit its width where they can; a longer name is then printed whole on a
  // line of its own, its figures on the next (see record), never cut.
  const size_t room = columns_ > figures_width() ? columns_ - figures_width() : 0;
  width_ = std::max(kMinName, columns_ ? std::min(widest, room) : widest);
  // The default preset's first answer is a table of its own, under its title, before the rest.
  for (auto& b : plan)
    if (!b.first.empty()) first_.insert(b.name);
  if (!plan.empty() && !plan.front().first.empty()) fmt::print(out_, "{}\n\n", plan.front().first);
  header();
}

void ConsoleReporter::header() const {
  std::string h = row_text(columns().front().key, width_, [](const Column& c) { return c.key; });
  fmt::print(out_, "{}\n{}\n", h, std::string(h.size() + 4, '-'));
  fflush(out_);
}

void ConsoleReporter::record(const Record& r) {
  if (!first_.empty() && !rest_begun_ && !first_.count(r.name)) {
    rest_begun_ = true;
    fmt::print(out_, "\nThe rest of the run\n\n");
    header();
  }
  std::string name = row_name(names_, r);
  if (name.size() > width_) {
    fmt::print(out_, "{}\n", name);
    name.clear();
  }
  const nlohmann::json j = to_json(r);
  fmt::print(out_, "{}\n", row_text(name, width_, [&](const Column& c) {
               return c.format == "status" ? status_text(r) : figure_cell(c, j);
             }));
  fflush(out_);
}

}  // namespace ipclab::output
