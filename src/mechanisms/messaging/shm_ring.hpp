#pragma once
// Rings of fixed-size message slots for shared memory (MAP_SHARED, so forked processes share
// them): SpscRing for one producer and one consumer, MpmcRing (D. Vyukov's bounded queue with a
// sequence number per slot) for several of each. A side that must wait uses a WaitStrategy over
// an EventCount: spin with pause, spin with sched_yield, sleep on a futex at once, or spin for a
// while and then sleep (adaptive). Each structure lives at the start of its mapping, followed by
// its slots; nothing in it is a pointer, so every process sees the same bytes.
#include <immintrin.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/base/clock.hpp"
#include "core/machine/waits.hpp"
#include "mechanisms/messaging/common.hpp"

namespace ipclab::messaging {

constexpr size_t kCacheLine = 64;

enum class WaitKind { Spin, SpinYield, Futex, Adaptive };
/// How a side waits: its kind and, for adaptive, what it does before it sleeps — spin for a time
/// calibrated on this machine while the peer runs elsewhere, yield while it shares this CPU
/// (core/machine/waits.hpp). Reference 004 spun a fixed 2000 pauses: 41-58 µs per wait on the VMs we
/// measured, spent keeping a peer on the same CPU from running.
struct WaitStrategy {
  WaitKind kind = WaitKind::Adaptive;
  waits::Budget budget;
};

/// Sleep/wake-up between processes without lost wake-ups. A waiter announces itself in
/// `sleepers`, re-checks its condition, and sleeps on `epoch` only if it still does not hold; a
/// notifier publishes its change, then looks at `sleepers` and bumps `epoch` before waking. Both
/// sides put a seq_cst fence between their write and their read (the store-load pattern), so at
/// least one of them sees the other: the waiter sees the change, or the notifier sees the waiter.
/// A sleeper whose epoch was bumped between its read and its sleep returns at once (EAGAIN).
struct alignas(kCacheLine) EventCount {
  std::atomic<uint32_t> epoch{0};
  std::atomic<uint32_t> sleepers{0};
  std::atomic<int> notifier_cpu{-1};  // where the side that notifies last ran (adaptive waits)

  /// Returns once `ready()` is true; `ready` may perform the operation itself (try_push).
  template <class Ready>
  void wait(const WaitStrategy& w, Ready&& ready) {
    if (w.kind == WaitKind::Adaptive && before_sleeping(w.budget, ready)) return;
    for (uint32_t spins = 0;; ++spins) {
      if (ready()) return;
      switch (w.kind) {
        case WaitKind::Spin:
          _mm_pause();
          if ((spins & 4095) == 4095) poll_abort();
          continue;
        case WaitKind::SpinYield:
          sched_yield();
          if ((spins & 255) == 255) poll_abort();
          continue;
        case WaitKind::Adaptive:
        case WaitKind::Futex:
          break;
      }
      sleepers.fetch_add(1, std::memory_order_seq_cst);
      std::atomic_thread_fence(std::memory_order_seq_cst);
      const uint32_t e = epoch.load(std::memory_order_acquire);
      if (ready()) {
        sleepers.fetch_sub(1, std::memory_order_relaxed);
        return;
      }
      // Shared (not PRIVATE) futex: the word is in a MAP_SHARED mapping used by several
      // processes. The timeout only bounds how long an aborting run waits.
      timespec ts{0, 100'000'000};
      syscall(SYS_futex, &epoch, FUTEX_WAIT, e, &ts, nullptr, 0);
      sleepers.fetch_sub(1, std::memory_order_relaxed);
      poll_abort();
    }
  }

  /// Call after publishing a change a waiter may wait for. Free when nobody sleeps.
  void notify(bool all) {
    // Where this side runs, for an adaptive waiter's choice between spinning and yielding; a
    // store only when it moved (sched_getcpu reads the rseq area: no system call).
    if (const int cpu = sched_getcpu(); notifier_cpu.load(std::memory_order_relaxed) != cpu)
      notifier_cpu.store(cpu, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_relaxed) == 0) return;
    epoch.fetch_add(1, std::memory_order_release);
    syscall(SYS_futex, &epoch, FUTEX_WAKE, all ? INT_MAX : 1, nullptr, nullptr, 0);
  }

 private:
  // An adaptive wait's phase before it sleeps; true once `ready()`. The peer on this very CPU
  // (pinned so, or seen notifying from it last) cannot run while this side spins: yield to it,
  // for as long as a sleep and a wake-up on one CPU cost. Else spin the calibrated budget.
  template <class Ready>
  bool before_sleeping(const waits::Budget& b, Ready& ready) {
    if (ready()) return true;
    if (b.same_cpu || notifier_cpu.load(std::memory_order_relaxed) == sched_getcpu()) {
      const uint64_t until = now_ns() + b.yield_ns;
      do {
        sched_yield();
        if (ready()) return true;
      } while (now_ns() < until);
      return false;
    }
    for (uint32_t i = 0; i < b.spins; ++i) {
      _mm_pause();
      if (ready()) return true;
    }
    return false;
  }
};

inline bool sleeps(const WaitStrategy& w) {
  return w.kind == WaitKind::Futex || w.kind == WaitKind::Adaptive;
}

inline size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }
inline uint64_t pow2_at_least(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

/// One producer, one consumer. Each slot starts with a sequence word the producer stores last
/// (release): n+1 once message n is in it. The consumer waits on the slot it reads next, not on a
/// shared index, so a message crosses to the other CPU as the one or two cache lines of its slot
/// — an index beside it would be a second, dependent miss per message (the consumer would see
/// the index move, then fetch the slot). `head` (consumer-owned, on its own line) frees slots;
/// the producer keeps a private copy and reloads it only when the ring looks full. Each end is
/// made once per ring (the transport's endpoints): the producer's next slot is its own count.
struct SpscRing {
  alignas(kCacheLine) std::atomic<uint64_t> head{0};  // next slot to read; consumer-owned
  EventCount not_empty, not_full;
  alignas(kCacheLine) uint64_t capacity = 0;  // a power of two
  uint64_t stride = 0;                        // slot: sequence word, then the message

  static size_t bytes(uint64_t capacity, size_t msg) {
    return sizeof(SpscRing) + capacity * round_up(msg + 8, kCacheLine);
  }
  /// Constructs the ring at `mem` (bytes(capacity, msg) long).
  static SpscRing* create(void* mem, uint64_t capacity, size_t msg) {
    auto* r = new (mem) SpscRing();
    r->capacity = capacity;
    r->stride = round_up(msg + 8, kCacheLine);
    for (uint64_t i = 0; i < capacity; ++i) new (r->seq(i)) std::atomic<uint64_t>(0);
    return r;
  }
  std::atomic<uint64_t>* seq(uint64_t i) {
    return reinterpret_cast<std::atomic<uint64_t>*>(reinterpret_cast<std::byte*>(this + 1) +
                                                    (i & (capacity - 1)) * stride);
  }
  std::byte* slot(uint64_t i) { return reinterpret_cast<std::byte*>(seq(i)) + 8; }

  class Producer {
   public:
    Producer(SpscRing& r, WaitStrategy w) : r_(r), w_(w) {}
    void push(const std::byte* data, size_t len) {
      std::memcpy(claim(), data, len);
      publish();
    }
    /// In place (bulk/shm_bulk): waits for a free slot and returns it to be written; publish()
    /// then hands it to the consumer. push() is claim, copy, publish.
    std::byte* claim() {
      if (tail_ - head_cache_ == r_.capacity)
        r_.not_full.wait(w_, [&] {
          // acquire: the consumer has finished reading the slots it released.
          head_cache_ = r_.head.load(std::memory_order_acquire);
          return tail_ - head_cache_ < r_.capacity;
        });
      return r_.slot(tail_);
    }
    void publish() {
      // release: the payload is visible before the consumer can see the slot's sequence.
      r_.seq(tail_)->store(tail_ + 1, std::memory_order_release);
      ++tail_;
      if (sleeps(w_)) r_.not_empty.notify(false);
    }

   private:
    SpscRing& r_;
    WaitStrategy w_;
    uint64_t tail_ = 0, head_cache_ = 0;
  };

  class Consumer {
   public:
    Consumer(SpscRing& r, WaitStrategy w) : r_(r), w_(w), head_(r.head.load(std::memory_order_relaxed)) {}
    void pop(std::byte* buf, size_t len) {
      std::memcpy(buf, peek(), len);
      release();
    }
    /// In place (bulk/shm_bulk): waits for a full slot and returns it to be read where the
    /// producer wrote it; release() then gives it back. pop() is peek, copy, release.
    std::byte* peek() {
      // acquire: pairs with the producer's release of the sequence, so the payload is visible.
      auto full = [&] { return r_.seq(head_)->load(std::memory_order_acquire) == head_ + 1; };
      if (!full()) r_.not_empty.wait(w_, full);
      return r_.slot(head_);
    }
    void release() {
      // release: our reads of the slot are done before the producer may overwrite it.
      r_.head.store(++head_, std::memory_order_release);
      if (sleeps(w_)) r_.not_full.notify(false);
    }

   private:
    SpscRing& r_;
    WaitStrategy w_;
    uint64_t head_;
  };
};

/// Several producers and consumers (Vyukov). Slot i carries a sequence number: pos when free
/// for the producer of ticket pos, pos+1 when full for the consumer of ticket pos. A side claims
/// a ticket with a CAS on its counter only after the slot's sequence said it is its turn, then
/// copies, then publishes by storing the next sequence with release. Each side's successive
/// tickets increase, so every consumer sees each producer's messages in the order sent.
struct MpmcRing {
  alignas(kCacheLine) std::atomic<uint64_t> enqueue_pos{0};
  alignas(kCacheLine) std::atomic<uint64_t> dequeue_pos{0};
  EventCount not_empty, not_full;
  alignas(kCacheLine) uint64_t capacity = 0;  // a power of two
  uint64_t stride = 0;                        // slot: sequence word, then the message

  static size_t bytes(uint64_t capacity, size_t msg) {
    return sizeof(MpmcRing) + capacity * round_up(msg + 8, kCacheLine);
  }
  static MpmcRing* create(void* mem, uint64_t capacity, size_t msg) {
    auto* r = new (mem) MpmcRing();
    r->capacity = capacity;
    r->stride = round_up(msg + 8, kCacheLine);
    for (uint64_t i = 0; i < capacity; ++i) new (r->seq(i)) std::atomic<uint64_t>(i);
    return r;
  }
  std::atomic<uint64_t>* seq(uint64_t i) {
    return reinterpret_cast<std::atomic<uint64_t>*>(reinterpret_cast<std::byte*>(this + 1) +
                                                    (i & (capacity - 1)) * stride);
  }
  std::byte* data(uint64_t i) { return reinterpret_cast<std::byte*>(seq(i)) + 8; }

  bool try_push(const std::byte* d, size_t len) {
    uint64_t pos = enqueue_pos.load(std::memory_order_relaxed);
    for (;;) {
      // acquire: the consumer that freed this slot has finished reading it.
      const uint64_t s = seq(pos)->load(std::memory_order_acquire);
      const int64_t diff = int64_t(s - pos);
      if (diff == 0) {
        // relaxed: the ticket only arbitrates between producers; the slot's sequence publishes.
        if (enqueue_pos.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) break;
      } else if (diff < 0) {
        return false;  // full: the slot still holds the message of the previous lap
      } else {
        pos = enqueue_pos.load(std::memory_order_relaxed);
      }
    }
    std::memcpy(data(pos), d, len);
    seq(pos)->store(pos + 1, std::memory_order_release);  // payload before "full"
    return true;
  }

  /// Claims the oldest full slot for this consumer: its ticket in `pos`, false when the ring is
  /// empty. The message stays in the slot, to be read there, until free(pos).
  bool try_claim(uint64_t& pos) {
    pos = dequeue_pos.load(std::memory_order_relaxed);
    for (;;) {
      // acquire: pairs with the producer's release, so the payload is visible.
      const uint64_t s = seq(pos)->load(std::memory_order_acquire);
      const int64_t diff = int64_t(s - (pos + 1));
      if (diff == 0) {
        if (dequeue_pos.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) return true;
      } else if (diff < 0) {
        return false;  // empty
      } else {
        pos = dequeue_pos.load(std::memory_order_relaxed);
      }
    }
  }
  /// Gives a claimed slot back to the producers of the next lap.
  void free(uint64_t pos) {
    seq(pos)->store(pos + capacity, std::memory_order_release);
  }  // reads done before "free"

  bool try_pop(std::byte* buf, size_t len) {
    uint64_t pos;
    if (!try_claim(pos)) return false;
    std::memcpy(buf, data(pos), len);
    free(pos);
    return true;
  }

  void push(const std::byte* d, size_t len, const WaitStrategy& w) {
    if (!try_push(d, len)) not_full.wait(w, [&] { return try_push(d, len); });
    // Several consumers may sleep: wake them all, the losers go back to sleep.
    if (sleeps(w)) not_empty.notify(true);
  }
  void pop(std::byte* buf, size_t len, const WaitStrategy& w) {
    if (!try_pop(buf, len)) not_empty.wait(w, [&] { return try_pop(buf, len); });
    if (sleeps(w)) not_full.notify(true);
  }
  /// pop() in place: waits for a full slot, claims it and returns its ticket; the caller reads
  /// data(pos) and then gives it back with release(pos).
  uint64_t claim(const WaitStrategy& w) {
    uint64_t pos;
    if (!try_claim(pos)) not_empty.wait(w, [&] { return try_claim(pos); });
    return pos;
  }
  void release(uint64_t pos, const WaitStrategy& w) {
    free(pos);
    if (sleeps(w)) not_full.notify(true);
  }
};

inline WaitKind parse_wait(const std::string& s) {
  if (s == "spin") return WaitKind::Spin;
  if (s == "spin_yield") return WaitKind::SpinYield;
  if (s == "futex") return WaitKind::Futex;
  return WaitKind::Adaptive;
}

}  // namespace ipclab::messaging
