// ipclab_ring_vs_c2c: the round trip of messaging's SPSC ring against the cache-line round trip
// (anchors/c2c), measured in alternating slices on the same two pinned threads.
//
// Why a separate tool: on a VM the host moves the vCPUs between sibling hyperthreads, cores of one
// L3 and cores of different L3s, often several times a second, and the c2c round trip changes
// 4-15x with it (docs/methodology.md). Two `ipclab run`s, even back to back, are often in different
// placements, so their ratio means nothing. Here each slice of ring round trips is paired with the
// c2c slice just before it, on the same threads a few hundred microseconds apart; the ratio of
// each pair is taken, and the pairs are classed by the c2c time of their slice (the placement).
//
// Both sides touch every byte (the client encodes each message with msg::encode, the server echoes
// it, the client compares the echo with it byte for byte), so a ring that loses or corrupts a
// message fails loudly. As in the harness's ping-pong (core/patterns.cpp), the client encodes
// request n+1 and checks reply n-1 while request n is in flight, so the round trip holds the ring
// and the copies, not the checking.
//
// Two more slices show where the ring's time goes. "two-line" is the floor under any round trip over
// two one-way channels (a request ring and a reply ring): two flag lines, each written by one side
// only, no payload. c2c reuses one line for both directions, which the cache hands over faster
// than two lines (on this Zen 3 VM two-line is 1.4-1.6x c2c within one L3 and 1.9x on sibling
// hyperthreads: docs/methodology.md, "A ring round trip and a cache line"). "walk" adds what a
// ring's slots add: one flag word per message, each in the next line of a 256-line array, set by
// the sender and cleared by the receiver, still with no payload, copy or check.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <thread>
#include <vector>

#include "cli/parse.hpp"
#include "core/clock.hpp"
#include "core/message.hpp"
#include "core/placement.hpp"
#include "core/runner.hpp"
#include "core/statistics.hpp"
#include "mechanisms/messaging/shm_transport.hpp"

namespace {

using namespace ipclab;
using namespace ipclab::messaging;

struct alignas(kCacheLine) Line {
  std::atomic<uint64_t> v{0};
};

// The two-line slices' lines: request flags in `req`, reply flags in `rep`.
struct TwoLines {
  Line req, rep;
};

// The walk slices' two directions: message i's flag is in line i mod 256, non-zero while full.
struct Walk {
  static constexpr uint64_t kLines = 256;
  Line lines[kLines];
  std::atomic<uint64_t>& at(uint64_t i) { return lines[i % kLines].v; }
  void send(uint64_t i, uint64_t v) {
    while (at(i).load(std::memory_order_acquire) != 0) _mm_pause();
    at(i).store(v, std::memory_order_release);
  }
  uint64_t receive(uint64_t i) {
    uint64_t v;
    while ((v = at(i).load(std::memory_order_acquire)) == 0) _mm_pause();
    at(i).store(0, std::memory_order_relaxed);
    return v;
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"SPSC ring round trip vs cache-line round trip, in alternating slices on two pinned threads"};
  size_t size = 64;
  int slices = 400, per_slice = 2000;
  std::string cpus_text = "0,1";
  app.add_option("--size", size, "message bytes (default 64)")->check(CLI::Range(1, 65536));
  app.add_option("--slices", slices, "groups of slices, one of each kind (default 400)")->check(CLI::Range(10, 1000000));
  app.add_option("--per-slice", per_slice, "round trips per slice (default 2000)")->check(CLI::Range(10, 10000000));
  app.add_option("--cpus", cpus_text, "the two CPUs, client first (default 0,1)");
  if (auto rc = parse_command_line(app, argc, argv, "ipclab_ring_vs_c2c", "--help")) return *rc;
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
  auto walk_req = std::make_unique<Walk>(), walk_rep = std::make_unique<Walk>();
  auto two_lines = std::make_unique<TwoLines>();
  bool bad = false;

  // The server takes its own copies of the settings: read through references into this stack
  // frame, they could share a cache line with the client's locals, and every round trip would pay
  // a transfer for that line too (it did: 215 against 140 ns in one L3).
  std::thread server([&req, &rep, &line, &walk_req, &walk_rep, &two_lines, size, slices, per_slice, cpu = cpus[1]] {
    pin_current_thread(cpu);
    SpscRing::Consumer rx(req, WaitStrategy::Spin);
    SpscRing::Producer tx(rep, WaitStrategy::Spin);
    std::vector<std::byte> buf(size);
    uint64_t k = 0, w = 0, q = 0;
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
      for (int i = 0; i < per_slice; ++i, ++w) walk_rep->send(w, walk_req->receive(w));
      for (int i = 0; i < per_slice; ++i) {
        ++q;
        while (two_lines->req.v.load(std::memory_order_acquire) != q) _mm_pause();
        two_lines->rep.v.store(q, std::memory_order_release);
      }
    }
  });

  pin_current_thread(cpus[0]);
  SpscRing::Producer tx(req, WaitStrategy::Spin);
  SpscRing::Consumer rx(rep, WaitStrategy::Spin);
  // Two requests and two replies: the one in flight and the one before it.
  std::vector<std::byte> req_now(size), req_prev(size), rep_now(size), rep_prev(size);
  std::vector<double> c2c, ring, walk, two;
  uint64_t k = 0, seq = 0, w = 0, q = 0;
  for (int s = 0; s < slices; ++s) {
    const uint64_t t0 = now_ns();
    for (int i = 0; i < per_slice; ++i, ++k) {
      const uint64_t v = 2 * k + 1;
      line.v.store(v, std::memory_order_release);
      while (line.v.load(std::memory_order_acquire) != v + 1) _mm_pause();
    }
    const uint64_t t1 = now_ns();
    msg::encode(req_now.data(), size, {.seq = seq}, false);
    for (int i = 0; i < per_slice; ++i, ++seq) {
      tx.push(req_now.data(), size);
      if (i > 0 && std::memcmp(rep_prev.data(), req_prev.data(), size) != 0) bad = true;
      msg::encode(req_prev.data(), size, {.seq = seq + 1}, false);  // the next request
      rx.pop(rep_now.data(), size);
      req_now.swap(req_prev);  // req_now: the next request; req_prev: the one just answered
      rep_now.swap(rep_prev);
    }
    if (std::memcmp(rep_prev.data(), req_prev.data(), size) != 0) bad = true;
    const uint64_t t2 = now_ns();
    for (int i = 0; i < per_slice; ++i, ++w) {
      walk_req->send(w, w + 1);
      if (walk_rep->receive(w) != w + 1) bad = true;
    }
    const uint64_t t3 = now_ns();
    for (int i = 0; i < per_slice; ++i) {
      two_lines->req.v.store(++q, std::memory_order_release);
      while (two_lines->rep.v.load(std::memory_order_acquire) != q) _mm_pause();
    }
    const uint64_t t4 = now_ns();
    c2c.push_back(double(t1 - t0) / per_slice);
    two.push_back(double(t4 - t3) / per_slice);
    ring.push_back(double(t2 - t1) / per_slice);
    walk.push_back(double(t3 - t2) / per_slice);
  }
  server.join();
  if (bad) {
    fmt::print(stderr, "error: an echoed message differed from the one sent: the ring corrupted data\n");
    return 1;
  }

  fmt::print("SpscRing (spin) vs c2c, two flag lines and a bare line walk, {} B messages, CPUs {} and {}, {} slice groups x {} "
             "round trips\n",
             size, cpus[0], cpus[1], slices, per_slice);
  // One line for a set of slice groups: the medians of each kind and the per-group ratios to c2c.
  const auto summary = [&](const char* label, const std::vector<size_t>& idx) {
    std::vector<double> c, tw, wk, r, ring_ratio, two_ratio;
    for (size_t i : idx) {
      c.push_back(c2c[i]);
      tw.push_back(two[i]);
      wk.push_back(walk[i]);
      r.push_back(ring[i]);
      ring_ratio.push_back(ring[i] / c2c[i]);
      two_ratio.push_back(two[i] / c2c[i]);
    }
    fmt::print("{:<40} {:4} groups: c2c {:.0f} ns, two-line {:.0f} ns, walk {:.0f} ns, ring {:.0f} ns; ring/c2c median {:.2f} "
               "(p10 {:.2f}, p90 {:.2f}); two-line/c2c median {:.2f}\n",
               label, idx.size(), median_of(c), median_of(tw), median_of(wk), median_of(r), median_of(ring_ratio),
               quantile_of(ring_ratio, 0.1), quantile_of(ring_ratio, 0.9), median_of(two_ratio));
  };
  std::vector<size_t> all(c2c.size());
  std::iota(all.begin(), all.end(), size_t(0));
  summary("all slices", all);
  // Class the slice groups by the c2c time of their slice: each class is one placement of the vCPUs.
  std::map<int, std::vector<size_t>> groups;
  for (size_t i = 0; i < c2c.size(); ++i) groups[c2c[i] < 50 ? 0 : c2c[i] < 200 ? 1 : 2].push_back(i);
  const char* names[] = {"  c2c < 50 ns (sibling hyperthreads?)", "  c2c 50-200 ns (one L3?)", "  c2c >= 200 ns (across L3s?)"};
  for (auto& [g, idx] : groups) summary(names[g], idx);
  return 0;
}
