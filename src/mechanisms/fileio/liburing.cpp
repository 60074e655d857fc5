// fileio/liburing: io_uring through liburing with nothing on top: one ring sized to qd; each read
// submitted as soon as it is prepared (`batch` 1, as fio) or every `batch` reads, the rest with
// the next wait (io_uring_submit_and_wait); every completion verified and refilled.
#include <liburing.h>
#include <unistd.h>

#include <bit>

#include "core/base/clock.hpp"
#include "core/measure/session.hpp"
#include "mechanisms/fileio/common.hpp"

namespace ipclab::fileio {
namespace {

void liburing(Session& s) {
  const bool direct = s.params().flag("direct");
  const Setup su = prepare(s, direct);
  const unsigned batch = unsigned(s.params().i64("batch"));
  const bool huge = s.params().flag("hugepages");
  run_engine(s, su, "liburing", [&su, batch, huge](Worker& w) {
    const int fd = open_file(su.path, su.direct, su.plan.random());
    const uint64_t len = su.plan.len();
    const int qd = su.qd;
    io_uring ring;
    // fio's io_uring engine sets these flags where the kernel has them; so do we (else none).
    const unsigned want = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    int r = io_uring_queue_init(std::bit_ceil(unsigned(qd)), &ring, want);
    if (r == -EINVAL) r = io_uring_queue_init(std::bit_ceil(unsigned(qd)), &ring, 0);
    if (r < 0) throw std::system_error(-r, std::generic_category(), "io_uring_queue_init");
    auto mem = aligned_buffer(len * qd, huge);
    std::vector<uint64_t> off(qd), t0(qd);
    Cursor cursor(su);
    Tally tally(su);
    int inflight = 0;  // prepared reads not yet reaped (submitted or about to be)
    auto prep = [&](int i) {
      ++inflight;
      off[i] = su.plan.offset(cursor.next());
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);  // never null: at most qd in flight
      io_uring_prep_read(sqe, fd, mem.get() + uint64_t(i) * len, unsigned(len), off[i]);
      io_uring_sqe_set_data64(sqe, uint64_t(i));
      t0[i] = now_ns();
      if (batch && io_uring_sq_ready(&ring) >= batch) {
        if (int r = io_uring_submit(&ring); r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
          throw std::system_error(-r, std::generic_category(), "io_uring_submit");
      }
    };
    try {
      w.ready();
      for (int i = 0; i < qd; ++i) prep(i);
      bool more = true;
      io_uring_cqe* cqes[128];
      while (inflight > 0) {
        more = more && w.running();
        int r = io_uring_submit_and_wait(&ring, 1);
        if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
          throw std::system_error(-r, std::generic_category(), "io_uring_submit_and_wait");
        const unsigned got = io_uring_peek_batch_cqe(&ring, cqes, 128);
        const uint64_t t1 = now_ns();
        const bool measuring = w.measuring();
        for (unsigned e = 0; e < got; ++e) {
          const int i = int(io_uring_cqe_get_data64(cqes[e]));
          const long res = cqes[e]->res;
          --inflight;
          tally.complete(res, mem.get() + uint64_t(i) * len, off[i], len, t0[i], t1, measuring);
          if (more) prep(i);
        }
        io_uring_cq_advance(&ring, got);
      }
    } catch (...) {
      // Reads in flight write into `mem`: reap them before it is freed.
      io_uring_submit(&ring);
      for (io_uring_cqe* c; inflight > 0 && io_uring_wait_cqe(&ring, &c) == 0; --inflight)
        io_uring_cqe_seen(&ring, c);
      io_uring_queue_exit(&ring);
      close(fd);
      throw;
    }
    io_uring_queue_exit(&ring);
    close(fd);
    tally.fold_into(w);
  });
}

IPCLAB_REGISTER(Mechanism{
    .suite = "fileio",
    .name = "liburing",
    .help = "raw liburing: qd reads in flight, refilled on each submit-and-wait",
    .params = suite_params({{.name = "direct",
                             .type = ParamType::Bool,
                             .def = "1",
                             .help = "open with O_DIRECT",
                             .full = {"0", "1"}},
                            batch_param(),
                            hugepages_param(),
                            verify_param(),
                            cache_param()},
                           {"32"}),
    .workload = liburing,
    .check = [](const Params& p) { return check_cache(p, p.flag("direct")); },
});

}  // namespace
}  // namespace ipclab::fileio
