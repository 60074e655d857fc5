#include "core/measure/quota.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "core/base/affinity.hpp"
#include "core/base/error.hpp"
#include "core/base/fs.hpp"
#include "core/ownership/journal.hpp"

namespace ipclab {

namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t pos = 0;
  for (size_t c; (c = s.find(sep, pos)) != std::string_view::npos; pos = c + 1)
    parts.push_back(s.substr(pos, c - pos));
  parts.push_back(s.substr(pos));
  return parts;
}

// The words of `s`, split at any white space.
std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> w;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    const size_t start = i;
    while (i < s.size() && !std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    if (i > start) w.push_back(s.substr(start, i - start));
  }
  return w;
}

bool has_word(std::string_view list, std::string_view word, char sep) {
  for (auto w : split(list, sep))
    if (w == word) return true;
  return false;
}

// Whether the white-space separated list `text` (cgroup.controllers, cgroup.subtree_control) has `word`.
bool lists(std::string_view text, std::string_view word) {
  for (auto w : words(text))
    if (w == word) return true;
  return false;
}

// mountinfo escapes a path's space, tab, newline and backslash as \ooo.
std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i)
    if (s[i] == '\\' && i + 3 < s.size() &&
        std::all_of(s.begin() + long(i) + 1, s.begin() + long(i) + 4,
                    [](char c) { return c >= '0' && c <= '7'; })) {
      out += char((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  return out;
}

// The cpu controller's cgroup path in a /proc/<pid>/cgroup text: a v1 hierarchy that lists cpu
// (version 1), or the unified one's "0::" line (version 2); "" when none.
std::string hierarchy_path(std::string_view proc_cgroup, int version) {
  for (auto line : split(proc_cgroup, '\n')) {
    const size_t a = line.find(':'), b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) continue;
    const auto id = line.substr(0, a), controllers = line.substr(a + 1, b - a - 1);
    const bool v2 = id == "0" && controllers.empty();
    if (version == 2 ? v2 : !v2 && has_word(controllers, "cpu", ',')) return std::string(line.substr(b + 1));
  }
  return "";
}

std::string slurp(const std::string& path) {
  try {
    return read_regular_file(path);
  } catch (const std::exception&) {
    return "";
  }
}

bool is_folder(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// Writes `text` to the cgroup file `file`; Skip naming the file, the text and the kernel's answer.
void write_control(const std::string& file, const std::string& text, const char* hint = "") {
  const int fd = open(file.c_str(), O_WRONLY | O_CLOEXEC);
  const bool ok = fd >= 0 && write(fd, text.data(), text.size()) == ssize_t(text.size());
  const int e = errno;
  if (fd >= 0) close(fd);
  if (!ok) throw Skip(fmt::format("quota: {} refused '{}': {}{}", file, text, strerror(e), hint));
}

// Where the cgroup goes, or why it cannot.
struct Place {
  CpuCgroup cg;
  std::string parent;
  std::string why;
};

Place locate() {
  Place p;
  p.cg = find_cpu_cgroup(slurp("/proc/self/cgroup"), slurp("/proc/self/mountinfo"));
  const CpuCgroup& cg = p.cg;
  const std::string fix = "run as root on a host whose cgroup file system is writable";
  if (!cg.why.empty()) {
    p.why = fmt::format(
        "quota: no cgroup hierarchy with the cpu controller here ({}); mount one (cgroup v2 with cpu "
        "enabled, or v1's cpu) or {}",
        cg.why, fix);
    return p;
  }
  if (!is_folder(cg.own)) {
    p.why = fmt::format(
        "quota: this process's cgroup {} is not visible under {} (a container's partial view); {}", cg.own,
        cg.mount, fix);
    return p;
  }
  if (cg.read_only) {
    p.why = fmt::format(
        "quota: the cgroup file system at {} is mounted read-only (a container's); {}, or give the "
        "container a writable, delegated cgroup",
        cg.mount, fix);
    return p;
  }
  if (cg.version == 1) {
    if (!is_folder(cg.own + "/cpu.cfs_quota_us")) {
      p.why = fmt::format(
          "quota: {} has no cpu.cfs_quota_us: the kernel has no CFS bandwidth control "
          "(CONFIG_CFS_BANDWIDTH); run on a kernel built with it",
          cg.own);
      return p;
    }
    p.parent = cg.own;
  } else {
    p.parent = v2_parent(cg.own, cg.mount, slurp);
    if (p.parent.empty()) {
      p.why =
          lists(slurp(cg.mount + "/cgroup.controllers"), "cpu")
              ? fmt::format(
                    "quota: the cpu controller is enabled for no cgroup at or above {} "
                    "(cgroup.subtree_control); enable it: echo +cpu > {}/cgroup.subtree_control (as root)",
                    cg.own, cg.mount)
              : fmt::format(
                    "quota: the cgroup v2 hierarchy at {} has no cpu controller (it is a v1 "
                    "hierarchy's, or not in the kernel); {}",
                    cg.mount, fix);
      return p;
    }
  }
  if (access(p.parent.c_str(), W_OK) != 0)
    p.why = fmt::format(
        "quota: {} is not writable by uid {} ({}); run as root, or in a cgroup delegated to this user",
        p.parent, geteuid(), strerror(errno));
  return p;
}

}  // namespace

std::string v2_parent(const std::string& own, const std::string& mount,
                      const std::function<std::string(const std::string&)>& read) {
  for (std::string dir = own;; dir = folder_of(dir)) {
    if (lists(read(dir + "/cgroup.subtree_control"), "cpu")) return dir;
    if (dir.size() <= mount.size() || dir == "/") return "";
  }
}

uint64_t QuotaSpec::quota_us() const { return uint64_t(std::llround(percent * double(kPeriodUs) / 100.0)); }

std::string QuotaSpec::level_problem(double percent, int cpus) {
  const double most = 100.0 * std::max(cpus, 1);
  if (std::isfinite(percent) && percent >= kMinPercent && percent <= most) return "";
  return fmt::format(
      "quota:{} is not a quota this machine takes; give LEVEL as the percent of one CPU per {} ms "
      "period, from {:g} to {:g} ({} CPU{} here), e.g. quota:50",
      percent, kPeriodUs / 1000, kMinPercent, most, cpus, cpus == 1 ? "" : "s");
}

CpuCgroup find_cpu_cgroup(std::string_view proc_cgroup, std::string_view mountinfo) {
  CpuCgroup cg;
  std::string path = hierarchy_path(proc_cgroup, 1);
  cg.version = path.empty() ? 2 : 1;
  if (path.empty()) path = hierarchy_path(proc_cgroup, 2);
  if (path.empty()) {
    cg.version = 0;
    cg.why = "/proc/self/cgroup names no cgroup with cpu, and no cgroup v2";
    return cg;
  }
  for (auto line : split(mountinfo, '\n')) {
    // "id parent major:minor root mount-point options [optional...] - fstype source super-options"
    const size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    const auto head = words(line.substr(0, dash)), tail = words(line.substr(dash + 3));
    if (head.size() < 6 || tail.size() < 3) continue;
    const bool fits =
        cg.version == 1 ? tail[0] == "cgroup" && has_word(tail[2], "cpu", ',') : tail[0] == "cgroup2";
    if (!fits) continue;
    const std::string root = unescape(head[3]);
    std::string rest;  // the path under the mount's root
    if (root == "/")
      rest = path;
    else if (path == root)
      rest = "/";
    else if (path.rfind(root + "/", 0) == 0)
      rest = path.substr(root.size());
    else
      continue;  // a mount of another part of the hierarchy
    cg.mount = unescape(head[4]);
    cg.root = root;
    cg.own = rest == "/" ? cg.mount : cg.mount + rest;
    cg.read_only = has_word(head[5], "ro", ',');
    return cg;
  }
  cg.why = fmt::format("the cgroup {} of its cgroup {} hierarchy is mounted nowhere this process sees", path,
                       cg.version == 1 ? "v1 cpu" : "v2");
  cg.version = 0;
  return cg;
}

std::string cgroup_folder(const CpuCgroup& where, std::string_view proc_cgroup) {
  const std::string path = hierarchy_path(proc_cgroup, where.version);
  if (path.empty() || where.mount.empty()) return "";
  if (where.root == "/" || where.root.empty()) return path == "/" ? where.mount : where.mount + path;
  if (path == where.root) return where.mount;
  if (path.rfind(where.root + "/", 0) == 0) return where.mount + path.substr(where.root.size());
  return "";
}

CpuStat parse_cpu_stat(std::string_view text) {
  CpuStat s;
  bool periods = false, throttled = false, time = false;
  for (auto line : split(text, '\n')) {
    const auto w = words(line);
    if (w.size() != 2) continue;
    uint64_t v = 0;
    for (char c : w[1]) {
      if (c < '0' || c > '9') return s;
      v = v * 10 + uint64_t(c - '0');
    }
    if (w[0] == "nr_periods") s.nr_periods = v, periods = true;
    if (w[0] == "nr_throttled") s.nr_throttled = v, throttled = true;
    if (w[0] == "throttled_time") s.throttled_us = v / 1000, time = true;  // v1: ns
    if (w[0] == "throttled_usec") s.throttled_us = v, time = true;         // v2
  }
  s.ok = periods && throttled && time;
  return s;
}

std::string Quota::problem() { return locate().why; }

Quota::Quota(const QuotaSpec& spec, const Sides& sides) : spec_(spec), sides_(sides) {
  // The caller checks LEVEL with the rest of the input; this is the backstop (the kernel's EINVAL
  // for a quota under 1 ms would read as another fault).
  if (const std::string why = QuotaSpec::level_problem(spec.percent, int(allowed_cpus().size()));
      !why.empty())
    throw UsageError(why);
  const Place p = locate();
  if (!p.why.empty()) throw Skip(p.why);
  version_ = p.cg.version;
  try {
    path_ = ipc::create_cgroup(p.parent);
  } catch (const std::system_error& e) {
    throw Skip(fmt::format(
        "quota: cannot make a cgroup in {}: {}; run as root, or in a cgroup delegated to this user", p.parent,
        e.code().message()));
  }
  try {
    const std::string quota = std::to_string(spec_.quota_us()), period = std::to_string(QuotaSpec::kPeriodUs);
    if (version_ == 1) {
      write_control(path_ + "/cpu.cfs_period_us", period);
      write_control(path_ + "/cpu.cfs_quota_us", quota,
                    " (a quota inside a cgroup of a lower quota: ask for at most what it allows)");
    } else {
      write_control(path_ + "/cpu.max", quota + " " + period);
    }
    // v2 moves whole processes only (see the file's comment): a thread side puts this process in.
    std::vector<pid_t> processes = sides_.processes;
    if (version_ == 2 && !sides_.threads.empty()) {
      whole_process_ = true;
      processes.push_back(getpid());
    }
    std::sort(processes.begin(), processes.end());
    processes.erase(std::unique(processes.begin(), processes.end()), processes.end());
    sides_.processes = processes;
    auto enter = [&](pid_t id, bool process, const std::string& proc) {
      const std::string origin = cgroup_folder(p.cg, slurp(proc));
      if (origin.empty())
        throw Skip(fmt::format(
            "quota: the cgroup of {} {} cannot be read from {} (it has ended, or lies outside {})",
            process ? "process" : "thread", id, proc, p.cg.mount));
      write_control(path_ + (process ? "/cgroup.procs" : "/tasks"), std::to_string(id));
      moved_.push_back({id, process, origin});
    };
    for (pid_t pid : processes) enter(pid, true, fmt::format("/proc/{}/cgroup", pid));
    if (version_ == 1)
      for (pid_t tid : sides_.threads)
        enter(tid, false, fmt::format("/proc/{}/task/{}/cgroup", getpid(), tid));
  } catch (...) {
    stopped_ = true;
    try {
      move_back();
      ipc::remove(ipc::Kind::Cgroup, path_);
    } catch (const std::exception& e) {
      fmt::print(stderr, "ipclab: {}\n", printable(e.what()));
    }
    throw;
  }
  at_open_ = read_stat();
}

Quota::~Quota() {
  if (stopped_) return;
  try {
    stop();
  } catch (const std::exception& e) {
    fmt::print(stderr, "ipclab: {}\n", printable(e.what()));
  }
}

CpuStat Quota::read_stat() const { return parse_cpu_stat(slurp(path_ + "/cpu.stat")); }

void Quota::open_window() {
  at_open_ = read_stat();
  closed_ = false;
}

void Quota::close_window() {
  at_close_ = read_stat();
  closed_ = true;
}

// Each task back where it came from, the last moved first; one that has ended meanwhile is gone
// from the cgroup already (ESRCH).
void Quota::move_back() {
  std::string failed;
  for (auto it = moved_.rbegin(); it != moved_.rend(); ++it) {
    const std::string file = it->origin + (it->process ? "/cgroup.procs" : "/tasks"),
                      id = std::to_string(it->id);
    const int fd = open(file.c_str(), O_WRONLY | O_CLOEXEC);
    const bool ok = fd >= 0 && write(fd, id.data(), id.size()) == ssize_t(id.size());
    const int e = errno;
    if (fd >= 0) close(fd);
    if (!ok && e != ESRCH)
      failed += fmt::format("{}{} to {} ({})", failed.empty() ? "" : ", ", id, file, strerror(e));
  }
  moved_.clear();
  if (!failed.empty()) fmt::print(stderr, "ipclab: quota: could not move back {}\n", printable(failed));
}

nlohmann::json Quota::stop() {
  if (!closed_) close_window();
  stopped_ = true;
  move_back();
  ipc::remove(ipc::Kind::Cgroup, path_);  // what a side started inside goes to the nearest ancestor
  const bool ok = at_open_.ok && at_close_.ok;
  auto delta = [&](uint64_t a, uint64_t b) {
    return ok ? nlohmann::json(b - std::min(a, b)) : nlohmann::json();
  };
  return {
      {"cgroup_version", version_},
      {"path", path_},
      {"percent", spec_.percent},
      {"quota_us", spec_.quota_us()},
      {"period_us", QuotaSpec::kPeriodUs},
      {"cpus_equiv", double(spec_.quota_us()) / double(QuotaSpec::kPeriodUs)},
      {"nr_periods", delta(at_open_.nr_periods, at_close_.nr_periods)},
      {"nr_throttled", delta(at_open_.nr_throttled, at_close_.nr_throttled)},
      {"throttled_us", delta(at_open_.throttled_us, at_close_.throttled_us)},
      {"sides",
       {{"threads", version_ == 1 ? sides_.threads : std::vector<pid_t>{}},
        {"processes", sides_.processes},
        {"whole_process", whole_process_}}},
  };
}

namespace {

// The `quota` antagonist: no process of its own; the sides go under the quota as they exist
// (attach, before their warm-up) and come out at stop. Where no quota can be set, the point is
// skipped before any worker starts.
class QuotaAntagonist final : public Antagonist {
 public:
  explicit QuotaAntagonist(const AntagonistSpec& spec) : spec_(spec) {
    if (auto why = Quota::problem(); !why.empty()) throw Skip("quota: " + why);
  }
  ~QuotaAntagonist() override { stop(); }
  std::string await_running(double) override { return ""; }
  void attach(const SideTasks& sides) override { quota_.emplace(QuotaSpec{spec_.level}, sides); }
  void window_open() override {
    if (quota_) quota_->open_window();
  }
  std::string lost() override { return ""; }
  std::string window_close(double) override {
    if (!quota_) return "the sides were never put under the quota";
    quota_->close_window();
    return "";
  }
  void stop() override {
    if (!quota_) return;
    try {
      figures_ = quota_->stop();
    } catch (const std::exception& e) {  // the cgroup stays journaled for the run's end
      figures_ = {{"error", e.what()}};
    }
    quota_.reset();
  }
  nlohmann::json record() const override {
    nlohmann::json j{{"kind", spec_.kind}, {"text", spec_.text()}, {"level", spec_.level}, {"windows", 1}};
    for (auto& [k, v] : figures_.items()) j[k] = v;
    return j;
  }

 private:
  AntagonistSpec spec_;
  std::optional<Quota> quota_;
  nlohmann::json figures_ = nlohmann::json::object();
};

}  // namespace

std::unique_ptr<Antagonist> start_quota(const AntagonistSpec& spec, const AntagonistTarget&) {
  return std::make_unique<QuotaAntagonist>(spec);
}

}  // namespace ipclab
