// fileio/ipcrt: the project's io_uring coroutine runtime (ipcrt, runtime/) in the reference's
// variants: qd coroutines, each reading in a loop with co_await. Compiled only when the build
// links ipcrt (IPCLAB_WITH_RUNTIME=ON).
#if __has_include(<ipcrt/ipcrt.hpp>)
#include <liburing.h>
#include <unistd.h>

#include <fmt/format.h>

#include <bit>

#include <ipcrt/ipcrt.hpp>

#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/measure/session.hpp"
#include "mechanisms/fileio/common.hpp"

namespace ipclab::fileio {
namespace {

struct Variant {
  bool fixed = false, direct = false, iopoll = false, sqpoll = false;
};

// iopoll and sqpoll build on fixed_direct, the strongest plain variant.
Variant variant_of(const std::string& v) {
  if (v == "buffered") return {};
  if (v == "fixed") return {.fixed = true};
  if (v == "direct") return {.direct = true};
  if (v == "fixed_direct") return {.fixed = true, .direct = true};
  if (v == "iopoll") return {.fixed = true, .direct = true, .iopoll = true};
  return {.fixed = true, .direct = true, .sqpoll = true};
}

// IOPOLL needs a device with poll queues; a ring accepts the flag either way and the first read
// tells (EOPNOTSUPP on virtio-blk and most virtual disks). ipcrt has no IOPOLL option yet, so even
// a capable device is a skip — with that reason rather than a number from another ring.
[[noreturn]] void skip_iopoll(const std::string& path) {
  io_uring ring;
  if (int r = io_uring_queue_init(4, &ring, IORING_SETUP_IOPOLL); r < 0)
    throw Skip(fmt::format("IOPOLL: io_uring_setup refused IORING_SETUP_IOPOLL ({})", strerror(-r)));
  const int fd = open_file(path, true, true);
  auto buf = aligned_buffer(kBlock);
  io_uring_prep_read(io_uring_get_sqe(&ring), fd, buf.get(), unsigned(kBlock), 0);
  io_uring_submit(&ring);
  io_uring_cqe* cqe = nullptr;
  int res = io_uring_wait_cqe(&ring, &cqe);
  if (res == 0) {
    res = cqe->res;
    io_uring_cqe_seen(&ring, cqe);
  }
  io_uring_queue_exit(&ring);
  close(fd);
  if (res < 0)
    throw Skip(
        fmt::format("IOPOLL: the device of {} cannot be polled (read returned {}: {}); it "
                    "needs an NVMe-like driver with poll queues",
                    path, res == -EOPNOTSUPP ? "EOPNOTSUPP" : std::to_string(res), strerror(-res)));
  throw Skip(
      "IOPOLL: the device supports it, but ipcrt has no IOPOLL option yet "
      "(runtime/include/ipcrt/options.hpp)");
}

struct Run {
  const Setup& su;
  Worker& w;
  Variant v;
  unsigned batch;  // at most this many reads per io_uring_enter; 0 = every read that is ready
  int fd;
  std::byte* mem;  // non-fixed buffers
  Cursor cursor;
  Tally tally;
};

ipcrt::task<void> reader(Run& r, int slot) {
  const uint64_t len = r.su.plan.len();
  ipcrt::runtime& rt = *ipcrt::runtime::current();
  std::byte* buf = r.v.fixed ? rt.fixed_buffer(unsigned(slot)).data() : r.mem + uint64_t(slot) * len;
  while (r.w.running()) {
    const uint64_t off = r.su.plan.offset(r.cursor.next());
    // With batch=0 the loop submits every read prepared in one turn with a single
    // io_uring_enter; the kernel then plugs and the block layer merges adjacent reads into
    // larger requests. `batch` caps that (1 = one read per enter, fio's default).
    if (r.batch && rt.io().pending() >= r.batch) rt.io().submit();
    const uint64_t t0 = now_ns();
    const int res =
        r.v.fixed ? co_await ipcrt::async_read_fixed(ipcrt::fixed_file{0}, buf, unsigned(len), off, slot)
                  : co_await ipcrt::async_read(r.fd, buf, unsigned(len), off);
    r.tally.complete(res, buf, off, len, t0, now_ns(), r.w.measuring());
  }
}

ipcrt::task<void> read_all(Run& r) {
  std::vector<ipcrt::join_handle<void>> hs;
  for (int i = 0; i < r.su.qd; ++i) hs.push_back(ipcrt::spawn(reader(r, i)));
  for (auto& h : hs) co_await h;
}

void ipcrt_engine(Session& s) {
  const Variant v = variant_of(s.params().str("variant"));
  const Setup su = prepare(s, v.direct);
  if (v.iopoll) skip_iopoll(su.path);
  if (v.sqpoll && !ipcrt::features::get().sqpoll)
    throw Skip("SQPOLL: io_uring_setup refused IORING_SETUP_SQPOLL on this kernel/privilege level");
  s.record().extra["variant"] = s.params().str("variant");
  const unsigned batch = unsigned(s.params().i64("batch"));
  const bool huge = s.params().flag("hugepages");
  run_engine(s, su, "ipcrt", [&su, v, batch, huge](Worker& w) {
    const uint64_t len = su.plan.len();
    ipcrt::options opt;
    opt.entries(std::max(8u, std::bit_ceil(unsigned(su.qd))));
    if (v.fixed) opt.registered_files(1).fixed_buffers(unsigned(su.qd), len).huge_buffers(huge);
    if (v.sqpoll) opt.sqpoll(true);
    ipcrt::runtime rt(opt);
    const int fd = open_file(su.path, v.direct, su.plan.random());
    if (v.fixed) {
      const int fds[1] = {fd};
      if (int r = rt.update_files(0, fds); r < 0)
        throw std::system_error(-r, std::generic_category(), "register file");
    }
    auto mem = aligned_buffer(v.fixed ? 1 : len * su.qd, huge && !v.fixed);
    std::unique_ptr<Run> run(new Run{su, w, v, batch, fd, mem.get(), Cursor(su), Tally(su)});
    w.ready();
    rt.block_on(read_all(*run));
    close(fd);
    run->tally.fold_into(w);
  });
}

IPCLAB_REGISTER(Mechanism{
    .suite = "fileio",
    .name = "ipcrt",
    .help = "the ipcrt io_uring coroutine runtime: qd tasks each co_awaiting reads",
    .params = suite_params(
        {{.name = "variant",
          .type = ParamType::String,
          .def = "fixed_direct",
          .choices = {"buffered", "fixed", "direct", "fixed_direct", "iopoll", "sqpoll"},
          .help = "buffered; fixed = registered file + buffers; direct = O_DIRECT; fixed_direct; "
                  "iopoll and sqpoll = fixed_direct with IORING_SETUP_IOPOLL / SQPOLL",
          .quick = {"buffered", "fixed_direct"},
          .full = {"buffered", "fixed", "direct", "fixed_direct", "iopoll", "sqpoll"}},
         batch_param(),
         hugepages_param(),
         verify_param(),
         cache_param()}),
    .workload = ipcrt_engine,
    .check = [](const Params& p) { return check_cache(p, variant_of(p.str("variant")).direct); },
});

}  // namespace
}  // namespace ipclab::fileio
#endif
