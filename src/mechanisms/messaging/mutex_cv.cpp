// messaging/mutex_cv: the textbook bounded queue between threads: a ring of message buffers
// under one mutex, with a condition variable for "not empty" and one for "not full".
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "mechanisms/messaging/common.hpp"
#include "mechanisms/messaging/inproc_queue.hpp"

namespace ipclab::messaging {
namespace {

class MutexCvQueue {
 public:
  MutexCvQueue(size_t depth, size_t size) : depth_(depth), size_(size), buf_(depth * size) {}
  void push(const std::byte* d, size_t len) {
    std::unique_lock lock(mu_);
    while (count_ == depth_) wait(not_full_, lock);
    std::memcpy(&buf_[((head_ + count_) % depth_) * size_], d, len);
    ++count_;
    lock.unlock();
    not_empty_.notify_one();
  }
  void pop(std::byte* out, size_t len) {
    std::unique_lock lock(mu_);
    while (count_ == 0) wait(not_empty_, lock);
    std::memcpy(out, &buf_[head_ * size_], len);
    head_ = (head_ + 1) % depth_;
    --count_;
    lock.unlock();
    not_full_.notify_one();
  }

 private:
  // Timed, so that a waiter notices an aborting run.
  static void wait(std::condition_variable& cv, std::unique_lock<std::mutex>& lock) {
    cv.wait_for(lock, std::chrono::milliseconds(100));
    poll_abort();
  }
  std::mutex mu_;
  std::condition_variable not_empty_, not_full_;
  size_t depth_, size_, head_ = 0, count_ = 0;
  std::vector<std::byte> buf_;
};

IPCLAB_REGISTER(Mechanism{
    .suite = "messaging",
    .name = "mutex_cv",
    .help = "in-process bounded queue: std::mutex + two std::condition_variable (threads only)",
    .params = suite_params({queue_depth("256", "messages the queue holds", 1 << 16)}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<InprocTransport<MutexCvQueue>>(p);
    },
    .check = [](const Params& p) { return check(Caps{.shared_queue = true, .processes = false}, p); },
});

}  // namespace
}  // namespace ipclab::messaging
