// Fluent builder for runtime setup: ring size, setup flags, registered files and fixed buffers.
#pragma once

#include <cstddef>

namespace ipcrt {

/// Runtime configuration; every setter returns *this so options chain: options().entries(256).sqpoll().
class options {
 public:
  /// Submission queue size (rounded up to a power of two by the kernel).
  options& entries(unsigned n) noexcept {
    entries_ = n;
    return *this;
  }
  /// Completion queue size; 0 means the kernel default (2 x entries).
  options& cq_entries(unsigned n) noexcept {
    cq_entries_ = n;
    return *this;
  }
  /// Kernel thread polls the SQ, so submits need no syscall; excludes DEFER_TASKRUN.
  options& sqpoll(bool on = true, unsigned idle_ms = 1000) noexcept {
    sqpoll_ = on;
    sqpoll_idle_ms_ = idle_ms;
    return *this;
  }
  /// Ask for IORING_SETUP_SINGLE_ISSUER (probed; dropped if the kernel lacks it).
  options& single_issuer(bool on = true) noexcept {
    single_issuer_ = on;
    return *this;
  }
  /// Ask for IORING_SETUP_DEFER_TASKRUN (probed; falls back to COOP_TASKRUN, then nothing).
  options& defer_taskrun(bool on = true) noexcept {
    defer_taskrun_ = on;
    return *this;
  }
  /// Size of the sparse registered-file table created at setup (0 = none).
  options& registered_files(unsigned n) noexcept {
    registered_files_ = n;
    return *this;
  }
  /// Fixed buffers allocated and registered at setup: count buffers of size bytes each.
  options& fixed_buffers(unsigned count, std::size_t size) noexcept {
    fixed_buf_count_ = count;
    fixed_buf_size_ = size;
    return *this;
  }
  /// Fixed buffers on 2 MiB transparent huge pages (madvise(MADV_HUGEPAGE), where the kernel's THP
  /// mode allows it): a buffer is then physically contiguous, one segment per I/O however large,
  /// rather than as many 4 KiB pieces as the page allocator hands out.
  options& huge_buffers(bool on) noexcept {
    huge_buffers_ = on;
    return *this;
  }
  /// Ready tasks run per loop turn before the ring is looked at again (latency vs throughput).
  options& budget(unsigned n) noexcept {
    budget_ = n ? n : 1;
    return *this;
  }
  /// When nothing is runnable, poll the ring for up to us microseconds before blocking (0 = block at
  /// once). For a thread that owns its CPU (a pinned shard): a wake-up then costs no sleep, no IPI
  /// and no wait for the CPU, at the price of CPU time spent polling. Seastar's reactor does the same.
  options& idle_poll_us(unsigned us) noexcept {
    idle_poll_us_ = us;
    return *this;
  }

  unsigned entries() const noexcept { return entries_; }
  unsigned cq_entries() const noexcept { return cq_entries_; }
  bool sqpoll() const noexcept { return sqpoll_; }
  unsigned sqpoll_idle_ms() const noexcept { return sqpoll_idle_ms_; }
  bool single_issuer() const noexcept { return single_issuer_; }
  bool defer_taskrun() const noexcept { return defer_taskrun_; }
  unsigned registered_files() const noexcept { return registered_files_; }
  unsigned fixed_buffer_count() const noexcept { return fixed_buf_count_; }
  std::size_t fixed_buffer_size() const noexcept { return fixed_buf_size_; }
  bool huge_buffers() const noexcept { return huge_buffers_; }
  unsigned budget() const noexcept { return budget_; }
  unsigned idle_poll_us() const noexcept { return idle_poll_us_; }

 private:
  unsigned entries_ = 256;
  unsigned cq_entries_ = 0;
  bool sqpoll_ = false;
  unsigned sqpoll_idle_ms_ = 1000;
  bool single_issuer_ = true;
  bool defer_taskrun_ = true;
  unsigned registered_files_ = 0;
  unsigned fixed_buf_count_ = 0;
  std::size_t fixed_buf_size_ = 0;
  bool huge_buffers_ = false;
  unsigned budget_ = 1024;
  unsigned idle_poll_us_ = 0;
};

}  // namespace ipcrt
