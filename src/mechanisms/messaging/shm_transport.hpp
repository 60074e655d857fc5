#pragma once
// The transport of the shared-memory rings: each ring in its own MAP_SHARED anonymous mapping,
// made by the coordinator before any worker starts, so forked workers share it and nothing
// named is left behind. Throughput: one ring; roundtrip: a request and a reply ring per pair.
// Each mapping is placed as -p memory= asks (core/machine/numa.hpp) before the ring is built in it,
// and the record states where the kernel holds its pages once the run is over.
#include <sys/mman.h>

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <system_error>
#include <vector>

#include "core/machine/numa.hpp"
#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"
#include "core/model/std_params.hpp"
#include "mechanisms/messaging/shm_ring.hpp"

namespace ipclab::messaging {

/// A MAP_SHARED anonymous mapping holding one object built in place.
class SharedMapping {
 public:
  explicit SharedMapping(size_t bytes) : bytes_(bytes) {
    mem_ = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem_ == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap shared ring");
  }
  ~SharedMapping() { munmap(mem_, bytes_); }
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;
  void* get() const { return mem_; }

 private:
  void* mem_;
  size_t bytes_;
};

/// Rings of type `Ring` (SpscRing or MpmcRing), opened as `Ep` endpoints.
template <class Ring, class Ep>
class RingTransport final : public Transport {
 public:
  explicit RingTransport(const Params& p) {
    const bool roundtrip = std_params::is_roundtrip(p);
    rings_wanted_ = roundtrip ? 2 * int(p.i64_or("producers", 1)) : 1;
    size_ = size_t(p.i64("size"));
    capacity_ = pow2_at_least(uint64_t(p.i64("queue_depth")));
    wait_.kind = parse_wait(p.str("wait"));
    if (wait_.kind == WaitKind::Adaptive) wait_.budget = waits::adaptive(p.str_or("placement", "") == "same");
    roundtrip_ = roundtrip;
  }
  // The rings are made here, where the sides' CPUs are known: each mapping is placed (memory=)
  // before its ring is built in it, the ring's first touch.
  void attach(Session& s) override {
    memory_ = numa::SharedMemory(s.memory_policy());
    const size_t bytes = Ring::bytes(capacity_, size_);
    for (int i = 0; i < rings_wanted_; ++i) {
      maps_.push_back(std::make_unique<SharedMapping>(bytes));
      memory_.place(maps_.back()->get(), bytes);
      rings_.push_back(Ring::create(maps_.back()->get(), capacity_, size_));
    }
  }
  void ended(Record& rec) const override { memory_.describe(rec); }
  std::unique_ptr<Endpoint> open(Role role, int index) override {
    if (rings_.size() != size_t(rings_wanted_))
      throw std::logic_error("ring transport opened before attach()");
    if (!roundtrip_) return std::make_unique<Ep>(*rings_[0], *rings_[0], role, wait_, size_);
    Ring& req = *rings_[size_t(2 * index)];
    Ring& rep = *rings_[size_t(2 * index + 1)];
    // Producer (client) sends on req and receives on rep; the consumer (server) the reverse.
    if (role == Role::Producer) return std::make_unique<Ep>(req, rep, Role::Producer, wait_, size_);
    return std::make_unique<Ep>(rep, req, Role::Consumer, wait_, size_);
  }
  void describe(nlohmann::json& extra) const override {
    extra["queue_depth_used"] = capacity_;
    extra["rings"] = rings_wanted_;
    if (wait_.kind == WaitKind::Adaptive) extra["wait_budget"] = waits::to_json(wait_.budget);
  }

 private:
  int rings_wanted_ = 1;
  numa::SharedMemory memory_;
  std::vector<std::unique_ptr<SharedMapping>> maps_;
  std::vector<Ring*> rings_;
  size_t size_ = 0;
  uint64_t capacity_ = 0;
  WaitStrategy wait_;
  bool roundtrip_ = false;
};

/// The ring ends of one endpoint of SPSC rings. In roundtrip a side pushes to one ring and pops
/// from another; in throughput it uses only its own end of the one ring. Ring ends are
/// single-owner: each endpoint builds only those it uses.
struct SpscEnds {
  SpscEnds(SpscRing& out, SpscRing& in, Role role, const WaitStrategy& w) {
    const bool same = &out == &in;
    if (!same || role == Role::Producer) tx.emplace(out, w);
    if (!same || role == Role::Consumer) rx.emplace(in, w);
  }
  std::optional<SpscRing::Producer> tx;
  std::optional<SpscRing::Consumer> rx;
};

/// An endpoint of SPSC rings that copies in and out (bulk/shm_spsc; messaging/shm_spsc receives in
/// place: shm_spsc.cpp).
class SpscEndpoint final : public Endpoint {
 public:
  SpscEndpoint(SpscRing& out, SpscRing& in, Role role, const WaitStrategy& w, size_t)
      : ends_(out, in, role, w) {}
  void send(const std::byte* d, size_t len) override { ends_.tx->push(d, len); }
  size_t recv(std::byte* buf, size_t len) override {
    ends_.rx->pop(buf, len);
    return len;
  }

 private:
  SpscEnds ends_;
};

}  // namespace ipclab::messaging
