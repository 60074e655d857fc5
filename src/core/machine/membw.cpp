#include "core/machine/membw.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <system_error>

#include "core/base/clock.hpp"
#include "core/base/fs.hpp"
#include "core/base/params.hpp"
#include "core/machine/env.hpp"

namespace ipclab::membw {

size_t largest_cache_bytes() {
  size_t largest = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string size =
        read_first_line("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size");
    if (size.empty()) break;
    if (auto v = parse_integer(size, true)) largest = std::max(largest, size_t(*v));
  }
  return largest ? largest : size_t(32) << 20;
}

Buffers::Buffers(size_t size, Cache cache) : size_(size) {
  pairs_ = 1;
  if (cache == Cache::Cold)
    pairs_ = std::max<size_t>(2, (4 * largest_cache_bytes() + 2 * size - 1) / (2 * size));
  mapped_ = 2 * pairs_ * size_;
  void* m = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (m == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap memcpy buffers");
  mem_ = static_cast<std::byte*>(m);
  // Written, not only populated: a zero page shared by every untouched page would read from cache.
  for (size_t i = 0; i < mapped_; i += 8) {
    const uint64_t v = i * 0x9e3779b97f4a7c15ull;
    std::memcpy(mem_ + i, &v, std::min<size_t>(8, mapped_ - i));
  }
}

Buffers::~Buffers() { munmap(mem_, mapped_); }

void Buffers::copy() {
  const size_t i = next_;
  next_ = next_ + 1 == pairs_ ? 0 : next_ + 1;
  std::memcpy(dst(i), src(i), size_);
  // The copy must happen: the compiler cannot see that nobody reads dst.
  asm volatile("" : : "r"(dst(i)) : "memory");
}

uint64_t Buffers::read() {
  const size_t i = next_;
  next_ = next_ + 1 == pairs_ ? 0 : next_ + 1;
  const std::byte* p = src(i);
  uint64_t sum = 0;
  for (size_t k = 0; k + 8 <= size_; k += 8) {
    uint64_t v;
    std::memcpy(&v, p + k, 8);
    sum += v;
  }
  return sum;
}

double memcpy_gib_s(size_t size, double seconds) {
  Buffers b(size, Cache::Warm);
  b.copy();  // the first copy fills the caches and the TLB
  const uint64_t t0 = now_ns(), until = t0 + uint64_t(seconds * 1e9);
  uint64_t n = 0;
  do {
    b.copy();
    ++n;
  } while (n < 3 || now_ns() < until);
  const double s = double(now_ns() - t0) * 1e-9;
  return double(n) * double(size) / s / double(1ull << 30);
}

}  // namespace ipclab::membw
