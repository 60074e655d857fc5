// messaging/lockfree_queue: moodycamel::BlockingConcurrentQueue (a lock-free MPMC queue with a
// spin-then-semaphore wait) between threads. It is unbounded, so the transport bounds it with a
// pool of queue_depth buffers: a producer takes a free buffer index from one queue, fills it and
// passes the index on through the other; the consumer copies out and returns the index. Per
// producer, the queue is FIFO, which is what the harness's sequence checks need.
#include <concurrentqueue/blockingconcurrentqueue.h>

#include <cstdint>
#include <cstring>

#include "mechanisms/messaging/common.hpp"
#include "mechanisms/messaging/inproc_queue.hpp"

namespace ipclab::messaging {
namespace {

class LockfreeQueue {
 public:
  LockfreeQueue(size_t depth, size_t size) : size_(size), buf_(depth * size), free_(depth), full_(depth) {
    for (uint32_t i = 0; i < depth; ++i) free_.enqueue(i);
  }
  void push(const std::byte* d, size_t len) {
    uint32_t i = take(free_);
    std::memcpy(&buf_[i * size_], d, len);
    full_.enqueue(i);
  }
  void pop(std::byte* out, size_t len) {
    uint32_t i = take(full_);
    std::memcpy(out, &buf_[i * size_], len);
    free_.enqueue(i);
  }

 private:
  using Q = moodycamel::BlockingConcurrentQueue<uint32_t>;
  static uint32_t take(Q& q) {
    uint32_t i;
    // Timed, so that a waiter notices an aborting run.
    while (!q.wait_dequeue_timed(i, std::int64_t(100'000))) poll_abort();
    return i;
  }
  size_t size_;
  std::vector<std::byte> buf_;
  Q free_, full_;
};

IPCLAB_REGISTER(Mechanism{
    .suite = "messaging",
    .name = "lockfree_queue",
    .help = "in-process lock-free MPMC queue (moodycamel::BlockingConcurrentQueue; threads only)",
    .params = suite_params({queue_depth("256", "message buffers in flight (the queue itself is unbounded)",
                                        1 << 16)}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<InprocTransport<LockfreeQueue>>(p);
    },
    .check = [](const Params& p) { return check(Caps{.shared_queue = true, .processes = false}, p); },
});

}  // namespace
}  // namespace ipclab::messaging
