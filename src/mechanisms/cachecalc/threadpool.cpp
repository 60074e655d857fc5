// cachecalc/threadpool: a small thread-pool class, 8 workers fed through a condition variable
// (BM_cachecalc_simple_threadpool_class). As the reference, the pool is created and joined inside
// each iteration and the caller waits for the 1000 tasks by yielding on a counter.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"
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
            "variable queue) takes the 1000 tasks while the caller yields until a counter reaches "
            "1000; calcs under a std::mutex, the delay a blocking one in the worker (devzero by "
            "default, as the reference). pool=per_iteration (the reference's) creates and joins the "
            "pool inside each iteration, so its 8 thread starts and joins are in the iteration's "
            "time; per_run starts it once",
    .params = {delay_param(),
               calc_param(),
               delay_kind_param({"devzero", "sleep"}),
               {.name = "pool",
                .type = ParamType::String,
                .def = "per_iteration",
                .choices = {"per_iteration", "per_run"},
                .help = "the pool's lifetime: per_iteration (the reference's) or per_run",
                .full = {"per_iteration", "per_run"}}},
    .workload =
        [](Session& s) {
          const BlockingTask task(s.params());
          std::optional<ThreadPool> run_pool;
          if (s.params().str("pool") == "per_run") run_pool.emplace(kConcurrency);
          run_iterations(s, [&] {
            Cache c = fresh_cache();
            std::mutex m;
            std::atomic<int> completed{0};
            {
              std::optional<ThreadPool> iteration_pool;
              if (!run_pool) iteration_pool.emplace(kConcurrency);
              ThreadPool& pool = run_pool ? *run_pool : *iteration_pool;
              for (int t = 0; t < kTasks; ++t)
                pool.submit([&] {
                  task(c, m);
                  completed.fetch_add(1, std::memory_order_release);
                });
              while (completed.load(std::memory_order_acquire) < kTasks) std::this_thread::yield();
            }  // a per-iteration pool is joined here, inside the iteration
            return verify(c);
          });
        },
});

}  // namespace
}  // namespace ipclab::cachecalc
