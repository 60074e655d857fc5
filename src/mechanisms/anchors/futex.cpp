// anchors/futex: a futex wake round trip between two threads that sleep while they wait: the
// cost of the kernel's wake-up path and two context switches, the floor under every blocking
// transport's round trip.
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include "core/base/clock.hpp"
#include "core/base/fdio.hpp"
#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"
#include "core/model/std_params.hpp"

namespace ipclab {
namespace {

// Word states: whose turn it is, or stop.
enum : uint32_t { kClientTurn = 0, kServerTurn = 1, kStopped = 2 };

void futex_wait(std::atomic<uint32_t>& word, uint32_t while_value) {
  while (word.load(std::memory_order_acquire) == while_value) {
    long r = ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, while_value,
                       nullptr, nullptr, 0);
    if (r != 0 && errno != EAGAIN) check_errno("futex wait");
  }
}
void futex_wake(std::atomic<uint32_t>& word) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

void futex_pingpong(Session& s) {
  struct alignas(64) Word {
    std::atomic<uint32_t> v{kClientTurn};
  };
  auto word = std::make_unique<Word>();
  auto* w_ = &word->v;
  std::vector<WorkerSpec> workers;
  workers.push_back({"client", 0, s.cpu_for(0), [w_](Worker& w) {
                       auto& out = w.out();
                       w.ready();
                       while (w.running()) {
                         const bool measuring = w.measuring();
                         uint64_t t0 = measuring ? now_ns() : 0;
                         w_->store(kServerTurn, std::memory_order_release);
                         futex_wake(*w_);
                         futex_wait(*w_, kServerTurn);
                         if (measuring) {
                           out.record_latency(now_ns() - t0);
                           out.ops++;
                         }
                         out.integrity.sent++;
                         out.integrity.received++;
                       }
                       w_->store(kStopped, std::memory_order_release);
                       futex_wake(*w_);
                     }});
  workers.push_back({"server", 0, s.cpu_for(1), [w_](Worker& w) {
                       w.ready();
                       for (;;) {
                         futex_wait(*w_, kClientTurn);
                         w.running();
                         if (w_->load(std::memory_order_acquire) == kStopped) break;
                         w_->store(kClientTurn, std::memory_order_release);
                         futex_wake(*w_);
                       }
                     }});
  s.run_workers(std::move(workers), false, "rtt");
  if (s.stuck()) word.release();  // an abandoned thread may still touch it
}

IPCLAB_REGISTER(Mechanism{
    .suite = "anchors",
    .name = "futex",
    .help = "futex wake round trip between two sleeping threads",
    .params = {std_params::placement()},
    .workload = futex_pingpong,
});

}  // namespace
}  // namespace ipclab
