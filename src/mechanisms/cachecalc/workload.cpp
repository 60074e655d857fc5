#include "mechanisms/cachecalc/workload.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <ctime>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "core/clock.hpp"
#include "core/session.hpp"

namespace ipclab::cachecalc {

const std::vector<std::string>& keys() {
  static const std::vector<std::string> k = [] {
    std::vector<std::string> v;
    for (int i = 0; i < kKeys; ++i) v.push_back("hello" + std::to_string(i));
    return v;
  }();
  return k;
}

Cache fresh_cache(std::span<const std::string> subset) {
  Cache c;
  for (const auto& k : subset) c[k];
  return c;
}

int64_t parse_value(const std::string& v) {
  if (v.empty()) return kEmpty;
  int64_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || p != v.data() + v.size()) return -1;  // garbage never verifies
  return x;
}

void calc(Cache& c, std::span<const std::string> subset) {
  for (const auto& k : subset) {
    std::string& v = c[k];
    v = std::to_string(parse_value(v) + 1);
  }
}

std::string verify(const Cache& c, int tasks, std::span<const std::string> subset) {
  const int64_t want = kEmpty + 2 * int64_t(tasks);
  for (const auto& k : subset) {
    auto it = c.find(k);
    if (it == c.end()) return fmt::format("cachecalc: key {} missing from the map", k);
    if (parse_value(it->second) != want)
      return fmt::format(
          "cachecalc: key {} holds \"{}\" after {} tasks, expected {} (lost or "
          "duplicated updates: the calc was not serialised)",
          k, it->second, tasks, want);
  }
  return "";
}

void sleep_delay(int64_t us) {
  timespec ts{.tv_sec = time_t(us / 1000000), .tv_nsec = long(us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

DevZero::DevZero() : fd_(::open("/dev/zero", O_RDONLY | O_CLOEXEC)) {
  if (fd_ < 0) throw std::system_error(errno, std::generic_category(), "open /dev/zero");
}
DevZero::~DevZero() { ::close(fd_); }

void DevZero::delay(int64_t us) {
  char buf[64];
  const uint64_t end = now_ns() + uint64_t(us) * 1000;
  do {
    if (::read(fd_, buf, sizeof buf) < 0)
      throw std::system_error(errno, std::generic_category(), "read /dev/zero");
  } while (now_ns() < end);
}

ParamSpec delay_param() {
  return {.name = "delay_us",
          .type = ParamType::Int,
          .def = "8",
          .help = "the delay between a task's two calcs, in microseconds (the reference's /8 and /64)",
          .quick = {"8", "64"},
          .full = {"8", "64"},
          .min = 0,
          .max = 1'000'000};
}

bool Iterations::next() {
  if (!w_.running()) return false;
  measuring_ = w_.measuring();
  t0_ = now_ns();
  return true;
}

void Iterations::done(const std::string& error) {
  const uint64_t t1 = now_ns();
  auto& out = w_.out();
  if (!error.empty()) {
    ++out.integrity.corrupt;
    throw std::runtime_error(error);
  }
  if (!measuring_) return;
  ++out.ops;
  out.hist.record(t1 - t0_);
}

void run_worker(Session& s, const std::function<void(Worker&)>& body) {
  std::vector<WorkerSpec> ws;
  ws.push_back(
      {.role = "worker", .index = 0, .cpu = -1, .body = body, .process_cpu = true, .whole_ops = true});
  s.run_workers(std::move(ws), false, "op");
  s.record().extra["tasks_per_iteration"] = kTasks;
}

void run_iterations(Session& s, const std::function<std::string()>& iteration) {
  run_worker(s, [&iteration](Worker& w) {
    Iterations it(w);
    w.ready();
    while (it.next()) it.done(iteration());
  });
}

}  // namespace ipclab::cachecalc
