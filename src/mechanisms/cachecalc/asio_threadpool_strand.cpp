// cachecalc/asio_threadpool_strand: asio::thread_pool + strand with callbacks
// (BM_cachecalc_boost_threadpool). Standalone Asio (Debian's libasio-dev) stands in for Boost.Asio.
#if __has_include(<asio.hpp>)
#include <asio.hpp>

#include <memory>

#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"
#include "mechanisms/cachecalc/asio_pool.hpp"

namespace ipclab::cachecalc {
namespace {

IPCLAB_REGISTER(Mechanism{
    .suite = "cachecalc",
    .name = "asio_threadpool_strand",
    .help = "BM_cachecalc_boost_threadpool: asio::thread_pool of 8 and, beside it, a single-thread "
            "pool that runs the strand (both started once per run); each task posts its calc to the "
            "strand, waits on the pool (an asynchronous steady_timer by default, as the reference; "
            "devzero or sleep block a pool thread), then posts the second calc to the strand",
    .params = {delay_param(), calc_param(), delay_kind_param({"timer", "devzero", "sleep"})},
    .workload =
        [](Session& s) {
          const int64_t us = s.params().i64("delay_us");
          const DelayKind kind = delay_kind_of(s.params());
          run_on_pool(s, {.threads = kConcurrency, .strand_pool = true}, [us, kind](PoolIteration& it) {
            asio::post(it.strand, [&it, us, kind] {
              it.calc(it.cache);
              auto second = [&it] {
                asio::post(it.strand, [&it] {
                  it.calc(it.cache);
                  it.done.count_down();
                });
              };
              if (kind == DelayKind::Timer) {
                auto timer = std::make_shared<asio::steady_timer>(it.pool.get_executor(),
                                                                  std::chrono::microseconds(us));
                timer->async_wait([timer, second](const asio::error_code&) { second(); });
              } else {
                asio::post(it.pool, [us, kind, second] {
                  blocking_delay(kind, us);
                  second();
                });
              }
            });
          });
        },
});

}  // namespace
}  // namespace ipclab::cachecalc
#endif
