// cachecalc/asio_threadpool_strand: asio::thread_pool + strand with callbacks
// (BM_cachecalc_boost_threadpool). Standalone Asio (Debian's libasio-dev) stands in for Boost.Asio.
#if __has_include(<asio.hpp>)
#include <asio.hpp>

#include <memory>

#include "core/mechanism.hpp"
#include "core/session.hpp"
#include "mechanisms/cachecalc/asio_pool.hpp"

namespace ipclab::cachecalc {
namespace {

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "asio_threadpool_strand",
    .help = "BM_cachecalc_boost_threadpool: asio::thread_pool of 8 (started once per run); each task "
            "posts its calc to one strand, waits on an asynchronous steady_timer on the pool, then "
            "posts the second calc to the strand",
    .params = {delay_param()},
    .workload =
        [](Session& s) {
          const auto delay = std::chrono::microseconds(s.params().i64("delay_us"));
          run_on_pool(s, [&](PoolIteration& it) {
            asio::post(it.strand, [&it, delay] {
              calc(it.cache);
              auto timer = std::make_shared<asio::steady_timer>(it.pool.get_executor(), delay);
              timer->async_wait([&it, timer](const asio::error_code&) {
                asio::post(it.strand, [&it] {
                  calc(it.cache);
                  it.done.count_down();
                });
              });
            });
          });
        },
});

}  // namespace
}  // namespace ipclab::cachecalc
#endif
