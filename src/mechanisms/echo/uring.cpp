// echo/uring: io_uring echo servers. loop=raw (default) is the hand-written liburing loop in
// uring_raw.cpp; loop=ipcrt is the ipcrt runtime below: a coroutine per connection doing recv then
// send through one ring, every loop turn submitting all connections' SQEs in one io_uring_enter.
// fixed_files=1 registers each accepted socket in the ring's file table (IOSQE_FIXED_FILE: no fd
// lookup per op). multishot=1 (default) keeps one recv armed per connection over a provided-buffer
// ring. With reactors > 1, one ring per reactor thread, each on a listener of its own (run_echo).
// Compiled only when the build links ipcrt.
#if __has_include(<ipcrt/ipcrt.hpp>)
#include <liburing.h>
#include <unistd.h>

#include <memory>

#include <ipcrt/ipcrt.hpp>

#include "core/base/error.hpp"
#include "core/measure/session.hpp"
#include "mechanisms/echo/common.hpp"

namespace ipclab::echo {
namespace {

constexpr unsigned kSlots = 4096;

template <class Fd>
ipcrt::task<void> echo_loop(Fd fd, std::unique_ptr<char[]> buf) {
  for (;;) {
    int r = co_await ipcrt::async_recv(fd, buf.get(), kMaxSize);
    if (r <= 0) co_return;
    for (int off = 0; off < r;) {
      int w = co_await ipcrt::async_send(fd, buf.get() + off, size_t(r - off));
      if (w <= 0) co_return;
      off += w;
    }
  }
}

// One multishot recv SQE per connection: the kernel picks a buffer from the shared ring for each
// chunk and keeps the recv armed, so an echo costs one send SQE instead of recv + send.
template <class Fd>
ipcrt::task<void> echo_multishot(Fd fd, ipcrt::buf_ring& br) {
  for (;;) {
    auto stream = ipcrt::async_recv_multishot(fd, br);
    for (;;) {
      auto r = co_await stream.next();
      if (r.res == -ENOBUFS) break;  // the ring ran dry and the kernel ended the stream: re-arm
      if (r.res <= 0) co_return;
      auto d = r.buf.data();
      for (size_t off = 0; off < d.size();) {
        int w = co_await ipcrt::async_send(fd, d.data() + off, d.size() - off);
        if (w <= 0) co_return;
        off += size_t(w);
      }
      if (!stream.active()) break;  // ended without an error (e.g. CQ overflow): re-arm
    }
  }
}

template <class Fd>
ipcrt::task<void> echo(Fd fd, ipcrt::buf_ring* br) {
  if (br)
    co_await echo_multishot(fd, *br);
  else
    co_await echo_loop(fd, std::unique_ptr<char[]>(new char[kMaxSize]));
}

ipcrt::task<void> plain(int fd, ipcrt::buf_ring* br) {
  co_await echo(fd, br);
  ::close(fd);
}

ipcrt::task<void> fixed(int slot, std::vector<int>* free_slots, ipcrt::buf_ring* br) {
  co_await echo(ipcrt::fixed_file{slot}, br);
  co_await ipcrt::async_close(ipcrt::fixed_file{slot});
  free_slots->push_back(slot);
}

ipcrt::task<void> acceptor(ipcrt::runtime& rt, int lfd, bool use_fixed, ipcrt::buf_ring* br) {
  std::vector<int> free_slots;
  for (int i = int(kSlots) - 1; i >= 0; --i) free_slots.push_back(i);
  for (;;) {
    auto stream = ipcrt::async_accept_multishot(lfd, SOCK_CLOEXEC);
    for (;;) {
      int fd = co_await stream.next();
      if (fd < 0) break;
      if (!use_fixed || free_slots.empty()) {
        ipcrt::spawn(plain(fd, br)).detach();
        continue;
      }
      int slot = free_slots.back();
      free_slots.pop_back();
      int one[1] = {fd};
      if (rt.update_files(unsigned(slot), one) != 1) {
        free_slots.push_back(slot);
        ipcrt::spawn(plain(fd, br)).detach();
        continue;
      }
      ::close(fd);  // the table holds its own reference
      ipcrt::spawn(fixed(slot, &free_slots, br)).detach();
    }
    co_await ipcrt::sleep_for(std::chrono::milliseconds(1));
  }
}

void serve_uring(int lfd, const Params& p) {
  const bool use_fixed = p.flag("fixed_files");
  ipcrt::runtime rt(ipcrt::options().entries(1024).registered_files(use_fixed ? kSlots : 0));
  std::unique_ptr<ipcrt::buf_ring> br;
  if (p.flag("multishot")) br = std::make_unique<ipcrt::buf_ring>(rt, 1, 512, 16384);
  auto body = [&]() { return acceptor(rt, lfd, use_fixed, br.get()); };
  rt.block_on(body());
}

bool kernel_has_min_wait() {
  io_uring ring;
  io_uring_params ip{};
  if (io_uring_queue_init_params(2, &ring, &ip) != 0) return false;
  io_uring_queue_exit(&ring);
  return ip.features & (1u << 15);  // IORING_FEAT_MIN_TIMEOUT (Linux 6.13), newer than liburing 2.3
}

IPCLAB_REGISTER(Mechanism{
    .suite = "echo",
    .name = "uring",
    .help = "io_uring: multishot accept, multishot recv into a provided-buffer ring, send back from it; "
            "a hand-written liburing loop (loop=raw) or ipcrt coroutines (loop=ipcrt); a ring per reactor",
    .params = suite_params({
        {.name = "loop",
         .type = ParamType::String,
         .def = "raw",
         .choices = {"raw", "ipcrt"},
         .help =
             "raw: hand-written liburing event loop; ipcrt: the ipcrt runtime, a coroutine per connection",
         .quick = {"raw", "ipcrt"},
         .full = {"raw", "ipcrt"}},
        {.name = "fixed_files",
         .type = ParamType::Bool,
         .def = "0",
         .help = "register each connection in the ring's file table",
         .quick = {"0", "1"},
         .full = {"0", "1"}},
        {.name = "multishot",
         .type = ParamType::Bool,
         .def = "1",
         .help = "multishot recv into a provided-buffer ring (0: one recv SQE per message)",
         .quick = {"1"},
         .full = {"0", "1"}},
        {.name = "poll_first",
         .type = ParamType::Bool,
         .def = "0",
         .help =
             "loop=raw, multishot=0: IORING_RECVSEND_POLL_FIRST on each recv (wait for data before trying)"},
        {.name = "wait_nr",
         .type = ParamType::Int,
         .def = "1",
         .help = "loop=raw: completions each io_uring_enter waits for beyond the sends it submits "
                 "(needs min_wait_us > 0); more than 1 batches wake-ups at some latency",
         .min = 1,
         .max = 4096},
        {.name = "min_wait_us",
         .type = ParamType::Int,
         .def = "50",
         .help = "loop=raw: cap on that wait: after it any completion ends it (IORING_ENTER_EXT_ARG "
                 "min_wait_usec, Linux 6.13); 0: plain wait for one completion, sends included",
         .min = 0,
         .max = 1000000},
    }),
    .workload =
        [](Session& s) {
          const Params& p = s.params();
          if (p.str("loop") == "raw" && p.i64("min_wait_us") > 0 && !kernel_has_min_wait())
            s.record().extra["min_wait_note"] =
                "the kernel lacks IORING_FEAT_MIN_TIMEOUT (Linux 6.13): no batching";
          run_echo(s);
        },
    .server =
        [](const Session& s) {
          const Params& p = s.params();
          const bool raw = p.str("loop") == "raw";
          if (p.flag("fixed_files") && !ipcrt::features::get().registered_files)
            throw Skip("the kernel refuses a sparse registered-file table (io_uring_register_files_sparse)");
          if ((raw || p.flag("multishot")) &&
              !(ipcrt::features::get().recv_multishot && ipcrt::features::get().buf_ring))
            throw Skip("the kernel lacks multishot recv or provided-buffer rings (needs Linux 6.0)");
          return ServerLaunch{
              .serve = [p, raw](int lfd) { raw ? serve_uring_raw(lfd, p) : serve_uring(lfd, p); }};
        },
    .check = suite_check("uring", true),
});

}  // namespace
}  // namespace ipclab::echo
#endif
