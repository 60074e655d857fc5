// fileio/psync: qd threads, each issuing one blocking pread at a time — the queue depth of a
// synchronous engine is its thread count. Buffered by default; direct=1 adds O_DIRECT.
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "core/base/clock.hpp"
#include "core/measure/session.hpp"
#include "mechanisms/fileio/common.hpp"

namespace ipclab::fileio {
namespace {

void psync(Session& s) {
  const bool direct = s.params().flag("direct");
  const Setup su = prepare(s, direct);
  run_engine(s, su, "psync", [&su](Worker& w) {
    const int fd = open_file(su.path, su.direct, su.plan.random());
    const uint64_t len = su.plan.len();
    Cursor cursor(su);
    std::vector<std::unique_ptr<Tally>> tallies;
    for (int i = 0; i < su.qd; ++i) tallies.push_back(std::make_unique<Tally>(su));
    std::atomic<bool> stop{false};
    std::mutex err_mu;
    std::string err;

    // One read at a time; `phase` tells whether the run is still on and whether to count.
    auto one = [&](Tally& t, std::byte* buf, bool measuring_now) {
      const uint64_t off = su.plan.offset(cursor.next());
      const uint64_t t0 = now_ns();
      ssize_t r;
      do r = pread(fd, buf, len, off_t(off));
      while (r < 0 && errno == EINTR);
      t.complete(r < 0 ? -errno : r, buf, off, len, t0, now_ns(), measuring_now);
    };
    // Threads 1..qd-1 follow the phase directly; thread 0 is the harness's worker, whose
    // transitions open and close the process's CPU window.
    std::vector<std::thread> helpers;
    for (int i = 1; i < su.qd; ++i)
      helpers.emplace_back([&, i] {
        auto buf = aligned_buffer(len);
        try {
          while (w.phase_now() == kInit && !stop.load()) sleep_ns(50'000);
          for (int ph; (ph = w.phase_now()) != kStop && !stop.load();)
            one(*tallies[i], buf.get(), ph == kMeasure);
        } catch (const std::exception& e) {
          std::lock_guard lk(err_mu);
          if (err.empty()) err = e.what();
          stop.store(true);
        }
      });
    auto buf = aligned_buffer(len);
    try {
      w.ready();
      while (w.running() && !stop.load()) one(*tallies[0], buf.get(), w.measuring());
    } catch (const std::exception& e) {
      std::lock_guard lk(err_mu);
      if (err.empty()) err = e.what();
    }
    stop.store(true);
    for (auto& h : helpers) h.join();
    close(fd);
    for (auto& t : tallies) t->fold_into(w);
    if (!err.empty()) throw std::runtime_error(err);
  });
}

IPCLAB_REGISTER(Mechanism{
    .suite = "fileio",
    .name = "psync",
    .help = "qd threads of blocking pread (buffered, or O_DIRECT with direct=1)",
    .params = suite_params({{.name = "direct",
                             .type = ParamType::Bool,
                             .def = "0",
                             .help = "open with O_DIRECT",
                             .full = {"0", "1"}},
                            cache_param(),
                            verify_param()}),
    .workload = psync,
    .check = [](const Params& p) { return check_cache(p, p.flag("direct")); },
});

}  // namespace
}  // namespace ipclab::fileio
