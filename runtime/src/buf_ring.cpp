#include "ipcrt/buf_ring.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <system_error>

#include "ipcrt/runtime.hpp"

namespace ipcrt {

namespace {
std::size_t page_round(std::size_t n) {
  const std::size_t pg = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return (n + pg - 1) / pg * pg;
}
}  // namespace

buf_ring::buf_ring(runtime& rt, uint16_t group, unsigned entries, std::size_t buf_size)
    : buf_ring(rt.io().native(), group, entries, buf_size) {}

buf_ring::buf_ring(io_uring* ring, uint16_t group, unsigned entries, std::size_t buf_size)
    : ring_(ring), buf_size_(buf_size), entries_(entries), group_(group) {
  if (entries == 0 || (entries & (entries - 1)) || entries > 32768)
    throw std::system_error(EINVAL, std::system_category(),
                            "buf_ring entries must be a power of two <= 32768");
  // The kernel requires the ring itself page aligned; mmap gives us that without liburing 2.4.
  ring_bytes_ = page_round(entries * sizeof(io_uring_buf));
  void* mem = mmap(nullptr, ring_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) throw std::system_error(errno, std::system_category(), "mmap buf_ring");
  br_ = static_cast<io_uring_buf_ring*>(mem);
  io_uring_buf_ring_init(br_);
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<uintptr_t>(mem);
  reg.ring_entries = entries;
  reg.bgid = group;
  if (int r = io_uring_register_buf_ring(ring_, &reg, 0); r != 0) {
    munmap(mem, ring_bytes_);
    throw std::system_error(-r, std::system_category(), "io_uring_register_buf_ring");
  }
  // Populated now, so the first receive into each buffer does not fault in the measured window.
  void* bufs = mmap(nullptr, page_round(entries * buf_size), PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (bufs == MAP_FAILED) {
    io_uring_unregister_buf_ring(ring_, group);
    munmap(mem, ring_bytes_);
    throw std::system_error(errno, std::system_category(), "mmap buffers");
  }
  bufs_ = static_cast<std::byte*>(bufs);
  const int mask = io_uring_buf_ring_mask(entries);
  for (unsigned i = 0; i < entries; ++i)
    io_uring_buf_ring_add(br_, bufs_ + i * buf_size, static_cast<unsigned>(buf_size),
                          static_cast<uint16_t>(i), mask, static_cast<int>(i));
  io_uring_buf_ring_advance(br_, static_cast<int>(entries));
}

buf_ring::~buf_ring() {
  io_uring_unregister_buf_ring(ring_, group_);
  munmap(bufs_, page_round(entries_ * buf_size_));
  munmap(br_, ring_bytes_);
}

}  // namespace ipcrt
