// Per-thread size-class allocator for coroutine frames, so spawn does not call malloc on the hot path.
#pragma once

#include <cstddef>
#include <new>

namespace ipcrt::detail {

// Frames are rounded up to 64-byte classes; anything above kMaxPooled goes straight to the heap.
inline constexpr std::size_t kFrameGranule = 64;
inline constexpr std::size_t kFrameClasses = 33;  // classes 1..32 -> up to 2 KiB
inline constexpr std::size_t kMaxPooled = kFrameGranule * (kFrameClasses - 1);

struct frame_free_lists {
  void* head[kFrameClasses];
};

// Trivially destructible so the hot path needs no TLS init guard; cleanup lives in a separate object.
inline thread_local constinit frame_free_lists tls_frames{};

void frame_pool_register_cleanup() noexcept;
void* frame_alloc_slow(std::size_t cls);

#if defined(__SANITIZE_ADDRESS__) || defined(IPCRT_NO_FRAME_POOL)
// Under ASan every frame is a real allocation, so use-after-free of a frame is caught.
inline void* frame_allocate(std::size_t n) { return ::operator new(n); }
inline void frame_deallocate(void* p, std::size_t) noexcept { ::operator delete(p); }
#else
inline void* frame_allocate(std::size_t n) {
  const std::size_t cls = (n + kFrameGranule - 1) / kFrameGranule;
  if (cls < kFrameClasses) {
    if (void* p = tls_frames.head[cls]) {
      tls_frames.head[cls] = *static_cast<void**>(p);
      return p;
    }
    return frame_alloc_slow(cls);
  }
  return ::operator new(n);
}

// Each block is an individual heap allocation, so a frame freed on another thread can safely join
// that thread's list.
inline void frame_deallocate(void* p, std::size_t n) noexcept {
  const std::size_t cls = (n + kFrameGranule - 1) / kFrameGranule;
  if (cls < kFrameClasses) {
    *static_cast<void**>(p) = tls_frames.head[cls];
    tls_frames.head[cls] = p;
    return;
  }
  ::operator delete(p);
}
#endif

}  // namespace ipcrt::detail
