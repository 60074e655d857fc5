// CSV: the leading columns suites declare (e.g. the messaging reference's), then ours; and its
// reporter, which appends the run's rows at the end. docs/csv.md names every column: ours are
// snake_case, a unit as the last word (_ns, _us, _s, _per_s, _per_op); only the reference's 20
// keep its camelCase names.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <set>
#include <system_error>

#include "core/base/error.hpp"
#include "core/base/fdio.hpp"
#include "core/model/mechanism.hpp"
#include "core/output/reporter.hpp"

#include <fmt/format.h>

namespace ipclab::output {

namespace {

const std::vector<std::string> kCommonColumns = {
    "name", "suite", "mechanism", "run_type", "repetition", "status", "ops", "bytes", "wall_s",
    "time_per_op_ns", "ops_per_s", "mib_per_s", "lat_kind", "lat_p50_ns", "lat_p99_ns", "lat_p999_ns",
    "lat_max_ns", "cpu_user_s", "cpu_sys_s", "cpu_per_op_ns", "ctx_vol", "ctx_invol", "ctx_per_op",
    // The kernel's counts per op (Record::kernel), empty where they were not taken.
    "syscalls_per_op", "ctx_switches_per_op", "cpu_migrations_per_op", "page_faults_per_op", "placement",
    "cpus_observed", "sent", "received", "lost", "duplicated", "corrupt", "error",
    // Added since: at the end, so that a reader that takes the columns by position reads the rest
    // as before. Steal over the window (Record::steal), empty where not measured.
    "steal_s", "steal_per_op_ns", "steal_share"};

std::string csv_escape(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string num(double v) {
  if (!std::isfinite(v)) return "";
  return fmt::format("{:.6g}", v);
}

std::string kernel_per_op(const Record& r, const char* key) {
  const nlohmann::json v = r.kernel.value("per_op", nlohmann::json::object()).value(key, nlohmann::json());
  return v.is_number() ? num(v.get<double>()) : "";
}

std::vector<std::string> common_cells(const Record& r) {
  double ops_s = r.wall_s > 0 ? double(r.ops) / r.wall_s : 0;
  double mib_s = r.wall_s > 0 ? double(r.bytes) / r.wall_s / 1048576.0 : 0;
  auto& l = r.latency;
  return {r.name,
          r.suite,
          r.mechanism,
          r.run_type,
          std::to_string(r.repetition),
          status_name(r.status),
          std::to_string(r.ops),
          std::to_string(r.bytes),
          num(r.wall_s),
          num(r.time_per_op_ns()),
          num(ops_s),
          num(mib_s),
          l ? l->kind : "",
          l ? std::to_string(l->p50) : "",
          l ? std::to_string(l->p99) : "",
          l ? std::to_string(l->p999) : "",
          l ? std::to_string(l->max) : "",
          num(r.cpu.user_s),
          num(r.cpu.sys_s),
          num(r.cpu_per_op_ns()),
          std::to_string(r.cpu.ctx_vol),
          std::to_string(r.cpu.ctx_invol),
          num(r.ctx_per_op()),
          kernel_per_op(r, "syscalls"),
          kernel_per_op(r, "context_switches"),
          kernel_per_op(r, "cpu_migrations"),
          kernel_per_op(r, "page_faults"),
          r.placement.layout,
          observed_text(r.placement),
          std::to_string(r.integrity.sent),
          std::to_string(r.integrity.received),
          std::to_string(r.integrity.lost),
          std::to_string(r.integrity.duplicated),
          std::to_string(r.integrity.corrupt),
          r.error,
          r.steal ? num(r.steal->steal_s) : "",
          r.steal ? num(r.steal_per_op_ns()) : "",
          r.steal ? num(r.steal->share()) : ""};
}

}  // namespace

std::vector<std::string> csv_header(const std::set<std::string>& suites) {
  std::vector<std::string> h;
  for (auto& s : Registry::get().suites())
    if (!s.csv_columns.empty() && suites.count(s.name))
      h.insert(h.end(), s.csv_columns.begin(), s.csv_columns.end());
  h.insert(h.end(), kCommonColumns.begin(), kCommonColumns.end());
  return h;
}

std::vector<std::string> csv_header(const std::vector<Record>& records) {
  std::set<std::string> suites;
  for (auto& r : records) suites.insert(r.suite);
  return csv_header(suites);
}

std::string csv_rows(const std::vector<std::string>& header, const std::vector<Record>& records) {
  std::string out;
  size_t lead = header.size() - kCommonColumns.size();
  for (auto& r : records) {
    std::vector<std::string> cells(lead);
    // Leading columns: the row's own suite fills its block, other suites' blocks stay empty.
    size_t at = 0;
    for (auto& s : Registry::get().suites()) {
      if (s.csv_columns.empty()) continue;
      if (at >= lead || header[at] != s.csv_columns.front()) continue;
      if (r.suite == s.name && s.csv_row) {
        auto row = s.csv_row(r);
        for (size_t i = 0; i < row.size() && i < s.csv_columns.size(); ++i) cells[at + i] = row[i];
      }
      at += s.csv_columns.size();
    }
    auto common = common_cells(r);
    cells.insert(cells.end(), common.begin(), common.end());
    std::string line;
    for (size_t i = 0; i < cells.size(); ++i) line += (i ? "," : "") + csv_escape(cells[i]);
    out += line + "\n";
  }
  return out;
}

namespace {

std::string header_line(const std::vector<std::string>& header) {
  std::string line;
  for (size_t i = 0; i < header.size(); ++i) line += (i ? "," : "") + header[i];
  return line;
}

// The first line of an open CSV file ("" when it is empty).
std::string first_line(int fd) {
  const std::string head = read_from_start(fd, '\n');
  return head.substr(0, head.find('\n'));
}

UsageError other_columns(const std::string& path) {
  return UsageError(fmt::format(
      "--csv {}: the file has other columns (another suite mix); choose another file", brief(path)));
}

}  // namespace

void check_csv(const std::string& path, const std::set<std::string>& suites) {
  // Never blocking on a FIFO planted there since check_target looked (O_NONBLOCK).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return;  // new, or refused by check_target
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw UsageError(fmt::format("--csv {} is not a regular file; choose another name", path));
  }
  const std::string head = first_line(fd);
  ::close(fd);
  if (!head.empty() && head != header_line(csv_header(suites))) throw other_columns(path);
}

// Rows are appended whole, under an exclusive lock on the file, by one descriptor opened with
// O_APPEND and without following a link: runs appending to one file at once lose no row, and
// the header is written once, by whichever run finds the file empty.
void append_csv(const std::string& path, const std::vector<Record>& records) {
  const auto header = csv_header(records);
  // O_NONBLOCK: a FIFO planted at the name is refused below rather than waited on (a regular
  // file's reads and writes ignore the flag).
  int fd =
      ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd >= 0)
    ::fchmod(fd, 0644);
  else if (errno == EEXIST)
    fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    throw std::system_error(errno, std::generic_category(),
                            "--csv " + path + (errno == ELOOP ? " (a symbolic link)" : ""));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }  // also drops the lock
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw UsageError(fmt::format("--csv {} is not a regular file; choose another name", brief(path)));
  if (::flock(fd, LOCK_EX) != 0)
    throw std::system_error(errno, std::generic_category(), "lock --csv " + path);
  std::string text;
  const off_t before = ::fstat(fd, &st) == 0 ? st.st_size : -1;  // cut back to it should a write fail
  const std::string head = first_line(fd);
  if (head.empty())
    text = header_line(header) + "\n";
  else if (head != header_line(header))
    throw other_columns(path);
  else if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    char last = '\n';
    if (::pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n') text = "\n";  // a torn line stays its own
  }
  text += csv_rows(header, records);
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // Rows are appended whole or not at all: what went in of them is cut back (under the lock).
      const int e = n < 0 ? errno : EIO;
      const bool cut = before >= 0 && ::ftruncate(fd, before) == 0;
      throw RunError(fmt::format("--csv {}: rows not appended{}: {}", path,
                                 cut ? "" : " (and a part of them could not be cut back)", write_failure(e)));
    }
    done += size_t(n);
  }
}

CsvReporter::CsvReporter(std::string path, const std::set<std::string>& suites, bool folder_is_new)
    : path_(std::move(path)) {
  if (folder_is_new) return;  // a new --out folder holds no file yet
  check_target("--csv", path_);
  check_csv(path_, suites);
  // An existing file must take the rows: opened for appending now (writing nothing), so that a
  // file the run could not append to is refused before the run, not after it.
  const int fd = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0)
    ::close(fd);
  else if (errno != ENOENT)
    throw UsageError(fmt::format("--csv {}: cannot append to it ({}); choose a file you can write",
                                 brief(path_), strerror(errno)));
}

void CsvReporter::end(const std::vector<Record>& records) {
  append_csv(path_, records);
  fmt::print(stderr, "wrote {}\n", path_);
}

}  // namespace ipclab::output
