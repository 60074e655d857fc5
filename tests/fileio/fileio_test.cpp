// fileio: every engine reads a small file on disk correctly, a damaged block is caught, features
// the machine lacks are skipped with a reason, and bad parameters are usage errors.
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/base/error.hpp"
#include "core/plan/runner.hpp"
#include "mechanisms/fileio/common.hpp"

namespace ipclab {
namespace {

constexpr uint64_t kSize = 4 << 20;

// A few MiB in a private directory on a real disk (never tmpfs: O_DIRECT needs a disk).
class FileIo : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/var/tmp/ipclab-fileio-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Record run(const std::string& mech, Overrides o) {
    o.try_emplace("file_size", std::vector<std::string>{std::to_string(kSize)});
    o.try_emplace("dir", std::vector<std::string>{dir_});
    auto planned = plan(select_mechanisms({"fileio/" + mech}), Preset::Default, o);
    EXPECT_EQ(planned.size(), 1u);
    RunOptions opts;
    // Long enough that one IO stalled by a busy shared disk (seen: >0.15 s at QD 1 under load)
    // still leaves completed reads in the window.
    opts.duration_s = 0.4;
    opts.warmup_s = 0.03;
    Record r = run_one(planned.at(0), opts, 0);
    // A disk can pause for longer than the window, or than the stall limit (this VM's virtio disk
    // does, most of all right after much writing): a point that failed so, and only so, is measured
    // once more, as tests/smoke.py does. Any other failure stands.
    if (r.status == Status::Failed &&
        (r.error == "no operation completed in the measured window" || r.error.rfind("stalled:", 0) == 0)) {
      std::fprintf(stderr, "%s: %s; measured again\n", r.name.c_str(), r.error.c_str());
      r = run_one(planned.at(0), opts, 0);
    }
    return r;
  }

  std::string dir_;
};

TEST(FileIoPattern, BlocksVerifyAtTheirOffsetOnly) {
  alignas(64) std::byte buf[fileio::kBlock];
  fileio::fill_block(buf, 8192);
  EXPECT_TRUE(fileio::block_ok(buf, 8192));
  EXPECT_FALSE(fileio::block_ok(buf, 4096));  // a misplaced block
  buf[1000] ^= std::byte{1};
  EXPECT_FALSE(fileio::block_ok(buf, 8192));  // a flipped bit
}

// verify=sample reads a block's header and its last word: it tells a misplaced, a stale (another
// offset's) or a cut-short block, and not a bit flipped in between.
TEST(FileIoPattern, SampledCheckReadsHeaderAndLastWord) {
  alignas(64) std::byte buf[fileio::kBlock];
  fileio::fill_block(buf, 8192);
  EXPECT_TRUE(fileio::block_ok_sampled(buf, 8192));
  EXPECT_FALSE(fileio::block_ok_sampled(buf, 4096));  // a misplaced block
  buf[1000] ^= std::byte{1};
  EXPECT_TRUE(fileio::block_ok_sampled(buf, 8192));  // between the samples: unseen
  EXPECT_FALSE(fileio::block_ok(buf, 8192));
  fileio::fill_block(buf, 8192);
  buf[8] ^= std::byte{1};
  EXPECT_FALSE(fileio::block_ok_sampled(buf, 8192));  // the magic word
  fileio::fill_block(buf, 8192);
  buf[fileio::kBlock - 1] ^= std::byte{1};
  EXPECT_FALSE(fileio::block_ok_sampled(buf, 8192));  // the last word
}

TEST(FileIoPattern, RandomPlanCoversEveryBlockOnceWithSeed42) {
  fileio::Plan a(kSize, true), b(kSize, true);
  std::vector<int> seen(kSize / 4096);
  bool shuffled = false;
  for (uint64_t n = 0; n < a.ios_per_pass(); ++n) {
    EXPECT_EQ(a.offset(n), b.offset(n));
    ++seen[a.offset(n) / 4096];
    shuffled = shuffled || a.offset(n) != n * 4096;
  }
  for (int c : seen) ASSERT_EQ(c, 1);
  EXPECT_TRUE(shuffled);
  EXPECT_EQ(a.offset(a.ios_per_pass()), a.offset(0));  // wraps for long runs
}

TEST_F(FileIo, FileIsCreatedOnceAndReused) {
  const std::string p = fileio::ensure_file(dir_, kSize);
  struct stat st0 {};
  ASSERT_EQ(stat(p.c_str(), &st0), 0);
  EXPECT_EQ(uint64_t(st0.st_size), kSize);
  EXPECT_EQ(fileio::ensure_file(dir_, kSize), p);
  struct stat st1 {};
  ASSERT_EQ(stat(p.c_str(), &st1), 0);
  EXPECT_EQ(st0.st_ino, st1.st_ino);  // not rewritten
}

TEST_F(FileIo, EveryEngineReadsCorrectly) {
  struct Case {
    std::string mech;
    Overrides extra;
  };
  std::vector<Case> cases = {{"psync", {}},
                             {"psync", {{"direct", {"1"}}}},
                             {"libaio", {}},
                             {"libaio", {{"batch", {"0"}}}},  // a completion batch per io_submit
                             {"libaio", {{"batch", {"3"}}}},
                             {"liburing", {}},
                             {"liburing", {{"batch", {"0"}}}},
                             {"liburing", {{"direct", {"0"}}}},
                             {"liburing", {{"verify", {"sample"}}}}};
  for (auto* m : select_mechanisms({"fileio"}))
    if (m->name == "ipcrt") {
      for (const char* v : {"buffered", "fixed", "direct", "fixed_direct", "sqpoll"})
        cases.push_back({"ipcrt", {{"variant", {v}}}});
      cases.push_back({"ipcrt", {{"variant", {"fixed_direct"}}, {"batch", {"0"}}}});  // a loop turn per enter
    }
  for (auto& c : cases)
    for (const char* pattern : {"seq", "rand"})
      for (const char* qd : {"1", "8"}) {
        Overrides o = c.extra;
        o["pattern"] = {pattern};
        o["qd"] = {qd};
        Record r = run(c.mech, o);
        SCOPED_TRACE(r.name);
        if (r.status == Status::Skipped) continue;  // e.g. SQPOLL refused: reason in r.error
        EXPECT_EQ(r.status, Status::Ok) << r.error;
        EXPECT_GT(r.ops, 0u);
        EXPECT_EQ(r.bytes, r.ops * (pattern == std::string("seq") ? 65536u : 4096u));
        EXPECT_GE(r.integrity.received, r.ops * (pattern == std::string("seq") ? 16u : 1u));
        EXPECT_EQ(r.integrity.corrupt, 0u);
        ASSERT_TRUE(r.latency.has_value());
        EXPECT_EQ(r.latency->kind, "io");
        EXPECT_EQ(r.latency->count, r.ops);
        EXPECT_TRUE(r.extra.contains("cache"));
        EXPECT_EQ(r.extra.at("verify"), c.extra.count("verify") ? "sample" : "full");
      }
}

// hugepages=1 (the default) and 0 both read correctly, and the record says which was asked and what
// the kernel's THP mode was.
TEST_F(FileIo, BuffersOnHugePagesOrSmallOnesReadCorrectly) {
  std::vector<std::pair<std::string, Overrides>> cases = {{"libaio", {}}, {"liburing", {}}};
  for (auto* m : select_mechanisms({"fileio"}))
    if (m->name == "ipcrt")
      for (const char* v : {"direct", "fixed_direct"}) cases.push_back({"ipcrt", {{"variant", {v}}}});
  for (auto& [mech, extra] : cases)
    for (const char* huge : {"0", "1"}) {
      Overrides o = extra;
      o["pattern"] = {"seq"};
      o["qd"] = {"4"};
      o["hugepages"] = {huge};
      Record r = run(mech, o);
      SCOPED_TRACE(r.name);
      ASSERT_EQ(r.status, Status::Ok) << r.error;
      EXPECT_GT(r.ops, 0u);
      EXPECT_EQ(r.integrity.corrupt, 0u);
      ASSERT_TRUE(r.extra.contains("buffers"));
      EXPECT_EQ(r.extra["buffers"]["huge_pages"].get<bool>(), huge == std::string("1"));
      EXPECT_TRUE(r.extra["buffers"]["thp_mode"].is_string());
    }
}

// A huge buffer is whole 2 MiB pages: aligned to 2 MiB, and backed by a huge page wherever the
// kernel's THP mode lets madvise ask for one.
TEST(FileIoBuffers, AHugeBufferIsOnHugePages) {
  auto b = fileio::aligned_buffer(3 << 20, true);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.get()) % (2 << 20), 0u);
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(thp, mode);
  if (mode.find("[never]") != std::string::npos || mode.empty())
    GTEST_SKIP() << "transparent huge pages are off here (" << mode << "): the buffer is on 4 KiB pages";
  // The mapping that holds the buffer, in /proc/self/smaps: its AnonHugePages.
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(b.get());
  bool inside = false;
  uint64_t huge_kib = 0;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find('-') < 17)
      inside = lo <= at && at < hi;
    else if (inside && line.rfind("AnonHugePages:", 0) == 0)
      huge_kib += std::stoull(line.substr(14));
  }
  EXPECT_GE(huge_kib, 2048u) << "THP mode " << mode;
}

TEST_F(FileIo, DamagedBlockIsReportedCorrupt) {
  const std::string p = fileio::ensure_file(dir_, kSize);
  int fd = open(p.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  char junk[100] = "not the pattern";
  ASSERT_EQ(pwrite(fd, junk, sizeof junk, 5 * 4096 + 300), ssize_t(sizeof junk));
  fdatasync(fd);
  close(fd);
  for (const char* mech : {"psync", "libaio", "liburing"}) {
    Record r = run(mech, {{"pattern", {"rand"}}, {"qd", {"4"}}});
    SCOPED_TRACE(r.name);
    EXPECT_GT(r.integrity.corrupt, 0u);
    EXPECT_EQ(r.status, Status::Failed);
    EXPECT_NE(r.error.find("corrupt"), std::string::npos) << r.error;
  }
  // A block whose header is another's fails the sampled check too.
  fd = open(p.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(pwrite(fd, junk, 16, 9 * 4096), 16);
  fdatasync(fd);
  close(fd);
  Record r = run("liburing", {{"pattern", {"rand"}}, {"qd", {"4"}}, {"verify", {"sample"}}});
  EXPECT_GT(r.integrity.corrupt, 0u);
  EXPECT_EQ(r.status, Status::Failed);
}

TEST_F(FileIo, IopollIsSkippedWithAReasonNeverMeasured) {
  bool have_ipcrt = false;
  for (auto* m : select_mechanisms({"fileio"})) have_ipcrt = have_ipcrt || m->name == "ipcrt";
  if (!have_ipcrt) GTEST_SKIP() << "built without ipcrt";
  Record r = run("ipcrt", {{"variant", {"iopoll"}}});
  EXPECT_EQ(r.status, Status::Skipped);
  EXPECT_NE(r.error.find("IOPOLL"), std::string::npos) << r.error;
  EXPECT_EQ(r.ops, 0u);
}

TEST_F(FileIo, FioRunsOrSkipsWhenMissing) {
  ::setenv("IPCLAB_FIO", "/nonexistent/fio", 1);
  Record missing = run("fio_io_uring", {{"qd", {"4"}}});
  ::unsetenv("IPCLAB_FIO");
  EXPECT_EQ(missing.status, Status::Skipped);
  EXPECT_NE(missing.error.find("fio"), std::string::npos);
  Record r = run("fio_io_uring", {{"qd", {"4"}}, {"pattern", {"rand"}}});
  if (r.status == Status::Skipped) GTEST_SKIP() << r.error;
  EXPECT_EQ(r.status, Status::Ok) << r.error;
  EXPECT_GT(r.ops, 0u);
  ASSERT_TRUE(r.latency.has_value());
  EXPECT_GT(r.latency->p50, 0u);
}

// Direct reads cannot be served by the page cache: the device under the file must have counted
// read requests, of at most the size the run asked for in total.
TEST_F(FileIo, DirectReadsShowInTheDeviceCounters) {
  Record r = run("libaio", {{"pattern", {"seq"}}, {"qd", {"4"}}});
  ASSERT_EQ(r.status, Status::Ok) << r.error;
  if (!r.extra.contains("device")) GTEST_SKIP() << "no /sys/dev/block stat for " << dir_ << " (overlay?)";
  const auto& d = r.extra["device"];
  EXPECT_GT(d["reads"].get<uint64_t>(), 0u);
  EXPECT_GT(d["read_kib_per_request"].get<double>(), 0.0);
  EXPECT_FALSE(d["scheduler"].get<std::string>().empty());
}

TEST_F(FileIo, FioFixedRegistersFilesAndBuffers) {
  Record r = run("fio_io_uring", {{"qd", {"4"}}, {"fixed", {"1"}}});
  if (r.status == Status::Skipped) GTEST_SKIP() << r.error;
  ASSERT_EQ(r.status, Status::Ok) << r.error;
  EXPECT_GT(r.ops, 0u);
  const std::string cmd = r.extra["command"];
  EXPECT_NE(cmd.find("--registerfiles=1"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("--fixedbufs=1"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("--iodepth=4"), std::string::npos) << cmd;
}

TEST_F(FileIo, BadParametersAreUsageErrors) {
  EXPECT_THROW(run("psync", {{"qd", {"0"}}}), UsageError);
  EXPECT_THROW(run("psync", {{"pattern", {"diagonal"}}}), UsageError);
  EXPECT_THROW(run("libaio", {{"file_size", {"100000"}}}), UsageError);  // not 64 KiB multiple
  Overrides odd{{"file_size", {"100000"}}};
  EXPECT_THROW(plan(select_mechanisms({"fileio/psync"}), Preset::Default, odd), UsageError);  // by the plan
  EXPECT_THROW(run("liburing", {{"cache", {"warm"}}}), UsageError);  // warm + O_DIRECT
  EXPECT_THROW(run("libaio", {{"hugepages", {"2"}}}), UsageError);
  Overrides o{{"dir", {"relative/path"}}};
  EXPECT_THROW(plan(select_mechanisms({"fileio/psync"}), Preset::Default, o), UsageError);
  // A folder the user names must exist: it is never created (a tree and all, as it once was).
  Overrides missing{{"dir", {dir_ + "/not/there"}}};
  EXPECT_THROW(plan(select_mechanisms({"fileio/psync"}), Preset::Default, missing), UsageError);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/not"));
  char shm_dir[] = "/dev/shm/ipclab-fileio-test-XXXXXX";
  if (mkdtemp(shm_dir)) {
    Overrides shm{{"dir", {shm_dir}}, {"file_size", {"1M"}}};
    // tmpfs refused for O_DIRECT, by the plan (before anything runs)
    EXPECT_THROW(plan(select_mechanisms({"fileio/libaio"}), Preset::Default, shm), UsageError);
    rmdir(shm_dir);
  }
}

}  // namespace
}  // namespace ipclab
