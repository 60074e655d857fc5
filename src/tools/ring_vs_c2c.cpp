// ipclab_ring_vs_c2c: the round trip of messaging's SPSC ring against the cache-line round trip
// (anchors/c2c), measured in alternating slices on the same two pinned threads.
//
// Why a separate tool: on a VM the host moves the vCPUs between sibling hyperthreads, cores of one
// L3 and cores of different L3s, often several times a second, and the c2c round trip changes
// 4-15x with it (docs/methodology.md). Two `ipclab run`s, even back to back, are often in different
// placements, so their ratio means nothing. Here each slice of ring round trips is paired with the
// c2c slice just before it, on the same threads a few hundred microseconds apart; the ratio of
// each pair is taken, and the pairs are grouped by the c2c time of their slice (the placement).
//
// Both sides touch every byte (the client encodes each message with msg::encode, the server echoes
// it, the client compares the echo with it byte for byte), so a ring that loses or corrupts a
// message fails loudly.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "core/clock.hpp"
#include "core/message.hpp"
#include "core/placement.hpp"
#include "core/runner.hpp"
#include "mechanisms/messaging/shm_transport.hpp"

namespace {

using namespace ipclab;
using namespace ipclab::messaging;

struct alignas(kCacheLine) Line {
  std::atomic<uint64_t> v{0};
};

// The p10/p90 of the slice ratios (the median is core's median_of).
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[size_t(q * double(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"SPSC ring round trip vs cache-line round trip, in alternating slices on two pinned threads"};
  size_t size = 64;
  int slices = 400, per_slice = 2000;
  std::string cpus_text = "0,1";
  app.add_option("--size", size, "message bytes (default 64)")->check(CLI::Range(1, 65536));
  app.add_option("--slices", slices, "pairs of slices (default 400)")->check(CLI::Range(10, 1000000));
  app.add_option("--per-slice", per_slice, "round trips per slice (default 2000)")->check(CLI::Range(10, 10000000));
  app.add_option("--cpus", cpus_text, "the two CPUs, client first (default 0,1)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    fmt::print(stderr, "ipclab_ring_vs_c2c: {}; see --help\n", what.substr(0, what.find('\n')));
    return 2;
  }
  std::vector<int> cpus;
  try {
    cpus = parse_cpu_list(cpus_text);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }
  if (cpus.size() != 2 || cpus[0] == cpus[1]) {
    fmt::print(stderr, "error: --cpus needs two different CPUs, e.g. --cpus 0,1\n");
    return 2;
  }

  constexpr uint64_t kCapacity = 256;
  SharedMapping req_map(SpscRing::bytes(kCapacity, size)), rep_map(SpscRing::bytes(kCapacity, size));
  SpscRing& req = *SpscRing::create(req_map.get(), kCapacity, size);
  SpscRing& rep = *SpscRing::create(rep_map.get(), kCapacity, size);
  Line line;
  bool bad = false;

  std::thread server([&] {
    pin_current_thread(cpus[1]);
    SpscRing::Consumer rx(req, WaitStrategy::Spin);
    SpscRing::Producer tx(rep, WaitStrategy::Spin);
    std::vector<std::byte> buf(size);
    uint64_t k = 0;
    for (int s = 0; s < slices; ++s) {
      for (int i = 0; i < per_slice; ++i, ++k) {
        const uint64_t want = 2 * k + 1;
        while (line.v.load(std::memory_order_acquire) != want) _mm_pause();
        line.v.store(want + 1, std::memory_order_release);
      }
      for (int i = 0; i < per_slice; ++i) {
        rx.pop(buf.data(), size);
        tx.push(buf.data(), size);
      }
    }
  });

  pin_current_thread(cpus[0]);
  SpscRing::Producer tx(req, WaitStrategy::Spin);
  SpscRing::Consumer rx(rep, WaitStrategy::Spin);
  std::vector<std::byte> out(size), in(size);
  std::vector<double> c2c, ring;
  uint64_t k = 0, seq = 0;
  for (int s = 0; s < slices; ++s) {
    const uint64_t t0 = now_ns();
    for (int i = 0; i < per_slice; ++i, ++k) {
      const uint64_t v = 2 * k + 1;
      line.v.store(v, std::memory_order_release);
      while (line.v.load(std::memory_order_acquire) != v + 1) _mm_pause();
    }
    const uint64_t t1 = now_ns();
    for (int i = 0; i < per_slice; ++i, ++seq) {
      msg::encode(out.data(), size, {.seq = seq}, false);
      tx.push(out.data(), size);
      rx.pop(in.data(), size);
      if (std::memcmp(in.data(), out.data(), size) != 0) bad = true;
    }
    const uint64_t t2 = now_ns();
    c2c.push_back(double(t1 - t0) / per_slice);
    ring.push_back(double(t2 - t1) / per_slice);
  }
  server.join();
  if (bad) {
    fmt::print(stderr, "error: an echoed message differed from the one sent: the ring corrupted data\n");
    return 1;
  }

  std::vector<double> ratio;
  for (size_t i = 0; i < c2c.size(); ++i) ratio.push_back(ring[i] / c2c[i]);
  fmt::print("SpscRing (spin) vs c2c, {} B messages, CPUs {} and {}, {} slice pairs x {} round trips\n", size,
             cpus[0], cpus[1], slices, per_slice);
  fmt::print("all slices: c2c median {:.0f} ns, ring median {:.0f} ns; ratio median {:.2f} (p10 {:.2f}, p90 {:.2f})\n",
             median_of(c2c), median_of(ring), median_of(ratio), quantile(ratio, 0.1), quantile(ratio, 0.9));
  // Group the pairs by the c2c time of their slice: each group is one placement of the vCPUs.
  std::map<int, std::vector<size_t>> groups;
  for (size_t i = 0; i < c2c.size(); ++i) {
    const int g = c2c[i] < 50 ? 0 : c2c[i] < 200 ? 1 : 2;
    groups[g].push_back(i);
  }
  const char* names[] = {"c2c < 50 ns (sibling hyperthreads?)", "c2c 50-200 ns (one L3?)", "c2c >= 200 ns (across L3s?)"};
  for (auto& [g, idx] : groups) {
    std::vector<double> c, r, q;
    for (size_t i : idx) {
      c.push_back(c2c[i]);
      r.push_back(ring[i]);
      q.push_back(ratio[i]);
    }
    fmt::print("  {:<38} {:4} pairs: c2c {:.0f} ns, ring {:.0f} ns, ratio median {:.2f} (p10 {:.2f}, p90 {:.2f})\n",
               names[g], idx.size(), median_of(c), median_of(r), median_of(q), quantile(q, 0.1), quantile(q, 0.9));
  }
  return 0;
}
