#include "ipcrt/ring.hpp"

#include <system_error>

namespace ipcrt {

ring::ring(const options& opt) {
  unsigned base = opt.cq_entries() ? IORING_SETUP_CQSIZE : 0;
  const unsigned si = opt.single_issuer() ? IORING_SETUP_SINGLE_ISSUER : 0;
  unsigned tries[7];
  unsigned n = 0;
  if (opt.sqpoll()) {
    // DEFER_TASKRUN and COOP_TASKRUN are defined for the submitting task, not an SQ thread.
    tries[n++] = IORING_SETUP_SQPOLL | si;
    tries[n++] = IORING_SETUP_SQPOLL;
  } else {
    // TASKRUN_FLAG: the kernel raises IORING_SQ_TASKRUN in the shared SQ flags when completions
    // wait for a kernel entry, which lets yield() see from user space that nothing is due
    // (ring::quiet). Kernels that refuse it with DEFER_TASKRUN get DEFER_TASKRUN alone.
    if (si && opt.defer_taskrun()) {
      tries[n++] = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
      tries[n++] = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    }
    tries[n++] = si | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
    tries[n++] = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
  }
  tries[n++] = 0;
  int ret = -EINVAL;
  for (unsigned i = 0; i < n; ++i) {
    io_uring_params p{};
    p.flags = base | tries[i];
    p.cq_entries = opt.cq_entries();
    p.sq_thread_idle = opt.sqpoll_idle_ms();
    ret = io_uring_queue_init_params(opt.entries(), &ring_, &p);
    if (ret == 0) {
      setup_flags_ = p.flags;
      // Completions that wait for task work are flagged in user space only with TASKRUN_FLAG;
      // without COOP or DEFER task work runs on its own, and SQPOLL posts to the CQ directly.
      const unsigned deferred = IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_COOP_TASKRUN;
      shows_work_ = (p.flags & IORING_SETUP_TASKRUN_FLAG) || !(p.flags & deferred);
      return;
    }
  }
  throw std::system_error(-ret, std::system_category(), "io_uring_queue_init_params");
}

ring::~ring() { io_uring_queue_exit(&ring_); }

io_uring_sqe* ring::get_sqe_slow() {
  for (;;) {
    io_uring_submit(&ring_);
    if (io_uring_sqe* s = io_uring_get_sqe(&ring_)) return s;
  }
}

}  // namespace ipcrt
