// verify=sample: the sampled words are the ones a full encode writes there, so either check
// accepts a fully written message; a sampled check sees a changed header, tail or sampled word,
// and — what it gives up — not a change between two samples.
#include <gtest/gtest.h>

#include <vector>

#include "core/load/message.hpp"

namespace ipclab {
namespace {

constexpr size_t kLen = 3 * msg::kSampleStride + 100;  // words past the last stride, and a tail

TEST(Message, SampledCheckAcceptsAFullEncodeAndFullCheckRefusesASampledOne) {
  std::vector<std::byte> buf(kLen);
  msg::encode(buf.data(), kLen, {.seq = 7, .producer = 1}, false);
  EXPECT_TRUE(msg::decode(buf.data(), kLen, false, 0, true).ok);
  EXPECT_TRUE(msg::decode(buf.data(), kLen, false, 0, false).ok);

  std::vector<std::byte> sampled(kLen);  // zeros between the samples
  msg::encode(sampled.data(), kLen, {.seq = 7, .producer = 1}, false, true);
  EXPECT_TRUE(msg::decode(sampled.data(), kLen, false, 0, true).ok);
  EXPECT_FALSE(msg::decode(sampled.data(), kLen, false, 0, false).ok);
}

TEST(Message, SampledCheckSeesTheSampledWordsAndNotTheOthers) {
  std::vector<std::byte> buf(kLen);
  const msg::Header h{.seq = 12345, .producer = 3};
  auto fresh = [&] { msg::encode(buf.data(), kLen, h, true); };
  auto sampled_ok = [&] { return msg::decode(buf.data(), kLen, true, 0, true).ok; };
  // The first payload word, the word one stride on, the last word, the tail, the header.
  for (size_t at : {msg::kHeaderSize, msg::kHeaderSize + msg::kSampleStride,
                    msg::kHeaderSize + (kLen - msg::kHeaderSize) / 8 * 8 - 8, kLen - 1, size_t(0)}) {
    fresh();
    buf[at] ^= std::byte(1);
    EXPECT_FALSE(sampled_ok()) << "a change at byte " << at << " went unseen";
  }
  // Between two samples: only a full check sees it.
  fresh();
  buf[msg::kHeaderSize + 8 * 5] ^= std::byte(1);
  EXPECT_TRUE(sampled_ok());
  EXPECT_FALSE(msg::decode(buf.data(), kLen, true, 0, false).ok);
}

// msg::copy (an echo rewritten into a transport's own memory, libs/iceoryx): a sampled copy carries
// exactly what a sampled check reads — into memory full of junk it passes that check, not a full
// one, and leaves the bytes between samples as they were; a full copy is the message.
TEST(Message, SampledCopyCarriesWhatTheSampledCheckReadsAndNothingElse) {
  for (const bool intended : {false, true}) {
    const msg::Header h{.seq = 99,
                        .producer = 2,
                        .send_ns = 5,
                        .flags = intended ? uint32_t(msg::kIntended) : 0u,
                        .intended_ns = 4};
    std::vector<std::byte> src(kLen), dst(kLen, std::byte(0xA5));
    msg::encode(src.data(), kLen, h, true, true);
    msg::copy(dst.data(), src.data(), kLen, true);
    EXPECT_TRUE(msg::decode(dst.data(), kLen, true, 0, true).ok) << intended;
    EXPECT_EQ(msg::read_header(dst.data(), kLen).intended_ns, intended ? 4u : 0u);
    EXPECT_EQ(dst[msg::kHeaderSize + 8 * 8], std::byte(0xA5)) << "a byte between samples was copied";
    std::vector<std::byte> full(kLen), whole(kLen);
    msg::encode(full.data(), kLen, h, true);
    msg::copy(whole.data(), full.data(), kLen, false);
    EXPECT_EQ(whole, full);
  }
  std::vector<std::byte> small(16), out(16);  // under a header: always whole
  msg::encode(small.data(), 16, {.seq = 3}, false);
  msg::copy(out.data(), small.data(), 16, true);
  EXPECT_EQ(out, small);
}

TEST(SeqWindow, InOrderIsNewARepeatIsARepeatAndALateFirstArrivalIsLate) {
  using V = msg::SeqWindow::Verdict;
  msg::SeqWindow w;
  for (uint64_t s = 0; s < 10; ++s) EXPECT_EQ(w.take(s), V::kNew) << s;
  EXPECT_EQ(w.take(9), V::kRepeat);
  EXPECT_EQ(w.take(3), V::kRepeat);
  // 10 and 11 skipped (another consumer took them, or they are late): 12 is new, 11 then late once.
  EXPECT_EQ(w.take(12), V::kNew);
  EXPECT_EQ(w.take(11), V::kLate);
  EXPECT_EQ(w.take(11), V::kRepeat);
  EXPECT_EQ(w.take(13), V::kNew);
}

TEST(SeqWindow, TellsLateFromRepeatAcrossTheWholeWindowAndAcrossItsRingWrap) {
  using V = msg::SeqWindow::Verdict;
  constexpr uint64_t kBits = msg::SeqWindow::kBits;
  msg::SeqWindow w;
  // 5 missing, then 3 x kBits more in order: the ring wraps three times.
  for (uint64_t s = 0; s < 3 * kBits; ++s)
    if (s != 2 * kBits + 5) ASSERT_EQ(w.take(s), V::kNew) << s;
  EXPECT_EQ(w.take(2 * kBits + 5), V::kLate);  // kBits - 5 behind: inside the window
  EXPECT_EQ(w.take(2 * kBits + 5), V::kRepeat);
  EXPECT_EQ(w.take(2 * kBits + 6), V::kRepeat);
  EXPECT_EQ(w.take(kBits), V::kRepeat);  // older than the window: taken as a repeat
  // A jump past the whole window forgets everything before it.
  EXPECT_EQ(w.take(10 * kBits), V::kNew);
  EXPECT_EQ(w.take(10 * kBits - 1), V::kLate);
  EXPECT_EQ(w.take(9 * kBits + 1), V::kLate);
  EXPECT_EQ(w.take(9 * kBits), V::kRepeat);
}

}  // namespace
}  // namespace ipclab
