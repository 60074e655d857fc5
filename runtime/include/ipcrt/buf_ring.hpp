// Provided buffer ring (IORING_REGISTER_PBUF_RING) built on liburing 2.3 primitives: we mmap the ring
// ourselves and register it, because io_uring_setup_buf_ring only appeared in liburing 2.4.
#pragma once

#include <liburing.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

namespace ipcrt {

class runtime;

/// A group of equally sized buffers the kernel picks from for recv (IOSQE_BUFFER_SELECT).
class buf_ring {
 public:
  /// Registers `entries` (power of two) buffers of buf_size bytes as group `group` on rt's ring;
  /// throws std::system_error if the kernel refuses.
  buf_ring(runtime& rt, uint16_t group, unsigned entries, std::size_t buf_size);
  /// The same on a ring driven by hand (liburing directly, no runtime).
  buf_ring(io_uring* ring, uint16_t group, unsigned entries, std::size_t buf_size);
  /// Unregisters the group; no operation may still be using it.
  ~buf_ring();
  buf_ring(const buf_ring&) = delete;
  buf_ring& operator=(const buf_ring&) = delete;

  /// The buffer group id to put in sqe->buf_group.
  uint16_t group() const noexcept { return group_; }
  /// Size of each buffer.
  std::size_t buffer_size() const noexcept { return buf_size_; }
  /// Number of buffers.
  unsigned entries() const noexcept { return entries_; }
  /// Buffer bid's memory.
  std::span<std::byte> buffer(uint16_t bid) noexcept {
    return {bufs_ + std::size_t(bid) * buf_size_, buf_size_};
  }
  /// Hands buffer bid back to the kernel.
  void recycle(uint16_t bid) noexcept {
    recycle_later(bid);
    publish();
  }
  /// Queues buffer bid for the kernel without publishing it yet: a loop that frees several
  /// buffers per turn publishes them with one publish() (one store to the ring's tail).
  void recycle_later(uint16_t bid) noexcept {
    io_uring_buf_ring_add(br_, bufs_ + std::size_t(bid) * buf_size_, static_cast<unsigned>(buf_size_), bid,
                          io_uring_buf_ring_mask(entries_), static_cast<int>(pending_++));
  }
  /// Publishes the buffers queued by recycle_later; returns how many.
  unsigned publish() noexcept {
    const unsigned n = pending_;
    if (n) io_uring_buf_ring_advance(br_, static_cast<int>(n));
    pending_ = 0;
    return n;
  }

 private:
  io_uring* ring_;
  io_uring_buf_ring* br_ = nullptr;
  unsigned pending_ = 0;
  std::size_t ring_bytes_ = 0;
  std::byte* bufs_ = nullptr;
  std::size_t buf_size_;
  unsigned entries_;
  uint16_t group_;
};

/// A buffer the kernel filled from a buf_ring; returned to the ring when this handle dies.
class provided_buffer {
 public:
  provided_buffer() noexcept = default;
  provided_buffer(buf_ring* br, uint16_t bid, std::size_t len) noexcept : br_(br), bid_(bid), len_(len) {}
  provided_buffer(provided_buffer&& o) noexcept
      : br_(std::exchange(o.br_, nullptr)), bid_(o.bid_), len_(o.len_) {}
  provided_buffer& operator=(provided_buffer&& o) noexcept {
    if (this != &o) {
      release();
      br_ = std::exchange(o.br_, nullptr);
      bid_ = o.bid_;
      len_ = o.len_;
    }
    return *this;
  }
  ~provided_buffer() { release(); }

  /// The received bytes.
  std::span<const std::byte> data() const noexcept {
    return br_ ? std::span<const std::byte>(br_->buffer(bid_).data(), len_) : std::span<const std::byte>{};
  }
  /// Buffer id within the ring.
  uint16_t id() const noexcept { return bid_; }
  /// Returns the buffer to the kernel now.
  void release() noexcept {
    if (br_) std::exchange(br_, nullptr)->recycle(bid_);
  }

 private:
  buf_ring* br_ = nullptr;
  uint16_t bid_ = 0;
  std::size_t len_ = 0;
};

}  // namespace ipcrt
