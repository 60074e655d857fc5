#pragma once
// Wait strategies of the pingpong suite: how one side waits for the slot's state to change and
// how it hands the slot over (and wakes its peer). Host and C++ guests use the same code; the Go
// guest mirrors it (peers/go/pingpong/wait.go). Orderings are explained in slot.hpp.
#include <errno.h>
#include <immintrin.h>
#include <linux/futex.h>
#include <sched.h>
#include <semaphore.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <string>
#include <vector>

#include "core/base/clock.hpp"
#include "core/measure/session.hpp"
#include "mechanisms/pingpong/slot.hpp"

namespace ipclab::pingpong {

// Adaptive: adaptive_futex with a budget calibrated in time (core/machine/waits.hpp) instead of the
// reference's spin_limit: it spins only while the peer runs on another CPU, and yields while it
// shares this one.
enum class Wait { Spin, SpinYield, AdaptiveFutex, AdaptiveSem, Sem, Futex, Eventfd, Adaptive };

inline const std::vector<std::string>& wait_names() {
  static const std::vector<std::string> names{"spin", "spin_yield", "adaptive_futex", "adaptive_sem",
                                              "sem",  "futex",      "eventfd",        "adaptive"};
  return names;
}
inline Wait wait_of(const std::string& name) {
  const auto& n = wait_names();
  for (size_t i = 0; i < n.size(); ++i)
    if (n[i] == name) return Wait(i);
  return Wait::Spin;
}
inline bool uses_sem(Wait w) { return w == Wait::AdaptiveSem || w == Wait::Sem; }
inline bool uses_futex(Wait w) { return w == Wait::AdaptiveFutex || w == Wait::Futex || w == Wait::Adaptive; }

/// What one side of one pair blocks on, and what wakes its peer.
struct SideSync {
  sem_t* my_sem = nullptr;
  sem_t* peer_sem = nullptr;
  int my_efd = -1, peer_efd = -1;
};

constexpr uint32_t bit(uint32_t state) { return 1u << state; }

class Strategy {
 public:
  /// `spin_limit`: pauses before an adaptive wait sleeps; `yield_ns`: how long it yields first
  /// (Wait::Adaptive with both sides on one CPU, whose spin_limit is then 0).
  Strategy(Wait w, int spin_limit, bool futex_private, uint64_t yield_ns = 0)
      : wait_(w),
        spin_limit_(w == Wait::Sem || w == Wait::Futex ? 0 : spin_limit),
        futex_op_private_(futex_private ? FUTEX_PRIVATE_FLAG : 0),
        yield_ns_(w == Wait::Adaptive ? yield_ns : 0) {}

  Wait wait() const { return wait_; }

  /// Waits until the slot's state is one of `mask` (bits of State) and returns it. `mine` is
  /// this side's sleeping flag. `host` (the host side's Worker; null for a guest) ends the wait
  /// with Aborted once its run aborts.
  uint32_t wait_for(Slot& s, std::atomic<uint32_t>& mine, const SideSync& io, uint32_t mask,
                    const Worker* host) const {
    uint32_t st;
    switch (wait_) {
      case Wait::Spin:
        for (uint32_t i = 1;; ++i) {
          st = s.state.load(std::memory_order_acquire);
          if (bit(st) & mask) return st;
          _mm_pause();
          if ((i & 4095) == 0) check(host);
        }
      case Wait::SpinYield:
        for (uint32_t i = 1;; ++i) {
          st = s.state.load(std::memory_order_acquire);
          if (bit(st) & mask) return st;
          sched_yield();
          if ((i & 63) == 0) check(host);
        }
      case Wait::Eventfd:
        // One counter increment per hand-over; the counter persists, so no wake-up is lost.
        for (;;) {
          st = s.state.load(std::memory_order_acquire);
          if (bit(st) & mask) return st;
          uint64_t v;
          if (::read(io.my_efd, &v, sizeof v) < 0 && errno != EINTR && errno != EAGAIN)
            throw std::system_error(errno, std::generic_category(), "eventfd read");
          check(host);
        }
      default:
        break;
    }
    // adaptive on one CPU: hand the CPU to the peer, which usually answers at once.
    if (yield_ns_)
      for (const uint64_t until = now_ns() + yield_ns_; now_ns() < until;) {
        sched_yield();
        st = s.state.load(std::memory_order_acquire);
        if (bit(st) & mask) return st;
      }
    // adaptive*: spin first (the reference's latency phase); sem, futex: spin_limit_ is 0.
    for (int i = 0; i < spin_limit_; ++i) {
      st = s.state.load(std::memory_order_acquire);
      if (bit(st) & mask) return st;
      _mm_pause();
    }
    for (;;) {
      mine.store(1, std::memory_order_seq_cst);  // Dekker: flag, then state
      st = s.state.load(std::memory_order_seq_cst);
      if (bit(st) & mask) {
        mine.store(0, std::memory_order_relaxed);  // a stale 1 costs one spare post, never a hang
        return st;
      }
      if (uses_sem(wait_)) {
        if (sem_wait(io.my_sem) != 0 && errno != EINTR)
          throw std::system_error(errno, std::generic_category(), "sem_wait");
      } else {
        // The kernel re-checks state == st atomically, so a hand-over between our load and the
        // sleep makes this return at once. The timeout lets a host notice an abort.
        timespec ts{0, 100'000'000};
        ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&s.state), FUTEX_WAIT | futex_op_private_, st,
                  host ? &ts : nullptr, nullptr, 0);
      }
      mine.store(0, std::memory_order_relaxed);
      st = s.state.load(std::memory_order_acquire);
      if (bit(st) & mask) return st;
      check(host);
    }
  }

  /// Publishes `state` (the fields written before it go with it) and wakes the peer if needed.
  void hand_over(Slot& s, uint32_t state, std::atomic<uint32_t>& peer, const SideSync& io) const {
    switch (wait_) {
      case Wait::Spin:
      case Wait::SpinYield:
        s.state.store(state, std::memory_order_release);
        return;
      case Wait::Eventfd:
        s.state.store(state, std::memory_order_release);
        post_efd(io.peer_efd);
        return;
      default:
        s.state.store(state, std::memory_order_seq_cst);  // Dekker: state, then flag
        if (peer.load(std::memory_order_seq_cst)) wake(s, io, 1);
    }
  }

  /// Ends the slot: DONE, and an unconditional wake-up so that a sleeping guest sees it.
  void finish(Slot& s, const SideSync& io) const {
    s.state.store(kDone, std::memory_order_seq_cst);
    if (wait_ == Wait::Eventfd)
      post_efd(io.peer_efd);
    else if (uses_sem(wait_) || uses_futex(wait_))
      wake(s, io, INT_MAX);
  }

 private:
  static void check(const Worker* host) {
    if (host && host->abort_requested()) throw Aborted();
  }
  static void post_efd(int fd) {
    uint64_t one = 1;
    while (::write(fd, &one, sizeof one) < 0 && errno == EINTR) {
    }
  }
  void wake(Slot& s, const SideSync& io, int n) const {
    if (uses_sem(wait_))
      sem_post(io.peer_sem);
    else
      ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&s.state), FUTEX_WAKE | futex_op_private_, n, nullptr,
                nullptr, 0);
  }

  Wait wait_;
  int spin_limit_;
  int futex_op_private_;
  uint64_t yield_ns_;
};

}  // namespace ipclab::pingpong
