#pragma once
// In-process queues (threads only): the transport gives every channel a pool of queue_depth
// message buffers; `Queue` moves buffer indices from producers to consumers. Roundtrip: a
// request and a reply channel per pair; throughput: one channel shared by every worker.
#include <cstring>
#include <memory>
#include <vector>

#include "core/model/mechanism.hpp"
#include "core/model/std_params.hpp"

namespace ipclab::messaging {

/// `Queue` must offer: Queue(depth, size); void push(const std::byte*, size_t);
/// void pop(std::byte*, size_t). Both block (abortably) when full / empty.
template <class Queue>
class InprocTransport final : public Transport {
 public:
  explicit InprocTransport(const Params& p) {
    roundtrip_ = std_params::is_roundtrip(p);
    const int n = roundtrip_ ? 2 * int(p.i64("producers")) : 1;
    for (int i = 0; i < n; ++i)
      queues_.push_back(std::make_unique<Queue>(size_t(p.i64("queue_depth")), size_t(p.i64("size"))));
  }
  std::unique_ptr<Endpoint> open(Role role, int index) override {
    if (!roundtrip_) return std::make_unique<Ep>(*queues_[0], *queues_[0]);
    Queue& req = *queues_[size_t(2 * index)];
    Queue& rep = *queues_[size_t(2 * index + 1)];
    if (role == Role::Producer) return std::make_unique<Ep>(req, rep);
    return std::make_unique<Ep>(rep, req);
  }

 private:
  struct Ep final : Endpoint {
    Queue& out;
    Queue& in;
    Ep(Queue& o, Queue& i) : out(o), in(i) {}
    void send(const std::byte* d, size_t len) override { out.push(d, len); }
    size_t recv(std::byte* buf, size_t len) override {
      in.pop(buf, len);
      return len;
    }
  };
  std::vector<std::unique_ptr<Queue>> queues_;
  bool roundtrip_ = false;
};

}  // namespace ipclab::messaging
