// Stress tests of the shared-memory rings (also built under ThreadSanitizer): several producers
// and consumers hammer a small ring with every wait strategy; every message must arrive exactly
// once, intact, and in order per producer as seen by each consumer.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "mechanisms/messaging/shm_ring.hpp"

namespace ipclab::messaging {
namespace {

constexpr size_t kMsg = 40;  // producer, sequence, then a checksum-like fill

void fill(std::byte* m, uint32_t producer, uint64_t seq) {
  std::memcpy(m, &producer, 4);
  std::memcpy(m + 8, &seq, 8);
  for (size_t i = 16; i < kMsg; ++i) m[i] = std::byte((seq * 31 + producer + i) & 0xff);
}
bool valid(const std::byte* m, uint32_t& producer, uint64_t& seq) {
  std::memcpy(&producer, m, 4);
  std::memcpy(&seq, m + 8, 8);
  for (size_t i = 16; i < kMsg; ++i)
    if (m[i] != std::byte((seq * 31 + producer + i) & 0xff)) return false;
  return true;
}

struct Mapping {
  explicit Mapping(size_t n) : bytes(n) {
    mem = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  }
  ~Mapping() { munmap(mem, bytes); }
  void* mem;
  size_t bytes;
};

// Every kind; adaptive both with the budget calibrated here (spinning while the peer runs on
// another CPU) and as for two sides pinned to one CPU (yielding, never spinning).
const WaitStrategy kWaits[] = {{WaitKind::Spin},
                               {WaitKind::SpinYield},
                               {WaitKind::Futex},
                               {WaitKind::Adaptive, waits::adaptive(false)},
                               {WaitKind::Adaptive, waits::adaptive(true)}};

TEST(SpscRingStress, EveryMessageOnceInOrder) {
  for (auto w : kWaits) {
    Mapping m(SpscRing::bytes(8, kMsg));
    SpscRing* r = SpscRing::create(m.mem, 8, kMsg);
    constexpr uint64_t kN = 5000;
    std::thread prod([&] {
      SpscRing::Producer p(*r, w);
      std::byte buf[kMsg];
      for (uint64_t s = 0; s < kN; ++s) {
        fill(buf, 0, s);
        p.push(buf, kMsg);
      }
    });
    SpscRing::Consumer c(*r, w);
    std::byte buf[kMsg];
    for (uint64_t s = 0; s < kN; ++s) {
      c.pop(buf, kMsg);
      uint32_t who;
      uint64_t seq;
      ASSERT_TRUE(valid(buf, who, seq));
      ASSERT_EQ(seq, s);
    }
    prod.join();
  }
}

TEST(MpmcRingStress, SeveralProducersAndConsumers) {
  constexpr int kP = 3, kC = 3;
  constexpr uint64_t kN = 3000;  // per producer
  for (auto w : kWaits) {
    Mapping m(MpmcRing::bytes(4, kMsg));
    MpmcRing* r = MpmcRing::create(m.mem, 4, kMsg);
    std::atomic<uint64_t> received{0}, seqsum{0}, bad{0};
    std::vector<std::thread> threads;
    for (int p = 0; p < kP; ++p)
      threads.emplace_back([&, p] {
        std::byte buf[kMsg];
        for (uint64_t s = 0; s < kN; ++s) {
          fill(buf, uint32_t(p), s);
          r->push(buf, kMsg, w);
        }
      });
    for (int c = 0; c < kC; ++c)
      threads.emplace_back([&] {
        std::byte buf[kMsg];
        uint64_t next[kP] = {};
        for (;;) {
          r->pop(buf, kMsg, w);
          uint32_t who;
          uint64_t seq;
          if (!valid(buf, who, seq)) {
            bad++;
            continue;
          }
          if (who == 0xffffffffu) break;  // stop marker
          if (who >= uint32_t(kP) || seq < next[who])
            bad++;
          else
            next[who] = seq + 1;
          received++;
          seqsum += seq;
        }
      });
    for (int p = 0; p < kP; ++p) threads[size_t(p)].join();
    std::byte stop[kMsg];
    for (int c = 0; c < kC; ++c) {
      fill(stop, 0xffffffffu, 0);
      r->push(stop, kMsg, w);
    }
    for (size_t i = kP; i < threads.size(); ++i) threads[i].join();
    EXPECT_EQ(bad.load(), 0u);
    EXPECT_EQ(received.load(), kP * kN);
    EXPECT_EQ(seqsum.load(), kP * (kN * (kN - 1) / 2));
  }
}

}  // namespace
}  // namespace ipclab::messaging
