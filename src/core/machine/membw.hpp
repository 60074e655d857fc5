#pragma once
// The memory-bandwidth reference: one thread's memcpy, or a read-only pass, over buffers of a
// given size — the physical limit of every way to move bytes between processes. anchors/memcpy
// runs it under the harness; the bulk suite states each record's bandwidth as a fraction of it.
//
// Warm: the same source and destination every time, as a transport reuses its buffers (in cache
// when two of them fit). Cold: a pool of buffer pairs spanning four times the largest cache,
// taken in turn, so that no copy finds its bytes in cache. Buffers are mapped and touched up front,
// so page faults are not part of the figure.
#include <cstddef>
#include <cstdint>

namespace ipclab::membw {

enum class Cache { Warm, Cold };

/// The largest CPU cache (sysfs, cpu0), bytes; 32 MiB when it cannot be read.
size_t largest_cache_bytes();

class Buffers {
 public:
  Buffers(size_t size, Cache cache);
  ~Buffers();
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;

  /// One memcpy of size() bytes (cold: from and to the next pair of the pool).
  void copy();
  /// One read-only pass over size() bytes (cold: the next buffer), returning their word sum.
  uint64_t read();
  size_t size() const { return size_; }

 private:
  size_t size_, pairs_, next_ = 0;
  std::byte* mem_ = nullptr;
  size_t mapped_ = 0;
  std::byte* src(size_t i) const { return mem_ + 2 * i * size_; }
  std::byte* dst(size_t i) const { return mem_ + (2 * i + 1) * size_; }
};

/// Warm memcpy bandwidth at `size` bytes, GiB/s, on the calling thread: copies for at least
/// `seconds` (and at least three), the whole period over the bytes copied.
double memcpy_gib_s(size_t size, double seconds);

}  // namespace ipclab::membw
