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

constexpr size_t kContinuation = 4;  // where a row's status continues on the lines below it

// The columns `s` takes on a terminal: its characters (UTF-8 sequences counted once).
size_t text_columns(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80;
  return n;
}

// The bytes of `s`'s first `cols` characters.
size_t bytes_of_columns(std::string_view s, size_t cols) {
  size_t i = 0;
  for (size_t n = 0; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xc0) != 0x80 && n++ == cols) break;
  return i;
}

// `text` split after each `sep`, each piece with its separator.
std::vector<std::string> pieces_of(const std::string& text, const std::string& sep) {
  std::vector<std::string> out;
  for (size_t pos = 0; pos < text.size();) {
    const size_t next = text.find(sep, pos);
    const size_t end = next == std::string::npos ? text.size() : next + sep.size();
    out.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

std::string rtrim(std::string s) {
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace

std::string wrap_text(const std::string& lead, const std::string& text, size_t width, size_t indent,
                      const std::string& sep) {
  if (!width) return lead + text;
  const size_t room = width > indent ? width - indent : 1;  // a continuation line's
  // The pieces: between separators, and a piece longer than a continuation line between its words.
  std::vector<std::string> pieces;
  for (auto& p : pieces_of(text, sep)) {
    if (sep == " " || text_columns(rtrim(p)) <= room) {
      pieces.push_back(p);
      continue;
    }
    for (auto& w : pieces_of(p, " ")) pieces.push_back(w);
  }
  std::string out, line = lead;
  size_t col = text_columns(lead);
  for (std::string piece : pieces) {
    // A new line where the piece would pass the width and the line holds more than its indent.
    if (col > indent && col + text_columns(rtrim(piece)) > width) {
      out += rtrim(line) + "\n";
      line = std::string(indent, ' ');
      col = indent;
    }
    // A word longer than a whole line: cut, never let through.
    while (text_columns(rtrim(piece)) > width - std::min(col, width - 1)) {
      const size_t cut = bytes_of_columns(piece, width - std::min(col, width - 1));
      out += line + piece.substr(0, cut) + "\n";
      piece.erase(0, cut);
      line = std::string(indent, ' ');
      col = indent;
    }
    line += piece;
    col += text_columns(piece);
  }
  return out + rtrim(line);
}

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
  antagonists_ = antagonists_text(context);
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
    print_wrapped(title_, 0);
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
  std::string line = fmt::format("{:<{}}", name, width_), status;
  for (auto* c : shown_) {
    if (c->format == "name") continue;
    if (c->format == "status")
      status = cell(*c);
    else
      line += fmt::format(" {:>{}}", cell(*c), c->width);
  }
  // The status after the figures; one that would pass the console's width, on the lines below: an
  // ok one's notes broken between them, a failed or skipped one's reason between its words.
  line += "  ";
  if (columns_ && text_columns(line) + text_columns(status) > columns_)
    return rtrim(line) + "\n" +
           wrap_text(std::string(kContinuation, ' '), status, columns_, kContinuation,
                     status.rfind(status_name(Status::Ok), 0) == 0 ? ", " : " ");
  return line + status;
}

void ConsoleReporter::header(const std::string& suite) {
  // On the terminal's width where the names allow; a longer name is then printed whole on a line of
  // its own, its figures on the next (see print_row), never cut.
  const size_t room = columns_ > figures_width() ? columns_ - figures_width() : 0;
  const size_t widest = std::max(widest_[suite], suite.size());
  width_ = std::max(kMinName, columns_ ? std::min(widest, room) : widest);
  const std::string h = row_text(suite, [](const Column& c) { return c.key; });
  const size_t first = text_columns(h.substr(0, h.find('\n')));
  fmt::print(out_, "\n{}\n{}\n", h, std::string(columns_ ? std::min(first + 4, columns_) : first + 4, '-'));
  suite_ = suite;
}

void ConsoleReporter::print_row(const Record& r) {
  if (suite_ != r.suite) header(r.suite);
  std::string name = names_.of(r.name);
  if (medians_ && verbose_ && r.run_type == "aggregate") name += kMedian;
  if (text_columns(name) > width_) {
    fmt::print(out_, "{}\n", wrap_text("", name, columns_, kContinuation));
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
  fmt::print(
      out_, "{}\n",
      wrap_text(std::string(indent, ' '), text, columns_ ? columns_ : kConsoleDefaultColumns, indent + 2));
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
  for (Flag f : record_flags(r)) flags_.insert(f);
  fflush(out_);
}

void ConsoleReporter::end(const std::vector<Record>& records) {
  // The answers once more, at the end, where a long run leaves the reader.
  if (!first_.empty() && rest_begun_) {
    fmt::print(out_, "\n");
    print_wrapped(title_ + " (again)", 0);
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
  if (!antagonists_.empty())
    print_wrapped(fmt::format("Every figure above was measured under antagonists {} (docs/noise.md; each "
                              "record's extra.antagonists says what ran).",
                              antagonists_),
                  0);
  if (!flags_.empty()) fmt::print(out_, "What the flags in the status mean, and what to do:\n");
  for (auto& f : flag_table())
    if (flags_.count(f.flag)) print_wrapped(fmt::format("{}: {}: {}", f.word, f.meaning, f.remedy));
  if (const SinceText noise = inflation_text(records, names_); !noise.lines.empty()) {
    fmt::print(out_, "\n");
    print_wrapped(noise.heading, 0);
    for (auto& line : noise.lines) print_wrapped(line);
  }
  if (const SinceText since = since_text(records, names_); !since.lines.empty()) {
    fmt::print(out_, "\n");
    print_wrapped(since.heading, 0);
    for (auto& line : since.lines) print_wrapped(line);
  }
  fflush(out_);
}

}  // namespace ipclab::output
