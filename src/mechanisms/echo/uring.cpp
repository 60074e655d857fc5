// echo/uring: the ipcrt runtime: a coroutine per connection doing recv then send through one
// ring; every loop turn submits all connections' SQEs in one io_uring_enter. fixed_files=1
// registers each accepted socket in the ring's file table (IOSQE_FIXED_FILE: no fd lookup per op).
// Compiled only when the build links ipcrt.
#if __has_include(<ipcrt/ipcrt.hpp>)
#include <unistd.h>

#include <memory>

#include <ipcrt/ipcrt.hpp>

#include "core/error.hpp"
#include "core/session.hpp"
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

ipcrt::task<void> plain(int fd) {
  co_await echo_loop(fd, std::unique_ptr<char[]>(new char[kMaxSize]));
  ::close(fd);
}

ipcrt::task<void> fixed(int slot, std::vector<int>* free_slots) {
  co_await echo_loop(ipcrt::fixed_file{slot}, std::unique_ptr<char[]>(new char[kMaxSize]));
  co_await ipcrt::async_close(ipcrt::fixed_file{slot});
  free_slots->push_back(slot);
}

ipcrt::task<void> acceptor(ipcrt::runtime& rt, int lfd, bool use_fixed) {
  std::vector<int> free_slots;
  for (int i = int(kSlots) - 1; i >= 0; --i) free_slots.push_back(i);
  for (;;) {
    auto stream = ipcrt::async_accept_multishot(lfd, SOCK_CLOEXEC);
    for (;;) {
      int fd = co_await stream.next();
      if (fd < 0) break;
      if (!use_fixed || free_slots.empty()) {
        ipcrt::spawn(plain(fd)).detach();
        continue;
      }
      int slot = free_slots.back();
      free_slots.pop_back();
      int one[1] = {fd};
      if (rt.update_files(unsigned(slot), one) != 1) {
        free_slots.push_back(slot);
        ipcrt::spawn(plain(fd)).detach();
        continue;
      }
      ::close(fd);  // the table holds its own reference
      ipcrt::spawn(fixed(slot, &free_slots)).detach();
    }
    co_await ipcrt::sleep_for(std::chrono::milliseconds(1));
  }
}

void serve(int lfd, const Params& p) {
  const bool use_fixed = p.flag("fixed_files");
  ipcrt::runtime rt(ipcrt::options().entries(1024).registered_files(use_fixed ? kSlots : 0));
  auto body = [&]() { return acceptor(rt, lfd, use_fixed); };
  rt.block_on(body());
}

IPCLAB_REGISTER(Mechanism{
    .suite = "echo",
    .name = "uring",
    .help = "ipcrt io_uring runtime: multishot accept, recv/send coroutine per connection",
    .params = suite_params({{.name = "fixed_files", .type = ParamType::Bool, .def = "0",
                             .help = "register each connection in the ring's file table",
                             .quick = {"0", "1"}, .full = {"0", "1"}}}),
    .workload = [](Session& s) {
      if (s.params().flag("fixed_files") && !ipcrt::features::get().registered_files)
        throw Skip("the kernel refuses a sparse registered-file table (io_uring_register_files_sparse)");
      run_echo(s, {.serve = serve});
    },
});

}  // namespace
}  // namespace ipclab::echo
#endif
