#include "ipcrt/features.hpp"

#include <liburing.h>
#include <sys/mman.h>
#include <sys/utsname.h>

#include <cstdio>

namespace ipcrt {

namespace {

bool try_flags(unsigned flags) {
  io_uring r;
  io_uring_params p{};
  p.flags = flags;
  // A probing SQPOLL thread would otherwise spin for the default 1 s idle time, stealing a core
  // from whatever the process measures next.
  p.sq_thread_idle = 1;
  if (io_uring_queue_init_params(2, &r, &p) != 0) return false;
  io_uring_queue_exit(&r);
  return true;
}

// Multishot variants share an opcode with their single-shot form, so only the kernel version tells.
bool kernel_at_least(int major, int minor) {
  utsname u{};
  if (uname(&u) != 0) return false;
  int a = 0, b = 0;
  if (std::sscanf(u.release, "%d.%d", &a, &b) != 2) return false;
  return a > major || (a == major && b >= minor);
}

features probe() {
  features f;
  io_uring r;
  if (io_uring_queue_init(4, &r, 0) != 0) return f;
  f.io_uring = true;
  if (io_uring_probe* p = io_uring_get_probe_ring(&r)) {
    f.msg_ring = io_uring_opcode_supported(p, IORING_OP_MSG_RING);
    f.link_timeout = io_uring_opcode_supported(p, IORING_OP_LINK_TIMEOUT);
    f.async_cancel = io_uring_opcode_supported(p, IORING_OP_ASYNC_CANCEL);
    const bool accept = io_uring_opcode_supported(p, IORING_OP_ACCEPT);
    const bool recv = io_uring_opcode_supported(p, IORING_OP_RECV);
    f.multishot_accept = accept && kernel_at_least(5, 19);
    f.recv_multishot = recv && kernel_at_least(6, 0);
    io_uring_free_probe(p);
  }
  f.registered_files = io_uring_register_files_sparse(&r, 1) == 0;
  static char page[64];
  iovec iov{page, sizeof page};
  f.fixed_buffers = io_uring_register_buffers(&r, &iov, 1) == 0;
  if (void* mem = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      mem != MAP_FAILED) {
    io_uring_buf_reg reg{};
    reg.ring_addr = reinterpret_cast<uintptr_t>(mem);
    reg.ring_entries = 1;
    reg.bgid = 0;
    f.buf_ring = io_uring_register_buf_ring(&r, &reg, 0) == 0;
    if (f.buf_ring) io_uring_unregister_buf_ring(&r, 0);
    munmap(mem, 4096);
  }
  io_uring_queue_exit(&r);
  f.single_issuer = try_flags(IORING_SETUP_SINGLE_ISSUER);
  f.defer_taskrun = try_flags(IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
  f.coop_taskrun = try_flags(IORING_SETUP_COOP_TASKRUN);
  f.sqpoll = try_flags(IORING_SETUP_SQPOLL);
  return f;
}

}  // namespace

const features& features::get() {
  static const features f = probe();
  return f;
}

std::string features::describe() const {
  std::string s;
  auto add = [&](const char* name, bool on) {
    s += name;
    s += on ? ": yes\n" : ": no\n";
  };
  add("io_uring", io_uring);
  add("single_issuer", single_issuer);
  add("defer_taskrun", defer_taskrun);
  add("coop_taskrun", coop_taskrun);
  add("sqpoll", sqpoll);
  add("msg_ring", msg_ring);
  add("link_timeout", link_timeout);
  add("async_cancel", async_cancel);
  add("multishot_accept", multishot_accept);
  add("recv_multishot", recv_multishot);
  add("buf_ring", buf_ring);
  add("registered_files", registered_files);
  add("fixed_buffers", fixed_buffers);
  return s;
}

}  // namespace ipcrt
