// cachecalc/threadpool: a small thread-pool class, 8 workers fed through a condition variable
// (BM_cachecalc_simple_threadpool_class).
#include <condition_variable>
#include <deque>
#include <functional>
#include <latch>
#include <mutex>
#include <thread>
#include <vector>

#include "core/mechanism.hpp"
#include "core/session.hpp"
#include "mechanisms/cachecalc/workload.hpp"

namespace ipclab::cachecalc {
namespace {

class ThreadPool {
 public:
  explicit ThreadPool(int n) {
    for (int i = 0; i < n; ++i) workers_.emplace_back([this] { work(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard g(m_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
  }
  void submit(std::function<void()> f) {
    {
      std::lock_guard g(m_);
      q_.push_back(std::move(f));
    }
    cv_.notify_one();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> f;
      {
        std::unique_lock l(m_);
        cv_.wait(l, [this] { return stop_ || !q_.empty(); });
        if (q_.empty()) return;
        f = std::move(q_.front());
        q_.pop_front();
      }
      f();
    }
  }
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> q_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "threadpool",
    .help = "BM_cachecalc_simple_threadpool_class: a pool class of 8 workers (mutex + condition "
            "variable queue, started once per run) takes the 1000 tasks; calcs under a std::mutex, "
            "the delay a blocking nanosleep in the worker",
    .params = {delay_param()},
    .workload =
        [](Session& s) {
          const int64_t us = s.params().i64("delay_us");
          ThreadPool pool(kConcurrency);
          run_iterations(s, [&] {
            Cache c = fresh_cache();
            std::mutex m;
            std::latch done(kTasks);
            for (int t = 0; t < kTasks; ++t)
              pool.submit([&] {
                {
                  std::lock_guard g(m);
                  calc(c);
                }
                sleep_delay(us);
                {
                  std::lock_guard g(m);
                  calc(c);
                }
                done.count_down();
              });
            done.wait();
            return verify(c);
          });
        },
});

}  // namespace
}  // namespace ipclab::cachecalc
