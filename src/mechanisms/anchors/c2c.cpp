// anchors/c2c: one cache line bounced between two CPUs. The client writes an odd value, the
// server answers with the next even one; a round trip is two cache-line transfers, the floor
// under any shared-memory transport's round trip.
#include <immintrin.h>
#include <atomic>

#include "core/base/clock.hpp"
#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"
#include "core/model/std_params.hpp"

namespace ipclab {
namespace {

struct alignas(64) Line {
  std::atomic<uint64_t> value{0};
};

// The client ends the run by writing kDone: the server must not leave on the phase alone, or it
// could leave just as the client published a round trip, and the client would wait forever.
constexpr uint64_t kDone = UINT64_MAX;

void c2c(Session& s) {
  const uint64_t sample = uint64_t(s.params().i64("latency_sample"));  // 0: Stamping's choice
  auto line = std::make_unique<Line>();
  Line* l = line.get();
  std::vector<WorkerSpec> workers;
  workers.push_back({"client", 0, s.cpu_for(0), [l, sample](Worker& w) {
                       auto& out = w.out();
                       uint64_t k = 0, spins = 0;
                       Stamping stamping(sample, out);
                       w.ready();
                       while (w.running()) {
                         const bool measuring = w.measuring();
                         const bool timed = stamping.timed(measuring, k);
                         uint64_t t0 = timed ? now_ns() : 0;
                         // release/acquire: the value itself is the message, nothing else to publish.
                         l->value.store(2 * k + 1, std::memory_order_release);
                         while (l->value.load(std::memory_order_acquire) != 2 * k + 2) {
                           _mm_pause();
                           if ((++spins & 4095) == 0 && w.abort_requested()) throw Aborted();
                         }
                         if (timed) out.record_latency(now_ns() - t0);
                         if (measuring) out.ops++;
                         ++k;
                       }
                       l->value.store(kDone, std::memory_order_release);
                       out.integrity.sent = out.integrity.received = k;
                     }});
  workers.push_back({"server", 0, s.cpu_for(1), [l](Worker& w) {
                       uint64_t k = 0, spins = 0;
                       w.ready();
                       for (;;) {
                         uint64_t v = l->value.load(std::memory_order_acquire);
                         if (v == 2 * k + 1) {
                           l->value.store(2 * k + 2, std::memory_order_release);
                           ++k;
                           continue;
                         }
                         if (v == kDone) break;
                         _mm_pause();
                         // Follow the phase for the CPU window; leave only on kDone or an abort.
                         if ((++spins & 255) == 0) {
                           w.running();
                           if (w.abort_requested()) throw Aborted();
                         }
                       }
                     }});
  s.run_workers(std::move(workers), false, "rtt");
  if (s.stuck()) line.release();  // an abandoned thread may still touch it
}

IPCLAB_REGISTER(Mechanism{
    .suite = "anchors",
    .name = "c2c",
    .help = "cache-line round trip between two CPUs (two spinning threads)",
    .params = {std_params::placement({"cross", "unpinned"}, {"cross"}), std_params::latency_sample()},
    .workload = c2c,
});

}  // namespace
}  // namespace ipclab
