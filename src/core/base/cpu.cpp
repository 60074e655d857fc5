#include "core/base/cpu.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <string>

#include "core/base/fdio.hpp"

namespace ipclab {

namespace {

// The next unsigned number of `text` from `at` (blanks before it skipped); none at its end or at
// anything else.
std::optional<uint64_t> next_number(std::string_view text, size_t& at) {
  while (at < text.size() && text[at] == ' ') ++at;
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data() + at, text.data() + text.size(), v);
  if (ec != std::errc()) return std::nullopt;
  at = size_t(end - text.data());
  return v;
}

}  // namespace

StealReading parse_steal(std::string_view text) {
  StealReading r;
  for (size_t start = 0; start < text.size();) {
    const size_t nl = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, nl - start);
    start = nl + 1;
    if (line.substr(0, 3) != "cpu") continue;
    size_t at = 3;
    int cpu = -1;  // -1: the `cpu` line of every CPU
    if (at < line.size() && line[at] != ' ') {
      const auto n = next_number(line, at);
      if (!n || *n > 1'000'000 || (at < line.size() && line[at] != ' ')) continue;
      cpu = int(*n);
    }
    // user nice system idle iowait irq softirq steal [guest guest_nice]: guest time is in user's.
    uint64_t f[8] = {};
    int read = 0;
    for (; read < 8; ++read) {
      const auto v = next_number(line, at);
      if (!v) break;
      f[read] = *v;
    }
    if (read < 7) continue;  // not a line of figures
    StealReading::Line l;
    if (read == 8) l.steal = f[7];
    l.busy = f[0] + f[1] + f[2] + f[5] + f[6] + f[7];
    l.irq = f[5];
    l.softirq = f[6];
    if (cpu < 0) {
      r.all = l;
    } else {
      if (r.cpu.size() <= size_t(cpu)) r.cpu.resize(size_t(cpu) + 1);
      r.cpu[size_t(cpu)] = l;
    }
  }
  return r;
}

StealReading read_steal() {
  const int fd = ::open("/proc/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  const std::string text = read_from_start(fd);
  ::close(fd);
  return parse_steal(text);
}

double tick_s() {
  static const double tick = [] {
    const long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? 1.0 / double(hz) : 0.01;  // USER_HZ is 100 wherever sysconf cannot say
  }();
  return tick;
}

std::optional<Steal> steal_between(const StealReading& a, const StealReading& b, const std::vector<int>& cpus,
                                   double wall_s) {
  if (cpus.empty()) return std::nullopt;
  uint64_t ticks = 0, irq = 0, softirq = 0;
  auto grown = [](uint64_t from, uint64_t to) { return to > from ? to - from : 0; };
  for (int c : cpus) {
    const size_t i = size_t(c);
    if (c < 0 || i >= a.cpu.size() || i >= b.cpu.size() || !a.cpu[i] || !b.cpu[i] || !a.cpu[i]->steal ||
        !b.cpu[i]->steal)
      return std::nullopt;
    ticks += grown(*a.cpu[i]->steal, *b.cpu[i]->steal);
    irq += grown(a.cpu[i]->irq, b.cpu[i]->irq);
    softirq += grown(a.cpu[i]->softirq, b.cpu[i]->softirq);
  }
  Steal s;
  s.steal_s = double(ticks) * tick_s();
  s.irq_s = double(irq) * tick_s();
  s.softirq_s = double(softirq) * tick_s();
  s.capacity_s = std::max(0.0, wall_s) * double(cpus.size());
  s.resolution_s = double(cpus.size()) * tick_s();
  s.cpus = cpus;
  return s;
}

std::optional<SchedStat> read_schedstat(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  const std::string text = read_from_start(fd);
  ::close(fd);
  size_t at = 0;
  const auto on_cpu = next_number(text, at);
  const auto wait = next_number(text, at);
  if (!on_cpu || !wait) return std::nullopt;
  return SchedStat{*on_cpu, *wait};
}

std::optional<SchedStat> process_schedstat(int pid) {
  const std::string task = pid > 0 ? "/proc/" + std::to_string(pid) + "/task" : "/proc/self/task";
  DIR* d = opendir(task.c_str());
  if (!d) return std::nullopt;
  std::optional<SchedStat> sum;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    if (auto s = read_schedstat((task + "/" + e->d_name + "/schedstat").c_str())) {
      if (!sum) sum = SchedStat{};
      *sum += *s;
    }
  }
  closedir(d);
  return sum;
}

}  // namespace ipclab
