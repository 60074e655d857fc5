#include "mechanisms/cachecalc/workload.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <ctime>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "core/base/clock.hpp"
#include "core/measure/session.hpp"

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

void calc_reference(Cache& c) {
  for (int i = 0; i < kKeys; ++i) {
    const std::string key = "hello" + std::to_string(i);  // built on every access, as the reference
    const std::string v = c[key];                         // lookup 1: a copy of the value
    c[key] = v.empty() ? std::to_string(kEmpty + 1) : std::to_string(std::stoi(v) + 1);  // lookup 2
  }
}

void calc_lean(Cache& c, std::span<const std::string> subset) {
  for (const auto& k : subset) {
    std::string& v = c[k];
    v = std::to_string(parse_value(v) + 1);
  }
}

ParamSpec calc_param() {
  return {.name = "calc",
          .type = ParamType::String,
          .def = "reference",
          .choices = {"reference", "lean"},
          .help =
              "reference: the reference's calc (key string built per access, two map lookups, "
              "stoi); lean: prebuilt keys, one lookup, the value rewritten in place",
          .full = {"reference", "lean"}};
}

CalcFn calc_of(const Params& p) {
  if (p.str("calc") == "lean") return [](Cache& c) { calc_lean(c); };
  return calc_reference;
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

void devzero_delay(int64_t us) {
  if (us <= 0) return;
  // The end is taken before the open, so the open and close are inside the delay as there.
  const uint64_t end = now_ns() + uint64_t(us) * 1000;
  const int fd = ::open("/dev/zero", O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "open /dev/zero");
  char buf[1024];
  while (now_ns() < end) {
    if (::read(fd, buf, sizeof buf) < 0) {
      const int e = errno;
      ::close(fd);
      throw std::system_error(e, std::generic_category(), "read /dev/zero");
    }
  }
  ::close(fd);
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

ParamSpec delay_kind_param(std::vector<std::string> kinds) {
  return {.name = "delay_kind",
          .type = ParamType::String,
          .def = kinds.front(),
          .choices = kinds,
          .help =
              "how a task waits: devzero = busy /dev/zero reads, sleep = blocking nanosleep, "
              "timer = the event loop's asynchronous timer (default: the reference's choice)",
          .full = kinds};
}

DelayKind delay_kind_of(const Params& p) {
  const std::string& k = p.str("delay_kind");
  if (k == "sleep") return DelayKind::Sleep;
  if (k == "timer") return DelayKind::Timer;
  return DelayKind::Devzero;
}

void blocking_delay(DelayKind kind, int64_t us) {
  if (kind == DelayKind::Sleep)
    sleep_delay(us);
  else
    devzero_delay(us);
}

BlockingTask::BlockingTask(const Params& p)
    : calc(calc_of(p)), kind(delay_kind_of(p)), us(p.i64("delay_us")) {}

void BlockingTask::operator()(Cache& c) const {
  calc(c);
  blocking_delay(kind, us);
  calc(c);
}

void BlockingTask::operator()(Cache& c, std::mutex& m) const {
  {
    std::lock_guard g(m);
    calc(c);
  }
  blocking_delay(kind, us);
  {
    std::lock_guard g(m);
    calc(c);
  }
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
  out.record_latency(t1 - t0_);
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
