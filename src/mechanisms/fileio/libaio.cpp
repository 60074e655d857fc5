// fileio/libaio: Linux native AIO (O_DIRECT — buffered AIO would block in io_submit): qd iocbs
// kept in flight; each completion verified and its read resubmitted at once (`batch` 1, as fio)
// or every `batch` reads, the rest at the end of the io_getevents batch.
// The system calls are made directly: libaio's io_submit/io_getevents are one-line wrappers
// over them, and this keeps the build free of another library.
#include <linux/aio_abi.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/base/clock.hpp"
#include "core/measure/session.hpp"
#include "mechanisms/fileio/common.hpp"

namespace ipclab::fileio {
namespace {

int io_setup(unsigned nr, aio_context_t* ctx) { return syscall(SYS_io_setup, nr, ctx) < 0 ? -errno : 0; }
int io_destroy(aio_context_t ctx) { return syscall(SYS_io_destroy, ctx) < 0 ? -errno : 0; }
long io_submit(aio_context_t ctx, long n, iocb** list) {
  long r = syscall(SYS_io_submit, ctx, n, list);
  return r < 0 ? -errno : r;
}
int io_getevents(aio_context_t ctx, long min, long max, io_event* ev) {
  long r = syscall(SYS_io_getevents, ctx, min, max, ev, nullptr);
  return r < 0 ? -errno : int(r);
}

void submit_all(aio_context_t ctx, iocb** list, long n) {
  while (n > 0) {
    long r = io_submit(ctx, n, list);
    if (r == -EINTR || r == -EAGAIN) continue;
    if (r < 0) throw std::system_error(int(-r), std::generic_category(), "io_submit");
    list += r;
    n -= r;
  }
}

// The reads of one worker in flight through one AIO context: `qd` iocbs, each reading a block of
// the file into its own slot of `mem`; the reads prepared are submitted together every `batch`
// reads (1: each at once; 0: at the end of the io_getevents batch, flush).
struct AioReads {
  const Setup& su;
  const int fd, qd;
  const long batch;
  const uint64_t len;
  aio_context_t ctx = 0;
  std::unique_ptr<std::byte, void (*)(void*)> mem;
  std::vector<iocb> cbs;
  std::vector<iocb*> list;
  std::vector<io_event> events;
  std::vector<uint64_t> off, t0;
  long n = 0;  // prepared, not yet submitted
  long inflight = 0;

  AioReads(const Setup& setup, int file, long b, bool huge)
      : su(setup),
        fd(file),
        qd(setup.qd),
        batch(b),
        len(setup.plan.len()),
        ctx(setup_context(setup.qd)),
        mem(aligned_buffer(len * qd, huge)),
        cbs(qd),
        list(qd),
        events(qd),
        off(qd),
        t0(qd) {}

  static aio_context_t setup_context(int qd) {
    aio_context_t ctx = 0;
    if (int r = io_setup(qd, &ctx); r < 0)
      throw std::system_error(-r, std::generic_category(),
                              fmt::format("io_setup({}) (see /proc/sys/fs/aio-max-nr)", qd));
    return ctx;
  }
  std::byte* slot(int i) const { return mem.get() + uint64_t(i) * len; }
  // Slot `i`'s next read, at the cursor's next block.
  iocb* prep(int i, Cursor& cursor) {
    off[i] = su.plan.offset(cursor.next());
    cbs[i] = iocb{};
    cbs[i].aio_lio_opcode = IOCB_CMD_PREAD;
    cbs[i].aio_fildes = uint32_t(fd);
    cbs[i].aio_buf = uint64_t(uintptr_t(slot(i)));
    cbs[i].aio_nbytes = len;
    cbs[i].aio_offset = int64_t(off[i]);
    cbs[i].aio_data = uint64_t(i);
    t0[i] = now_ns();
    return &cbs[i];
  }
  void flush() {
    submit_all(ctx, list.data(), n);
    inflight += n;
    n = 0;
  }
  void queue(int i, Cursor& cursor) {  // submitted at once with batch=1, every `batch` reads otherwise
    list[n++] = prep(i, cursor);
    if (batch && n >= batch) flush();
  }
  // After an error: reads still in flight write into `mem`, so they are waited for before it is freed.
  void drain() {
    while (inflight > 0) {
      int got = io_getevents(ctx, 1, qd, events.data());
      if (got > 0)
        inflight -= got;
      else if (got != -EINTR)
        break;
    }
  }
};

// Keeps the reads in flight while the run goes on, each completion verified into `tally` and its
// slot read again; then waits for the last of them.
void keep_reading(Worker& w, AioReads& aio, Cursor& cursor, Tally& tally) {
  for (int i = 0; i < aio.qd; ++i) aio.queue(i, cursor);
  aio.flush();
  bool more = true;
  while (aio.inflight > 0) {
    more = more && w.running();
    int got = io_getevents(aio.ctx, 1, aio.qd, aio.events.data());
    if (got == -EINTR) continue;
    if (got < 0) throw std::system_error(-got, std::generic_category(), "io_getevents");
    const uint64_t t1 = now_ns();
    const bool measuring = w.measuring();
    for (int e = 0; e < got; ++e) {
      const int i = int(aio.events[e].data);
      --aio.inflight;
      tally.complete(long(aio.events[e].res), aio.slot(i), aio.off[i], aio.len, aio.t0[i], t1, measuring);
      if (more) aio.queue(i, cursor);
    }
    aio.flush();
  }
}

void libaio(Session& s) {
  const Setup su = prepare(s, true);
  const long batch = long(s.params().i64("batch"));
  const bool huge = s.params().flag("hugepages");
  run_engine(s, su, "libaio", [&su, batch, huge](Worker& w) {
    const int fd = open_file(su.path, true, su.plan.random());
    AioReads aio(su, fd, batch, huge);
    Cursor cursor(su);
    Tally tally(su);
    try {
      w.ready();
      keep_reading(w, aio, cursor, tally);
    } catch (...) {
      aio.drain();
      io_destroy(aio.ctx);
      close(fd);
      throw;
    }
    io_destroy(aio.ctx);
    close(fd);
    tally.fold_into(w);
  });
}

IPCLAB_REGISTER(Mechanism{
    .suite = "fileio",
    .name = "libaio",
    .help = "Linux native AIO with O_DIRECT: io_submit / io_getevents, qd iocbs in flight",
    .params = suite_params({batch_param(), hugepages_param(), verify_param()}),
    .workload = libaio,
    .check = [](const Params& p) { return check_cache(p, true); },
});

}  // namespace
}  // namespace ipclab::fileio
