// anchors/c2c: one cache line bounced between two CPUs. The client writes an odd value, the
// server answers with the next even one; a round trip is two cache-line transfers, the floor
// under any shared-memory transport's round trip.
//
// layout=split is the floor under a transport with a channel per direction (a request ring and a
// reply ring): each direction a ring of slots of `lines` cache lines, the first line's word the
// slot's sequence (stored last, waited on), every further line a word that must equal it (read
// after the sequence, checked). Nothing else: no copy, no message, no index.
#include <immintrin.h>
#include <atomic>
#include <memory>

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

// layout=shared: the one line; message k is 2k+1 one way and 2k+2 back.
struct SharedLine {
  Line line;
  // release/acquire: the value itself is the message, nothing else to publish.
  void request(uint64_t k) { line.value.store(2 * k + 1, std::memory_order_release); }
  bool replied(uint64_t k) { return line.value.load(std::memory_order_acquire) == 2 * k + 2; }
  bool reply_whole(uint64_t) { return true; }
  uint64_t poll(uint64_t) { return line.value.load(std::memory_order_acquire); }
  static bool is_request(uint64_t v, uint64_t k) { return v == 2 * k + 1; }
  bool request_whole(uint64_t) { return true; }
  void reply(uint64_t k) { line.value.store(2 * k + 2, std::memory_order_release); }
  void done(uint64_t) { line.value.store(kDone, std::memory_order_release); }
};

// One direction of layout=split: kSlots slots of `lines` lines each, used in turn.
constexpr uint64_t kSlots = 64;
struct SplitRing {
  explicit SplitRing(uint64_t lines_per_slot)
      : lines(lines_per_slot), line(new Line[kSlots * lines_per_slot]) {}
  uint64_t lines;
  std::unique_ptr<Line[]> line;
  Line* slot(uint64_t k) { return &line[(k % kSlots) * lines]; }
  /// Message k: the further lines first, then the sequence (release: they are visible before it).
  void put(uint64_t k) {
    Line* s = slot(k);
    for (uint64_t j = 1; j < lines; ++j) s[j].value.store(k + 1, std::memory_order_relaxed);
    s[0].value.store(k + 1, std::memory_order_release);
  }
  uint64_t sequence(uint64_t k) { return slot(k)->value.load(std::memory_order_acquire); }
  /// Message k's further lines, once its sequence was seen: false when one does not hold it.
  bool check(uint64_t k) {
    Line* s = slot(k);
    bool ok = true;
    for (uint64_t j = 1; j < lines; ++j) ok &= s[j].value.load(std::memory_order_relaxed) == k + 1;
    return ok;
  }
};

// layout=split: a request ring and a reply ring.
struct SplitRings {
  explicit SplitRings(uint64_t lines) : to_server(lines), to_client(lines) {}
  SplitRing to_server, to_client;
  void request(uint64_t k) { to_server.put(k); }
  bool replied(uint64_t k) { return to_client.sequence(k) == k + 1; }
  bool reply_whole(uint64_t k) { return to_client.check(k); }
  uint64_t poll(uint64_t k) { return to_server.sequence(k); }
  static bool is_request(uint64_t v, uint64_t k) { return v == k + 1; }
  bool request_whole(uint64_t k) { return to_server.check(k); }
  void reply(uint64_t k) { to_client.put(k); }
  void done(uint64_t k) { to_server.slot(k)->value.store(kDone, std::memory_order_release); }
};

// The client sends message k and spins until its reply; the server answers each request as it
// comes. A message whose further lines disagree with its sequence is corrupt.
template <class Layout>
void bounce(Session& s, std::unique_ptr<Layout> layout) {
  const uint64_t sample = uint64_t(s.params().i64("latency_sample"));  // 0: Stamping's choice
  Layout* l = layout.get();
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
                         l->request(k);
                         while (!l->replied(k)) {
                           _mm_pause();
                           if ((++spins & 4095) == 0 && w.abort_requested()) throw Aborted();
                         }
                         if (!l->reply_whole(k)) out.integrity.corrupt++;
                         if (timed) out.record_latency(now_ns() - t0);
                         if (measuring) out.ops++;
                         ++k;
                       }
                       l->done(k);
                       out.integrity.sent = out.integrity.received = k;
                     }});
  workers.push_back({"server", 0, s.cpu_for(1), [l](Worker& w) {
                       uint64_t k = 0, spins = 0;
                       w.ready();
                       for (;;) {
                         const uint64_t v = l->poll(k);
                         if (Layout::is_request(v, k)) {
                           if (!l->request_whole(k)) w.out().integrity.corrupt++;
                           l->reply(k);
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
  if (s.stuck()) layout.release();  // an abandoned thread may still touch it
}

void c2c(Session& s) {
  if (s.params().str("layout") == "split")
    bounce(s, std::make_unique<SplitRings>(uint64_t(s.params().i64("lines"))));
  else
    bounce(s, std::make_unique<SharedLine>());
}

IPCLAB_REGISTER(Mechanism{
    .suite = "anchors",
    .name = "c2c",
    .help = "cache-line round trip between two CPUs (two spinning threads)",
    .params = {std_params::placement({"cross", "unpinned"}, {"cross"}),
               std_params::latency_sample(),
               {.name = "layout",
                .type = ParamType::String,
                .def = "shared",
                .choices = {"shared", "split"},
                .help = "shared: one line both ways; split: a ring of slots per direction, the "
                        "floor under a transport with a request and a reply channel (each slot "
                        "`lines` lines: the sequence's, then lines read after it)",
                .quick = {"shared"},
                .full = {"shared", "split"}},
               {.name = "lines",
                .type = ParamType::Int,
                .def = "1",
                .help = "cache lines a message spans in each direction (a 64-byte message and "
                        "its sequence word: 2)",
                .quick = {"1"},
                .full = {"1", "2"},
                .min = 1,
                .max = 16,
                .only_with = {"layout", {"split"}}}},
    .workload = c2c,
});

}  // namespace
}  // namespace ipclab
