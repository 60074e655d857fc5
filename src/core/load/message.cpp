#include "core/load/message.hpp"

#include <algorithm>
#include <cstring>

namespace ipclab::msg {

namespace {

// splitmix64: a cheap bijective mix, so random payloads are incompressible yet reproducible
// by the receiver.
inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline uint64_t payload_word(uint64_t key, size_t i, bool random) {
  return random ? mix(key + i) : key + i * 0x0101010101010101ull;
}

inline uint64_t load64(const std::byte* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline void store64(std::byte* p, uint64_t v) { std::memcpy(p, &v, 8); }

// verify=sample: payload word 0, one word per kSampleStride bytes of payload, and the last.
template <class F>
inline void for_each_sample(size_t words, F f) {
  constexpr size_t stride = kSampleStride / 8;
  for (size_t i = 0; i < words; i += stride) f(i);
  if (words && (words - 1) % stride) f(words - 1);
}

}  // namespace

void encode(std::byte* buf, size_t len, const Header& h, bool random, bool sampled) {
  if (len < kHeaderSize) {
    if (h.flags & kStop) {
      std::memset(buf, 0xFF, len);
      return;
    }
    for (size_t i = 0; i < len; ++i) buf[i] = std::byte((h.seq + i) % 255);
    return;
  }
  uint64_t w0 = (h.seq & ((uint64_t(1) << 48) - 1)) | (uint64_t(h.producer) << 48);
  store64(buf, w0);
  store64(buf + 8, h.send_ns);
  store64(buf + 16, uint64_t(h.flags) | (uint64_t(len) << 32));
  size_t head = kHeaderSize;
  if ((h.flags & kIntended) && len >= kIntendedHeaderSize) {
    store64(buf + 24, h.intended_ns);
    head = kIntendedHeaderSize;
  }
  const uint64_t key = w0 * 0x9e3779b97f4a7c15ull;
  size_t words = (len - head) / 8;
  std::byte* p = buf + head;
  if (sampled)
    for_each_sample(words, [&](size_t i) { store64(p + i * 8, payload_word(key, i, random)); });
  else
    for (size_t i = 0; i < words; ++i) store64(p + i * 8, payload_word(key, i, random));
  for (size_t i = head + words * 8; i < len; ++i) buf[i] = std::byte(key >> (8 * (i % 8)));
}

Decoded decode(const std::byte* buf, size_t len, bool random, uint64_t expect_seq, bool sampled) {
  Decoded d;
  if (len < kHeaderSize) {
    if (is_stop(buf, len)) {
      d.ok = true;
      d.h.flags = kStop;
      return d;
    }
    d.h.seq = expect_seq;
    d.ok = true;
    for (size_t i = 0; i < len; ++i)
      if (buf[i] != std::byte((expect_seq + i) % 255)) d.ok = false;
    return d;
  }
  d.h = read_header(buf, len);
  const uint64_t w0 = load64(buf), w2 = load64(buf + 16);
  const size_t head =
      (d.h.flags & kIntended) && len >= kIntendedHeaderSize ? kIntendedHeaderSize : kHeaderSize;
  const uint64_t key = w0 * 0x9e3779b97f4a7c15ull;
  size_t words = (len - head) / 8;
  const std::byte* p = buf + head;
  // Accumulate differences rather than branching per word, so the check streams like a memcmp.
  uint64_t diff = (w2 >> 32) ^ uint64_t(len);
  if (sampled)
    for_each_sample(words, [&](size_t i) { diff |= load64(p + i * 8) ^ payload_word(key, i, random); });
  else
    for (size_t i = 0; i < words; ++i) diff |= load64(p + i * 8) ^ payload_word(key, i, random);
  for (size_t i = head + words * 8; i < len; ++i) diff |= uint64_t(buf[i] != std::byte(key >> (8 * (i % 8))));
  d.ok = diff == 0;
  return d;
}

void copy(std::byte* dst, const std::byte* src, size_t len, bool sampled) {
  if (!sampled || len < kHeaderSize) {
    std::memcpy(dst, src, len);
    return;
  }
  const Header h = read_header(src, len);
  const size_t head = (h.flags & kIntended) && len >= kIntendedHeaderSize ? kIntendedHeaderSize : kHeaderSize;
  std::memcpy(dst, src, head);
  const size_t words = (len - head) / 8;
  for_each_sample(words, [&](size_t i) { std::memcpy(dst + head + i * 8, src + head + i * 8, 8); });
  std::memcpy(dst + head + words * 8, src + head + words * 8, len - head - words * 8);
}

Header read_header(const std::byte* buf, size_t len) {
  Header h;
  const uint64_t w0 = load64(buf);
  h.seq = w0 & ((uint64_t(1) << 48) - 1);
  h.producer = uint32_t(w0 >> 48);
  h.send_ns = load64(buf + 8);
  h.flags = uint32_t(load64(buf + 16));
  if ((h.flags & kIntended) && len >= kIntendedHeaderSize) h.intended_ns = load64(buf + 24);
  return h;
}

bool is_stop(const std::byte* buf, size_t len) {
  if (len >= kHeaderSize) return (load64(buf + 16) & kStop) != 0;
  for (size_t i = 0; i < len; ++i)
    if (buf[i] != std::byte(0xFF)) return false;
  return true;
}

SeqWindow::Verdict SeqWindow::take(uint64_t seq) {
  if (seq >= next_) {
    if (seq - next_ >= kBits)
      std::fill(seen_.begin(), seen_.end(), 0);
    else
      for (uint64_t s = next_; s <= seq; ++s) word(s) &= ~mask(s);  // the slots next_..seq reuse
    word(seq) |= mask(seq);
    next_ = seq + 1;
    return kNew;
  }
  if (next_ - seq > kBits || (word(seq) & mask(seq))) return kRepeat;
  word(seq) |= mask(seq);
  return kLate;
}

}  // namespace ipclab::msg
