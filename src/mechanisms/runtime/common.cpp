#include "mechanisms/runtime/common.hpp"

#include <algorithm>
#include <utility>

#include "core/base/clock.hpp"
#include "core/measure/session.hpp"
#include "core/stats/histogram.hpp"

namespace ipclab::rt {

Integrity verify(uint64_t want_count, uint64_t want_sum, const Tally& got) {
  Integrity i;
  i.sent = want_count;
  i.received = got.count;
  if (got.count < want_count) i.lost = want_count - got.count;
  if (got.count > want_count) i.duplicated = got.count - want_count;
  i.corrupt = got.disorder + (got.count == want_count && got.sum != want_sum ? 1 : 0);
  return i;
}

uint64_t batch_steps(uint64_t steps, const std::function<double(uint64_t)>& time_ns) {
  if (steps < 2) return 1;
  auto least = [&](uint64_t m) {
    double t = time_ns(m);
    for (int i = 0; i < 2; ++i) t = std::min(t, time_ns(m));
    return t;
  };
  const double t1 = least(1), t2 = least(2);
  const double target = 100 * (clock_read_ns() + std::max(0.0, 2 * t1 - t2));
  uint64_t m = 1;
  for (double tm = t1; tm < target && m < steps;) {
    m = std::min(2 * m, steps);
    tm = time_ns(m);
  }
  return m;
}

void measure_counted(Session& s, uint64_t n, uint64_t step, const std::function<Expect(uint64_t)>& expect,
                     const std::function<Tally(uint64_t)>& body) {
  step = std::clamp<uint64_t>(step, 1, std::max<uint64_t>(n, 1));
  Integrity seen;
  auto run = [&](uint64_t c) {
    const Expect e = expect(c);
    const Integrity r = verify(e.count, e.sum, body(c));
    seen.lost += r.lost;
    seen.duplicated += r.duplicated;
    seen.corrupt += r.corrupt;
    return std::pair{e.ops, r};
  };
  const uint64_t k = batch_steps((n + step - 1) / step, [&](uint64_t m) {
    const uint64_t t0 = now_ns();
    run(std::min(m * step, n));
    return double(now_ns() - t0);
  });
  // Each pass's counts and where its batches' times per op (ns, rounded) start in `means`, warm-up's
  // first: the window's are its last `passes`.
  struct Pass {
    uint64_t sent = 0, received = 0;
    size_t first = 0;
  };
  std::vector<Pass> seen_passes;
  std::vector<uint64_t> means;
  // A pass's time is set by its count; the harness repeats it to fill --duration (Session::measure).
  // Its deadline is the one a peer of that count gets.
  const Params& p = s.params();
  const double deadline =
      counted_timeout_s(s, double(expect(n).ops), p.has("delay_us") && p.i64("delay_us") > 0);
  const uint64_t passes = s.measure(
      [&] {
        Pass pass{.first = means.size()};
        uint64_t last = now_ns();
        for (uint64_t done = 0; done < n;) {
          const uint64_t c = std::min(k * step, n - done);
          const auto [ops, r] = run(c);
          const uint64_t t = now_ns();
          means.push_back((t - last + ops / 2) / std::max<uint64_t>(ops, 1));
          last = t;
          pass.sent += r.sent;
          pass.received += r.received;
          done += c;
        }
        seen_passes.push_back(pass);
      },
      deadline);
  // The latency: the window's batches, each an op's mean over a batch too short to time one op by
  // one (a switch takes a few ns, a clock read ~20-30), as harness/null's batch_mean
  // (core/run/patterns.cpp, run_loop).
  Histogram batches;
  const size_t from = seen_passes.size() - size_t(passes);
  for (size_t i = from; i < seen_passes.size(); ++i) {
    seen.sent += seen_passes[i].sent;
    seen.received += seen_passes[i].received;
  }
  for (size_t i = seen_passes[from].first; i < means.size(); ++i) batches.record(means[i]);
  s.record().integrity += seen;
  s.record().ops = expect(n).ops * passes;
  s.record().latency = Latency::from("batch_mean", batches);
  s.record().extra["batch_units"] = k * step;
}

double counted_timeout_s(const Session& s, double ops, bool ms_timer) {
  const double per_op = ms_timer ? 2e-3 + double(s.params().i64("delay_us")) * 1e-6 : 20e-6;
  return s.options().timeout_s() + 2 * ops * per_op;
}

double peer_timeout_s(const Session& s, bool ms_timer) {
  const Params& p = s.params();
  return counted_timeout_s(s, double(p.i64("n")) * double(p.has("pairs") ? p.i64("pairs") : 1), ms_timer);
}

namespace {
ParamSpec n_param(const std::string& what, uint64_t def, std::vector<std::string> quick,
                  std::vector<std::string> full) {
  return {.name = "n",
          .type = ParamType::Int,
          .def = std::to_string(def),
          .help = what + " per pass (passes repeat until the window holds --duration)",
          .quick = std::move(quick),
          .full = std::move(full),
          .min = 1,
          .max = int64_t(1) << 30};
}
}  // namespace

ParamSpec spawn_n() {
  return n_param("tasks spawned and joined", 16384, {"1048576"},
                 {"131072", "262144", "524288", "1048576", "2097152", "4194304"});
}
ParamSpec switch_n() {
  return n_param("switches", 65536, {"2097152"}, {"524288", "1048576", "2097152", "4194304", "8388608"});
}
ParamSpec channel_n() {
  return n_param("messages", 16384, {"1048576"}, {"131072", "262144", "524288", "1048576", "2097152"});
}
ParamSpec pairs_n() { return n_param("messages per pair", 4096, {"131072"}, {"1048576"}); }
ParamSpec timer_n() {
  // Small next to the other grids: Tokio's, Monoio's and Go's timers fire on a millisecond tick,
  // so each of their timers takes ~1 ms whatever the delay, and 16,384 of them (the old quick
  // point) kept the quick preset waiting ~2 minutes per point. A timer is armed and fired one at a
  // time, so n only repeats the same operation: 1,024 to 16,384 shows it stays flat.
  return n_param("timers armed and fired", 1024, {"1024"}, {"1024", "4096", "16384"});
}

ParamSpec capacity_param() {
  return {
      .name = "capacity",
      .type = ParamType::Int,
      .def = "1024",
      .help =
          "channel capacity in messages (the same for both runtimes; ipcrt allows 0 = rendezvous, Asio too)",
      .min = 0,
      .max = 1 << 20};
}

ParamSpec pairs_param() {
  return {.name = "pairs",
          .type = ParamType::Int,
          .def = "4",
          .help = "producer/consumer pairs, each with its own channel, all on one thread",
          .quick = {"1", "32"},
          .full = {"1", "2", "4", "8", "16", "32"},
          .min = 1,
          .max = 4096};
}

ParamSpec delay_param() {
  return {.name = "delay_us",
          .type = ParamType::Int,
          .def = "0",
          .help = "timer delay in microseconds (0 = already due when armed)",
          .quick = {"0", "1"},
          .full = {"0", "1"},
          .min = 0,
          .max = 1000000};
}

ParamSpec batch_param() {
  return {.name = "batch",
          .type = ParamType::Int,
          .def = "1024",
          .help = "tasks spawned before they are joined; spawn+join runs n/batch such rounds",
          .min = 1,
          .max = 1 << 24};
}

ParamSpec drive_param() {
  return {.name = "drive",
          .type = ParamType::String,
          .def = "block_on",
          .choices = {"block_on", "spawned"},
          .help =
              "block_on: the bench runs as the runtime's root task (block_on / main goroutine); "
              "spawned: it is spawned onto the scheduler and awaited from the root",
          .quick = {"block_on", "spawned"},
          .full = {"block_on", "spawned"}};
}

ParamSpec drive_param_default_quick() {
  ParamSpec d = drive_param();
  d.quick = {d.def};
  return d;
}

bool drive_spawned(const Params& p) { return p.str("drive") == "spawned"; }

std::string switch_many_check(const Params& p) {
  if (p.i64("tasks") > p.i64("n"))
    return "tasks=" + std::to_string(p.i64("tasks")) + " exceeds n=" + std::to_string(p.i64("n")) +
           ": each task yields n/tasks times; pick tasks <= n";
  return "";
}

ParamSpec tasks_param() {
  return {.name = "tasks",
          .type = ParamType::Int,
          .def = "64",
          .help = "tasks yielding round-robin; n switches in all (n/tasks each)",
          .quick = {"64"},
          .full = {"2", "64", "1024"},
          .min = 1,
          .max = 1 << 20};
}

}  // namespace ipclab::rt
