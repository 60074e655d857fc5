#include "core/run/patterns.hpp"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <system_error>
#include <vector>

#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/load/message.hpp"
#include "core/model/std_params.hpp"
#include "core/run/fault.hpp"
#include "core/run/openloop.hpp"
#include "core/stats/reservoir.hpp"

namespace ipclab {

namespace {

// Seeds of the latency reservoirs (consumer i: + i) and of their merge.
constexpr uint64_t kReservoirSeed = 0x5eed'0002'7e5e'7701ull;

struct TransportShape {
  bool roundtrip;
  bool rate;  // pattern=rate: open loop (core/run/openloop)
  uint64_t window_ns;
  size_t size;
  bool random;
  bool sampled;        // verify=sample: the header, the tail and a word per 4 KiB page (message.hpp)
  uint64_t sample;     // latency_sample: every how many messages are stamped, 0 for Stamping's choice
  uint64_t reservoir;  // latency_reservoir: 0, or the reference's reservoir size
  int producers, consumers;
  bool processes;
  // The consumers' CLOCK_MONOTONIC minus the producers': 0 on one host; across hosts (--remote)
  // the estimate of the offset between the two, added to each send stamp (serve_throughput).
  int64_t clock_offset_ns = 0;
};

TransportShape shape_of(const Params& p) {
  TransportShape t;
  t.roundtrip = std_params::is_roundtrip(p);
  t.rate = std_params::is_rate(p);
  t.window_ns = 0;  // the session's (transport_point)
  t.size = size_t(p.i64("size"));
  t.random = p.has("random") && p.flag("random");
  t.sampled = p.str_or("verify", "full") == "sample";
  t.sample = uint64_t(p.i64_or("latency_sample", 0));
  t.reservoir = uint64_t(p.i64_or("latency_reservoir", 0));
  t.producers = int(p.i64_or("producers", 1));
  t.consumers = int(p.i64_or("consumers", 1));
  t.processes = p.str_or("mode", "threads") == "processes";
  return t;
}

// What a message that reached the client while it waits for the echo of request `seq` is, by its
// sequence number: that echo (its bytes are checked later, off the round trip), the echo of an
// earlier request (a duplicate, intact: read on), or no echo of this client's at all (junk: corrupt,
// read on) — so that a duplicate or an injected message counts once and the exchange goes on in
// step, rather than every later echo being taken for the wrong one. An echo whose sequence number
// itself was damaged is junk, and the client then waits for an echo that never comes: the run
// stalls with that request lost. Only the rare paths decode a whole message here.
enum class Echo { Mine, Stale, Junk };
Echo classify_echo(const std::byte* r, const TransportShape& t, uint64_t seq, int index) {
  if (t.size >= msg::kHeaderSize) {
    const msg::Header h = msg::read_header(r, t.size);
    if (h.producer != uint32_t(index)) return Echo::Junk;
    if (h.seq == seq) return Echo::Mine;
    return h.seq < seq && msg::decode(r, t.size, t.random, h.seq, t.sampled).ok ? Echo::Stale : Echo::Junk;
  }
  // Small messages carry the sequence number modulo 255, as their first byte.
  const uint64_t first = uint64_t(r[0]);
  if (first == seq % 255) return Echo::Mine;
  if (first < 255) {
    const uint64_t back = (seq % 255 + 255 - first) % 255;  // to the latest request with that residue
    if (back <= seq && msg::decode(r, t.size, t.random, seq - back, t.sampled).ok) return Echo::Stale;
  }
  return Echo::Junk;
}

// Round-trip client: sends request `seq`, waits for its echo (classify_echo), checks it is that
// very request. Only the hand-over is on the round trip: the next request is encoded, and the
// previous echo checked, while the server works on the current one (two buffers each way), so the
// RTT measures the transport rather than the harness's own checking.
//
// Its slot's counts hold at every moment, also when the run ends mid-exchange (a stall, a dead
// server): sent = received + corrupt echoes of its own + lost, where lost is the request still
// unanswered (0 or 1); junk and duplicates count apart, and received <= sent.
void roundtrip_client(Worker& w, Endpoint& ep, FaultPoint& fault, const TransportShape& t, int index) {
  std::vector<std::byte> req(t.size), next(t.size), resp(t.size), prev(t.size);
  auto& out = w.out();
  auto check = [&](const std::byte* r, uint64_t seq) {
    auto d = msg::decode(r, t.size, t.random, seq, t.sampled);
    // Small messages carry the sequence only implicitly: decode() checked it byte by byte.
    if (!d.ok || (t.size >= msg::kHeaderSize && (d.h.seq != seq || d.h.producer != uint32_t(index)))) {
      out.integrity.received--;  // taken as received when it came; its bytes say otherwise
      out.integrity.corrupt++;
    }
  };
  uint64_t seq = 0;
  msg::encode(req.data(), t.size, {.seq = seq, .producer = uint32_t(index)}, t.random, t.sampled);
  const std::byte* last = prev.data();  // where the previous echo lies (in place: the transport's)
  Stamping stamping(t.sample, out);
  w.ready();
  while (w.running()) {
    const bool measuring = w.measuring();
    const bool timed = stamping.timed(measuring, seq);
    const uint64_t t0 = timed ? now_ns() : 0;
    fault.before_send();
    // Zero copy: the request is written where the server reads it, on the round trip (that write
    // is the transfer); otherwise it was encoded ahead into `req` and the send copies it.
    std::byte* place = ep.send_buffer(req.data(), t.size);
    const bool in_place = place != req.data();
    if (in_place) msg::encode(place, t.size, {.seq = seq, .producer = uint32_t(index)}, t.random, t.sampled);
    ep.send(place, t.size);
    out.integrity.sent = seq + 1;
    out.integrity.lost = 1;  // until its echo comes
    if (seq > 0) check(last, seq - 1);
    if (!in_place)
      msg::encode(next.data(), t.size, {.seq = seq + 1, .producer = uint32_t(index)}, t.random, t.sampled);
    std::byte* got;
    uint64_t t1;  // when the echo came: its classification is off the round trip
    for (;;) {
      got = fault.after_recv(ep.recv_in_place(resp.data(), t.size), resp.data(), t.size);
      t1 = timed ? now_ns() : 0;
      const Echo e = classify_echo(got, t, seq, index);
      if (e == Echo::Mine) break;
      if (e == Echo::Stale)
        out.integrity.duplicated++;
      else
        out.integrity.corrupt++;
    }
    if (timed) out.record_latency(t1 - t0);
    out.integrity.lost = 0;
    out.integrity.received++;
    if (measuring) {
      out.ops++;
      out.bytes += 2 * t.size;
    }
    req.swap(next);
    if (got == resp.data()) {
      resp.swap(prev);
      last = prev.data();
    } else {
      last = got;
    }
    ++seq;
  }
  if (seq > 0) check(last, seq - 1);
  std::byte* place = ep.send_buffer(req.data(), t.size);
  msg::encode(place, t.size, {.flags = msg::kStop}, t.random, t.sampled);
  ep.send(place, t.size);
}

// A stop marker, checked whole: a message that only claims to be one (a junk message whose flag
// bit happens to be set) is not, and is passed on like any other for the client to judge.
bool is_stop_marker(const std::byte* m, const TransportShape& t) {
  if (!msg::is_stop(m, t.size)) return false;
  if (t.size < msg::kHeaderSize) return true;  // all 0xFF: no data message has a byte 0xFF
  const auto d = msg::decode(m, t.size, t.random, 0, t.sampled);
  return d.ok && d.h.seq == 0 && d.h.producer == 0;
}

// Round-trip server: echoes each request at once. The client's end-to-end check of the echo owns
// every verdict (lost, duplicated, corrupt), so that each message counts once, not once per side:
// a duplicated or injected request is echoed and judged there.
void roundtrip_server(Worker& w, Endpoint& ep, FaultPoint& fault, const TransportShape& t) {
  std::vector<std::byte> buf(t.size);
  w.ready();
  for (;;) {
    std::byte* got = fault.after_recv(ep.recv_in_place(buf.data(), t.size), buf.data(), t.size);
    if (is_stop_marker(got, t)) break;
    fault.before_send();
    ep.send(got, t.size);
    // The harness's step (the phase for its CPU window, the slice, the heartbeat) after the echo is
    // on its way, not between the request and it: off the round trip the client times.
    w.running();
  }
  w.running();
}

// The last producer to finish tells every consumer to stop; FIFO order puts the markers behind
// all data of every producer (the others have finished sending already).
void send_stop_markers(Worker& w, Endpoint& ep, const TransportShape& t, std::vector<std::byte>& buf) {
  if (w.last_producer_left()) {
    for (int c = 0; c < t.consumers; ++c) {
      std::byte* place = ep.send_buffer(buf.data(), t.size);
      msg::encode(place, t.size, {.flags = msg::kStop}, t.random, t.sampled);
      ep.send(place, t.size);
    }
  }
}

void throughput_producer(Worker& w, Endpoint& ep, FaultPoint& fault, const TransportShape& t, int index) {
  std::vector<std::byte> buf(t.size);
  auto& out = w.out();
  uint64_t seq = 0;
  Stamping stamping(t.sample, out);
  w.ready();
  while (w.running()) {
    const bool measuring = w.measuring();
    msg::Header h{.seq = seq,
                  .producer = uint32_t(index),
                  .send_ns = stamping.timed(measuring, seq) ? now_ns() : 0,
                  .flags = measuring ? uint32_t(msg::kMeasured) : 0u};
    std::byte* place = ep.send_buffer(buf.data(), t.size);  // zero copy: where the consumer reads it
    msg::encode(place, t.size, h, t.random, t.sampled);
    fault.before_send();
    ep.send(place, t.size);
    // Stored as it goes (a plain store to its own slot): a run that fails midway still knows
    // how many were sent, so the missing ones count as lost.
    out.integrity.sent = ++seq;
  }
  send_stop_markers(w, ep, t, buf);
}

// Open-loop producer: message k leaves at its intended time (Arrivals), or at once when that has
// passed, and carries that time; it never waits for anything but the schedule and the transport.
void rate_producer(Worker& w, Endpoint& ep, FaultPoint& fault, const TransportShape& t, int index,
                   const RateSpec& spec, int64_t rate) {
  std::vector<std::byte> buf(t.size);
  auto& out = w.out();
  uint64_t seq = 0;
  w.ready();
  Arrivals arrivals = spec.arrivals_for(rate, index, t.producers, now_ns());
  while (w.running()) {
    const uint64_t due = arrivals.next();
    // The send stamp is the wait's own return, as in the pacing floor (pace_alone): nothing of the
    // sender's between them. A stalled sender (fault hook) is late: stamped after the stall, its
    // messages keep their intended times.
    uint64_t at = spec.pace_until(due);
    fault.before_send();
    if (fault.armed()) [[unlikely]]
      at = now_ns();
    const bool measuring = w.measuring();
    msg::Header h{.seq = seq,
                  .producer = uint32_t(index),
                  .send_ns = at,
                  .flags = msg::kIntended | (measuring ? uint32_t(msg::kMeasured) : 0u),
                  .intended_ns = due};
    std::byte* place = ep.send_buffer(buf.data(), t.size);
    msg::encode(place, t.size, h, t.random, t.sampled);
    ep.send(place, t.size);
    if (measuring) out.rate.sent_one(due, at);
    out.integrity.sent = ++seq;
  }
  out.rate.stopped(arrivals, w.window_end());
  send_stop_markers(w, ep, t, buf);
}

// Consumers stop on a stop marker. Several consumers on a queue that is FIFO only per producer
// (e.g. a lock-free MPMC queue) may see the markers overtake data, so the last consumer to stop
// drains until every message the producers sent is accounted for: the others have finished, so
// whatever is still queued can only come to it.
//
// Each message's verdict comes from its sequence number (msg::SeqWindow): new and intact → received; a
// repeat → duplicated (not received again, so received <= sent); a late first arrival → reordered
// (received); one that does not decode — damaged, or no message of this run — → corrupt, and the
// window is left as it was, so the stream goes on in step rather than every later message counting.
void throughput_consumer(Worker& w, Endpoint& ep, FaultPoint& fault, const TransportShape& t, int index,
                         Reservoir* reservoir) {
  std::vector<std::byte> buf(t.size);
  auto& out = w.out();
  std::vector<msg::SeqWindow> window(size_t(t.producers));
  // Returns false on a stop marker.
  auto take = [&]() {
    std::byte* got = fault.after_recv(ep.recv_in_place(buf.data(), t.size), buf.data(), t.size);
    uint64_t arrived = now_ns();
    w.running();
    auto d = msg::decode(got, t.size, t.random, 0, t.sampled);
    if (d.ok && (d.h.flags & msg::kStop)) return false;
    if (!d.ok || d.h.producer >= uint32_t(t.producers)) {
      out.integrity.corrupt++;
      return true;
    }
    auto p = d.h.producer;
    switch (window[p].take(d.h.seq)) {
      case msg::SeqWindow::kRepeat:
        out.integrity.duplicated++;
        return true;
      case msg::SeqWindow::kLate:
        out.integrity.reordered++;
        break;
      case msg::SeqWindow::kNew:
        break;
    }
    out.integrity.received++;
    if (p < uint32_t(kMaxPeersTracked)) {
      out.seen_count[p]++;
      out.seen_seqsum[p] += d.h.seq;
    }
    if (d.h.flags & msg::kMeasured) {
      out.ops++;
      out.bytes += t.size;
      if (d.h.flags & msg::kIntended) {  // open loop: latency from the intended send time
        // Both stamps on this clock (across hosts, corrected by the offset as below).
        const uint64_t intended = d.h.intended_ns + uint64_t(t.clock_offset_ns),
                       sent = d.h.send_ns + uint64_t(t.clock_offset_ns);
        out.record_latency(arrived > intended ? arrived - intended : 0);
        out.rate.received(intended, sent, arrived, t.window_ns);
      } else if (d.h.send_ns) {
        // On this clock. Across hosts a message faster than the offset's error can come out
        // before its stamp: it counts as 0, never as a wrapped-around 2^64.
        const uint64_t sent = d.h.send_ns + uint64_t(t.clock_offset_ns);
        const uint64_t lat = arrived > sent ? arrived - sent : 0;
        out.record_latency(lat);
        if (reservoir) reservoir->offer(lat);
      }
    }
    return true;
  };
  w.ready();
  while (take()) {
  }
  if (!w.last_consumer_left()) return;
  // Producers stored their counts before the last of them sent the markers; the other
  // consumers stored theirs before decrementing consumers_left.
  uint64_t sent = 0, others = 0;
  for (int p = 0; p < t.producers; ++p) sent += w.peer_slot(p).integrity.sent;
  for (int c = 0; c < t.consumers; ++c)
    if (c != index) others += w.peer_slot(t.producers + c).integrity.received;
  while (others + out.integrity.received + out.integrity.corrupt < sent) {
    if (!take()) out.integrity.duplicated++;  // a marker beyond one per consumer
  }
}

// The consumers' latency reservoirs (latency_reservoir > 0), one block each, in memory forked
// consumers share; none without. Unmapped at its end unless kept (a stuck thread may still use it).
class ReservoirBlocks {
 public:
  explicit ReservoirBlocks(const TransportShape& t)
      : words_(t.reservoir ? Reservoir::block_words(t.reservoir) : 0),
        bytes_(words_ * size_t(t.consumers) * sizeof(uint64_t)) {
    if (!bytes_) return;
    void* m = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap latency reservoir");
    mem_ = static_cast<uint64_t*>(m);
  }
  ~ReservoirBlocks() {
    if (mem_) munmap(mem_, bytes_);
  }
  ReservoirBlocks(const ReservoirBlocks&) = delete;
  ReservoirBlocks& operator=(const ReservoirBlocks&) = delete;
  uint64_t* mem() const { return mem_; }
  size_t words() const { return words_; }
  void keep() { mem_ = nullptr; }

 private:
  size_t words_, bytes_;
  uint64_t* mem_ = nullptr;
};

// The run's transport — the mechanism's, or with its receivers far (--remote) the senders' ends
// here — described in the record and attached to the session.
std::unique_ptr<Transport> open_run_transport(Session& s, FarReceivers* far) {
  std::unique_ptr<Transport> transport = far ? far->open_transport(s) : s.mechanism().transport(s.params());
  s.record().extra["object"] = transport->object_name();
  transport->describe(s.record().extra);
  transport->attach(s);
  s.record().extra["duration_s"] = s.options().duration_s;
  return transport;
}

// The workers of one run: a sender per producer on side 0's CPU (a round trip's client, a
// throughput or open-loop producer) and, unless they are far, a receiver per consumer on side 1's.
// Each opens its endpoint and its fault hooks inside its worker (thread or child process). The
// bodies hold nothing of the caller's frame or of the session by reference (the mechanism is the
// registry's): a stuck thread may outlive both.
std::vector<WorkerSpec> transport_workers(Session& s, Transport* tp, const TransportShape& t,
                                          const RateSpec* spec, const RateSpec& rate_spec, int64_t rate,
                                          bool far, const ReservoirBlocks& reservoirs) {
  const Mechanism& mech = s.mechanism();
  const double dur = s.options().duration_s;
  std::vector<WorkerSpec> workers;
  for (int i = 0; i < t.producers; ++i)
    workers.push_back({.role = role_name(Role::Producer, t.roundtrip),
                       .index = i,
                       .cpu = s.cpu_for(0),
                       .body =
                           [tp, t, i, &mech, dur, spec, rate_spec, rate](Worker& w) {
                             auto ep = tp->open(Role::Producer, i);
                             FaultPoint fault(mech, dur, Role::Producer, t.roundtrip, w);
                             if (t.roundtrip)
                               roundtrip_client(w, *ep, fault, t, i);
                             else if (spec)
                               rate_producer(w, *ep, fault, t, i, rate_spec, rate);
                             else
                               throughput_producer(w, *ep, fault, t, i);
                           },
                       // Throughput's ops and latencies are the consumers' to count: far ones count them
                       // there, over no slices of this host's window.
                       .series = t.roundtrip || !far,
                       .transport_role = Role::Producer});
  uint64_t* const res_mem = reservoirs.mem();
  const size_t res_words = reservoirs.words();
  for (int i = 0; i < (far ? 0 : t.consumers); ++i)
    workers.push_back({.role = role_name(Role::Consumer, t.roundtrip),
                       .index = i,
                       .cpu = s.cpu_for(1),
                       .body =
                           [tp, t, i, &mech, dur, res_mem, res_words](Worker& w) {
                             auto ep = tp->open(Role::Consumer, i);
                             FaultPoint fault(mech, dur, Role::Consumer, t.roundtrip, w);
                             // Seeded per consumer from fixed constants: the same stream keeps the same
                             // sample.
                             std::optional<Reservoir> res;
                             if (res_mem)
                               res.emplace(res_mem + size_t(i) * res_words, t.reservoir,
                                           kReservoirSeed + uint64_t(i));
                             if (t.roundtrip)
                               roundtrip_server(w, *ep, fault, t);
                             else
                               throughput_consumer(w, *ep, fault, t, i, res ? &*res : nullptr);
                           },
                       .transport_role = Role::Consumer});
  return workers;
}

// Throughput: every message each producer sent must have reached exactly one consumer, intact —
// by what the consumers saw of producer p's messages: here, their slots; far, what they reported
// (`far_seen`). A corrupt message is counted by the consumer that got it and is missing from the
// seen counts (its producer field cannot be trusted), so the missing ones are lost only beyond the
// corrupt: lost = sent - received - corrupt. Also after a failure (a stall, a dead worker):
// messages the run never delivered count as lost, in flight or not.
void check_delivery(Record& rec, const TransportShape& t, const WorkerResults& slots, bool far,
                    const FarSeen& far_seen) {
  auto seen = [&](int p) {
    if (far) {
      const size_t i = size_t(p);
      return std::pair{i < far_seen.count.size() ? far_seen.count[i] : 0,
                       i < far_seen.seqsum.size() ? far_seen.seqsum[i] : 0};
    }
    uint64_t count = 0, seqsum = 0;
    for (int c = 0; c < t.consumers; ++c) {
      count += slots[t.producers + c].seen_count[p];
      seqsum += slots[t.producers + c].seen_seqsum[p];
    }
    return std::pair{count, seqsum};
  };
  uint64_t missing = 0;
  for (int p = 0; p < t.producers; ++p) {
    const uint64_t sent = slots[p].integrity.sent;
    const auto [count, seqsum] = seen(p);
    if (count < sent) missing += sent - count;
    // A repeat that reached another consumer than the first copy: counted received twice.
    if (count > sent) {
      rec.integrity.duplicated += count - sent;
      rec.integrity.received -= count - sent;
    }
    // Sequences 0..sent-1 sum to sent*(sent-1)/2; anything else was altered in flight.
    if (count == sent && seqsum != sent * (sent - 1) / 2) rec.integrity.corrupt++;
  }
  rec.integrity.lost += missing - std::min(missing, rec.integrity.corrupt);
}

// The consumers' reservoirs merged into the record's extra.reservoir: its size, the latencies
// seen and kept, and the kept ones' percentiles.
void fold_reservoirs(Record& rec, const TransportShape& t, const ReservoirBlocks& reservoirs) {
  std::vector<const uint64_t*> blocks;
  uint64_t seen = 0;
  for (int c = 0; c < t.consumers; ++c) {
    blocks.push_back(reservoirs.mem() + size_t(c) * reservoirs.words());
    seen += Reservoir::seen(blocks.back());
  }
  auto kept = Reservoir::merge(blocks, t.reservoir, kReservoirSeed);
  nlohmann::json r = {{"size", t.reservoir}, {"seen", seen}, {"kept", kept.size()}};
  if (!kept.empty())
    for (auto [key, q] :
         {std::pair{"p50_us", 0.5}, {"p90_us", 0.9}, {"p95_us", 0.95}, {"p99_us", 0.99}, {"p999_us", 0.999}})
      r[key] = Reservoir::quantile(kept, q) / 1000.0;
  rec.extra["reservoir"] = r;
}

// A run whose integrity is not clean fails on it; after a stall or a death the verdict joins the
// first reason: the run failed on both counts.
void fail_on_integrity(Record& rec, const TransportShape& t, const WorkerResults& slots) {
  if (rec.integrity.clean()) return;
  std::string why = "integrity: " + rec.integrity.text();
  if (t.roundtrip)
    for (int c = 0; c < t.producers; ++c)
      if (const Integrity& i = slots[c].integrity; i.lost)
        why += fmt::format(" (request {} of client {} unanswered)", i.sent - 1, c);
  if (rec.status == Status::Failed)
    rec.error += "; " + why;
  else
    rec.fail(why);
}

// One run of a transport: throughput, round trips, or (spec given) open loop at `rate`, whose
// figures it returns. `far`: its receivers on the other host (--remote), nullptr: here.
std::optional<RatePoint> transport_point(Session& s, TransportShape t, const RateSpec* spec, int64_t rate,
                                         FarReceivers* far) {
  t.window_ns = uint64_t(s.options().duration_s * 1e9);
  ReservoirBlocks reservoirs(t);
  // --remote: the receivers run on the other host (core/remote/remote.hpp); only the senders run here.
  std::unique_ptr<Transport> transport = open_run_transport(s, far);
  RateSpec rate_spec = spec ? *spec : RateSpec{};  // copied into the workers' bodies
  // The producers share side 0's CPU: the floor of one of them there, before any worker starts.
  if (spec) rate_spec.measure_floor(rate, t.producers, s.cpu_for(0));
  std::vector<WorkerSpec> workers =
      transport_workers(s, transport.get(), t, spec, rate_spec, rate, far != nullptr, reservoirs);
  const size_t workers_n = workers.size();
  const WorkerResults slots = s.run_workers(std::move(workers), t.processes, t.roundtrip ? "rtt" : "one_way");
  Record& rec = s.record();
  transport->ended(rec);
  const FarSeen far_seen = far ? far->fold_far_side(s) : FarSeen{};
  if (!t.roundtrip) check_delivery(rec, t, slots, far != nullptr, far_seen);
  if (reservoirs.mem()) fold_reservoirs(rec, t, reservoirs);
  fail_on_integrity(rec, t, slots);
  std::optional<RatePoint> point;
  if (spec) point = fold_rate(rec, rate_spec, rate, slots, int(workers_n), {}, far_seen.rate.get());
  if (s.stuck()) {  // a stuck thread may still use them
    transport.release();
    reservoirs.keep();
  }
  return point;
}

}  // namespace

void run_transport(Session& s, FarReceivers* far) {
  const auto t = shape_of(s.params());
  if (!t.roundtrip && t.size < msg::kHeaderSize)
    throw UsageError(
        fmt::format("throughput needs messages of at least {} bytes to carry sequence and timestamp; use "
                    "-p size={} or pattern=roundtrip",
                    msg::kHeaderSize, msg::kHeaderSize));
  if (t.roundtrip && t.producers != t.consumers)
    throw UsageError("roundtrip pairs one producer with one consumer; set producers = consumers");
  if (t.producers > kMaxPeersTracked)
    throw UsageError(fmt::format("at most {} producers are supported", kMaxPeersTracked));

  if (t.rate && t.size < msg::kIntendedHeaderSize)
    throw UsageError(fmt::format("pattern=rate needs messages of at least {} bytes; use -p size={}",
                                 msg::kIntendedHeaderSize, msg::kIntendedHeaderSize));
  if (t.rate) {
    run_rate(s, [t, far](Session& ss, int64_t rate) {
      const RateSpec spec = RateSpec::of(ss.params());
      return *transport_point(ss, t, &spec, rate, far);
    });
    return;
  }
  transport_point(s, t, nullptr, 0, far);
}

void serve_roundtrip(Worker& w, Endpoint& ep, const Mechanism& mech, const Params& p) {
  FaultPoint fault(mech, 0, Role::Consumer, true, w);
  roundtrip_server(w, ep, fault, shape_of(p));
}

void serve_throughput(Worker& w, Endpoint& ep, const Mechanism& mech, const Params& p, int index,
                      int64_t clock_offset_ns, uint64_t window_ns) {
  FaultPoint fault(mech, 0, Role::Consumer, false, w);
  TransportShape t = shape_of(p);
  t.clock_offset_ns = clock_offset_ns;
  t.window_ns = window_ns;
  throughput_consumer(w, ep, fault, t, index, nullptr);
}

// One timed batch of a loop's operations, in a function of its own that starts on a cache line: a
// null op costs a few cycles, and the figure must not move with where the linker happens to put
// the loop, which any change elsewhere in the binary shifts (a loop that crossed a 32-byte
// boundary cost harness/null 20%: 1.49 -> 1.82 ns on an AMD EPYC).
namespace {
[[gnu::noinline, gnu::aligned(64)]] void run_batch(Loop* lp, uint64_t batch) {
  for (uint64_t i = 0; i < batch; ++i) lp->op();
}
}  // namespace

void run_loop(Session& s) {
  std::unique_ptr<Loop> loop = s.mechanism().loop(s.params());
  Loop* lp = loop.get();
  // Ops are timed in batches: one clock read costs ~30 ns here, far more than a null op (a loop
  // whose op takes milliseconds, a 64 MiB memcpy, asks for batches of one).
  const uint64_t batch = std::max<uint64_t>(1, lp->batch()), bytes = lp->bytes_per_op();
  s.run_workers({{"worker", 0, s.cpu_for(0),
                  [lp, batch, bytes](Worker& w) {
                    auto& out = w.out();
                    w.ready();
                    while (w.running()) {
                      const bool measuring = w.measuring();
                      uint64_t t0 = now_ns();
                      run_batch(lp, batch);
                      uint64_t dt = now_ns() - t0;
                      if (measuring) {
                        out.ops += batch;
                        out.bytes += batch * bytes;
                        out.record_latency(dt / batch);
                      }
                    }
                  }}},
                false, "batch_mean");
  if (s.stuck()) loop.release();
}

}  // namespace ipclab
