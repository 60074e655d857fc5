// cachecalc/asio_threadpool_strand: asio::thread_pool + strand with callbacks
// (BM_cachecalc_boost_threadpool). Standalone Asio (Debian's libasio-dev) stands in for Boost.Asio.
#if __has_include(<asio.hpp>)
#include <asio.hpp>

#include <latch>
#include <memory>

#include "core/mechanism.hpp"
#include "core/session.hpp"
#include "mechanisms/cachecalc/workload.hpp"

namespace ipclab::cachecalc {
namespace {

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "asio_threadpool_strand",
    .help = "BM_cachecalc_boost_threadpool: asio::thread_pool of 8 (started once per run); each task "
            "posts its calc to one strand, waits on an asynchronous steady_timer on the pool, then "
            "posts the second calc to the strand",
    .params = {delay_param()},
    .workload = [](Session& s) {
      const auto delay = std::chrono::microseconds(s.params().i64("delay_us"));
      asio::thread_pool pool(kConcurrency);
      run_iterations(s, [&] {
        Cache c = fresh_cache();
        auto strand = asio::make_strand(pool.get_executor());
        std::latch done(kTasks);
        for (int t = 0; t < kTasks; ++t)
          asio::post(strand, [&] {
            calc(c);
            auto timer = std::make_shared<asio::steady_timer>(pool.get_executor(), delay);
            timer->async_wait([&, timer](const asio::error_code&) {
              asio::post(strand, [&] {
                calc(c);
                done.count_down();
              });
            });
          });
        done.wait();
        return verify(c);
      });
    },
});

}  // namespace
}  // namespace ipclab::cachecalc
#endif
