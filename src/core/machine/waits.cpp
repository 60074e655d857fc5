#include "core/machine/waits.hpp"

#include <immintrin.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "core/base/clock.hpp"
#include "core/machine/placement.hpp"
#include "core/stats/statistics.hpp"

namespace ipclab::waits {

namespace {

// The cheapest of several timings of many pauses: an interruption only ever adds time.
double time_pause_ns() {
  constexpr int kPauses = 20'000, kTries = 7;
  double best = 1e30;
  for (int t = 0; t < kTries; ++t) {
    const uint64_t t0 = now_ns();
    for (int i = 0; i < kPauses; ++i) _mm_pause();
    best = std::min(best, double(now_ns() - t0) / kPauses);
  }
  return best;
}

// The median one-way hand-over of a futex ping-pong between a thread on CPU `a` and one on `b`
// (both sleep at once, never spin). 0 when it cannot complete within a second — a machine that
// slow to wake a thread gets no spin budget rather than a hang.
double handover_ns(int a, int b) {
  constexpr uint32_t kWarm = 20, kRounds = 200;
  constexpr uint64_t kLimitNs = 1'000'000'000;
  // Side A writes 2i+1 and waits for 2i+2, side B the reverse; a futex wait re-checks the value.
  std::atomic<uint32_t> turn{0};
  std::atomic<bool> give_up{false};
  const uint64_t deadline = now_ns() + kLimitNs;
  auto await = [&](uint32_t want, uint32_t have) {
    while (turn.load(std::memory_order_acquire) != want) {
      if (give_up.load(std::memory_order_relaxed) || now_ns() > deadline) {
        give_up.store(true);
        return false;
      }
      timespec ts{0, 10'000'000};
      syscall(SYS_futex, &turn, FUTEX_WAIT_PRIVATE, have, &ts, nullptr, 0);
    }
    return true;
  };
  auto hand = [&](uint32_t v) {
    turn.store(v, std::memory_order_release);
    syscall(SYS_futex, &turn, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  };
  std::vector<double> rtt;
  rtt.reserve(kRounds);
  std::thread side_b([&] {
    if (b >= 0) set_affinity(b);  // unpinned if refused: measured where it runs
    for (uint32_t i = 0; i < kWarm + kRounds; ++i) {
      if (!await(2 * i + 1, 2 * i)) return;
      hand(2 * i + 2);
    }
  });
  std::thread side_a([&] {
    if (a >= 0) set_affinity(a);
    for (uint32_t i = 0; i < kWarm + kRounds; ++i) {
      const uint64_t t0 = now_ns();
      hand(2 * i + 1);
      if (!await(2 * i + 2, 2 * i + 1)) return;
      if (i >= kWarm) rtt.push_back(double(now_ns() - t0));
    }
  });
  side_a.join();
  side_b.join();
  if (give_up.load() || rtt.size() != kRounds) return 0;
  return median_of(std::move(rtt)) / 2;
}

}  // namespace

const Costs& costs() {
  static const Costs c = [] {
    Costs m;
    m.pause_ns = time_pause_ns();
    const auto cpus = allowed_cpus();
    const int first = cpus.empty() ? -1 : cpus[0];
    m.wake_same_ns = handover_ns(first, first);
    if (cpus.size() >= 2) {
      m.cpus[0] = cpus[0];
      m.cpus[1] = cpus[1];
      m.wake_cross_ns = handover_ns(cpus[0], cpus[1]);
    } else {
      m.cpus[0] = m.cpus[1] = first;
    }
    return m;
  }();
  return c;
}

Budget adaptive(bool pinned_same) {
  const Costs& c = costs();
  Budget b;
  b.same_cpu = pinned_same || allowed_cpus().size() == 1;
  b.yield_ns = uint64_t(c.wake_same_ns);
  if (!b.same_cpu && c.pause_ns > 0)
    b.spins = uint32_t(std::min(c.wake_cross_ns / c.pause_ns, 1e8));  // at most 1e8: a bound, not a tune
  return b;
}

nlohmann::json to_json(const Budget& b) {
  const Costs& c = costs();
  auto r = [](double v) { return std::round(v * 10) / 10; };
  return {{"spins", b.spins},
          {"spin_ns", r(double(b.spins) * c.pause_ns)},
          {"yield_ns", b.yield_ns},
          {"same_cpu", b.same_cpu},
          {"pause_ns", r(c.pause_ns)},
          {"wake_cross_ns", r(c.wake_cross_ns)},
          {"wake_same_ns", r(c.wake_same_ns)},
          {"calibrated_on_cpus", {c.cpus[0], c.cpus[1]}}};
}

}  // namespace ipclab::waits
