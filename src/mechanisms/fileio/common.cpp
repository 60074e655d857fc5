#include "mechanisms/fileio/common.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <system_error>

#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/base/fs.hpp"
#include "core/measure/session.hpp"
#include "core/measure/watchdog.hpp"
#include "core/model/std_params.hpp"
#include "core/ownership/deadline.hpp"
#include "core/ownership/journal.hpp"

namespace ipclab::fileio {

namespace {

constexpr uint64_t kMagic = 0x3176'4f49'4c50'4349ull;  // "ICPLIOv1"
constexpr uint64_t kStep = 0x9e37'79b9'7f4a'7c15ull;

uint64_t mix(uint64_t x) {  // splitmix64's finalizer: neighbouring offsets get unrelated patterns
  x += kStep;
  x = (x ^ (x >> 30)) * 0xbf58'476d'1ce4'e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d0'49bb'1331'11ebull;
  return x ^ (x >> 31);
}

[[noreturn]] void sys_fail(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

std::string file_name(uint64_t size) { return fmt::format("ipclab-fileio-v1-{}.dat", size); }

// The filesystem `dir` is, or will be, on: its nearest existing ancestor's.
bool is_tmpfs(const std::string& dir) {
  struct statfs sf {};
  std::filesystem::path p(dir);
  while (statfs(p.c_str(), &sf) != 0) {
    if (!p.has_relative_path()) return false;
    p = p.parent_path();
  }
  return sf.f_type == TMPFS_MAGIC || sf.f_type == RAMFS_MAGIC;
}

// Opens the test file at `path` (open_own_file: never through a link, never blocking on a
// FIFO or device planted at its name in a folder others can write to). -1 when there is none;
// throws, naming what is there, when it is something else than a regular file of this user's.
int open_test_file(const std::string& path, int flags) {
  std::string why;
  const int fd = open_own_file(path, flags, &why);
  if (fd < 0 && errno == EPERM)
    throw std::runtime_error(
        fmt::format("{} is not a test file of yours ({}); remove it or choose another -p dir", path, why));
  return fd;
}

// The file is reused when it has the right size and its first and last blocks verify; a damaged
// block elsewhere is then reported as corrupt by the run that reads it, not silently rewritten.
// A test file is reused only when it is a regular file of this user (never read through a link)
// of the right size whose first and last blocks hold the expected content.
bool valid_file(const std::string& path, uint64_t size) {
  int fd = open_test_file(path, O_RDONLY);
  if (fd < 0) return false;
  struct stat st {};
  bool ok = fstat(fd, &st) == 0 && uint64_t(st.st_size) == size;
  alignas(64) std::byte buf[kBlock];
  for (uint64_t off : {uint64_t(0), size - kBlock}) {
    if (!ok) break;
    ok = pread(fd, buf, kBlock, off_t(off)) == ssize_t(kBlock) && block_ok(buf, off);
  }
  close(fd);
  return ok;
}

uint64_t sysfs_logical_block_size(dev_t dev) {
  for (const char* rel : {"queue/logical_block_size", "../queue/logical_block_size"}) {
    std::ifstream in(fmt::format("/sys/dev/block/{}:{}/{}", major(dev), minor(dev), rel));
    uint64_t v = 0;
    if (in >> v && v) return v;
  }
  return 0;
}

std::string sysfs_word(const std::string& file) {
  std::ifstream in(file);
  std::string w;
  in >> w;
  return w;
}

// The kernel's transparent huge page mode, the bracketed word of its sysfs file ("" when unknown).
std::string thp_mode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(in, line);
  const auto a = line.find('['), b = line.find(']');
  return a == std::string::npos || b == std::string::npos || b < a ? "" : line.substr(a + 1, b - a - 1);
}

}  // namespace

std::vector<ParamSpec> suite_params(std::vector<ParamSpec> own, std::vector<std::string> qd_quick) {
  std::vector<ParamSpec> p{
      {.name = "pattern",
       .type = ParamType::String,
       .def = "rand",
       .choices = {"seq", "rand"},
       .help = "seq: sequential 64 KiB reads; rand: 4 KiB reads of every block once, shuffled (seed 42)",
       .quick = {"seq", "rand"}},
      {.name = "qd",
       .type = ParamType::Int,
       .def = "32",
       .help = "queue depth: reads in flight (psync: threads)",
       .quick = std::move(qd_quick),
       .full = {"1", "4", "8", "16", "32", "64", "128"},
       .min = 1,
       .max = 128},
  };
  for (auto& o : own) p.push_back(std::move(o));
  p.push_back({.name = "file_size",
               .type = ParamType::Size,
               .def = "1073741824",
               .help = "size of the test file (a multiple of 64 KiB); created once and reused",
               .min = int64_t(kSeqSize),
               .max = int64_t(1) << 40});
  p.push_back({.name = "dir",
               .type = ParamType::String,
               .def = kDefaultDir,
               .help = "directory of the test file, on a real disk (not tmpfs)",
               .path = true});
  return p;
}

ParamSpec cache_param() {
  return {.name = "cache",
          .type = ParamType::String,
          .def = "drop",
          .choices = {"drop", "warm"},
          .help =
              "buffered reads: drop = evict the file before the run (and at each new pass), "
              "warm = read it all once before"};
}

ParamSpec verify_param() {
  // fio reads without checking; verify=sample is the nearest an engine here comes to that while
  // still proving each read brought the block it asked for. On the reference VM the full check
  // cost 2.5-3% of fio's IOPS at qd=128 (docs/fileio.md#against-fio).
  ParamSpec p = std_params::verify();  // the messaging suites' parameter, for blocks read
  p.help =
      "full: every word of every 4 KiB block read is checked; sample: each block's header (its "
      "offset and the magic word) and its last word";
  p.full = {"full"};  // the comparisons with fio ask for sample by name
  return p;
}

ParamSpec hugepages_param() {
  // Why it matters (docs/fileio.md#buffers): a direct read is DMA'd into the buffer's physical
  // pages, one segment per contiguous piece. 4 KiB pages come as the page allocator hands them out
  // — measured here, our 2 MiB of buffers in runs of 1.1-2 pages, fio's in runs of 12.5 — and a
  // block-layer request merged from ten 64 KiB reads then carries ~160 segments instead of ~13:
  // sequential reads at QD32 went 13-25% behind fio for that alone.
  return {.name = "hugepages",
          .type = ParamType::Bool,
          .def = "1",
          .help =
              "IO buffers on 2 MiB transparent huge pages (one physical segment per read; "
              "madvise, where the kernel's THP mode allows), or 0: on 4 KiB pages as the "
              "page allocator hands them out",
          .full = {"0", "1"}};
}

ParamSpec batch_param() {
  // One read per submit is fio's default and, on the virtio disk of the reference VM, 15-25%
  // more IOPS than one submit per loop turn at the same depth with the device's queue as full
  // (docs/fileio.md#submission): the comparison with fio uses the same option by default.
  return {.name = "batch",
          .type = ParamType::Int,
          .def = "1",
          .help =
              "at most this many reads per submitting system call (1 = one per read, as fio's "
              "default iodepth_batch_submit=1; 0 = every read prepared in a loop turn at once)",
          .full = {"0", "1"},
          .min = 0,
          .max = 128};
}

std::string check_cache(const Params& p, bool direct) {
  if (direct && p.has("cache") && p.str("cache") == "warm")
    return "cache=warm has no effect with O_DIRECT; use cache=drop or a buffered variant";
  const uint64_t size = uint64_t(p.i64("file_size"));
  if (size % kSeqSize)
    return fmt::format("-p file_size={} is not a multiple of 64 KiB; use e.g. 1G or 64M", size);
  const std::string dir = p.str("dir");
  if (direct && is_tmpfs(dir))
    return fmt::format(
        "-p dir={} is tmpfs, which has no disk and refuses O_DIRECT; use a directory on a disk, "
        "e.g. {}",
        dir, kDefaultDir);
  return check_dir(dir);
}

void fill_block(void* buf, uint64_t off) {
  auto* w = static_cast<uint64_t*>(buf);
  const uint64_t s = mix(off);
  w[0] = off;
  w[1] = kMagic;
  for (uint64_t i = 2; i < kBlock / 8; ++i) w[i] = s + i * kStep;
}

bool block_ok(const void* buf, uint64_t off) {
  const auto* w = static_cast<const uint64_t*>(buf);
  const uint64_t s = mix(off);
  uint64_t diff = (w[0] ^ off) | (w[1] ^ kMagic);
  for (uint64_t i = 2; i < kBlock / 8; ++i) diff |= w[i] ^ (s + i * kStep);  // vectorises
  return diff == 0;
}

bool block_ok_sampled(const void* buf, uint64_t off) {
  const auto* w = static_cast<const uint64_t*>(buf);
  constexpr uint64_t last = kBlock / 8 - 1;
  return w[0] == off && w[1] == kMagic && w[last] == mix(off) + last * kStep;
}

namespace {

// Why the default folder cannot be used ("" when it can, or does not exist yet): it sits in a folder
// every user can write to, so it is used only while it is a folder of this user's closed to others.
std::string default_dir_problem() {
  struct stat st {};
  if (lstat(kDefaultDir, &st) != 0) return "";  // made on first use (ensure_default_dir)
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
    return fmt::format(
        "{} is not a folder of yours closed to others (a link, another user's, or writable by "
        "others); remove it or choose -p dir",
        kDefaultDir);
  return "";
}

// Created 0700 by this user on first use, and checked again (it may have changed since the check).
void ensure_default_dir() {
  make_private_dir(kDefaultDir);
  if (const std::string why = default_dir_problem(); !why.empty()) throw UsageError(why);
}

}  // namespace

std::string check_dir(const std::string& dir) {
  if (dir == kDefaultDir) return default_dir_problem();
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return fmt::format("-p dir={} is not an existing folder; create it first or leave dir at its default",
                       dir);
  if (const std::string fs = special_file_system(dir); !fs.empty())
    return fmt::format("-p dir={} is on {}, which holds no test files; choose a folder on a disk, e.g. {}",
                       dir, fs, kDefaultDir);
  if (access(dir.c_str(), W_OK | X_OK) != 0)
    return fmt::format("-p dir={} is not writable; choose a writable folder", dir);
  return "";
}

std::string ensure_file(const std::string& dir, uint64_t size) {
  if (dir == kDefaultDir) ensure_default_dir();
  const std::string path = dir + "/" + file_name(size);
  if (valid_file(path, size)) return path;

  struct statvfs vs {};
  if (statvfs(dir.c_str(), &vs) == 0 && uint64_t(vs.f_bavail) * vs.f_frsize < size + (64u << 20))
    // The machine's state, not bad input: skip (the rest of the run goes on) and name the fix.
    throw Skip(
        fmt::format("{} has no room for a {} byte test file; use a smaller "
                    "-p file_size or another -p dir",
                    dir, size));
  // Written under a temporary name of the run (exclusive, journaled: a killed run's part-written
  // file is swept), made durable, then renamed: a crash never leaves a short file under the
  // final name, and concurrent runs never read a half-written one.
  std::string tmp;
  int fd = ipc::create_file(dir, file_name(size), 0600, tmp);
  constexpr uint64_t kChunk = 1 << 20;
  auto buf = aligned_buffer(kChunk);
  const Deadline::Waiting waiting("writing the test file " + tmp);  // each MiB written restarts the guard
  for (uint64_t off = 0; off < size; off += kChunk) {
    Deadline::progress();
    const uint64_t n = std::min(kChunk, size - off);
    for (uint64_t b = 0; b < n; b += kBlock) fill_block(buf.get() + b, off + b);
    for (uint64_t done = 0; done < n;) {
      ssize_t w = pwrite(fd, buf.get() + done, n - done, off_t(off + done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int e = w < 0 ? errno : EIO;
        close(fd);
        ipc::remove(ipc::Kind::File, tmp);
        // Over `ulimit -f` (EFBIG: SIGXFSZ is ignored) or a full disk: the cause and the fix.
        throw std::runtime_error(fmt::format("writing the test file {}: {}", tmp, write_failure(e)));
      }
      done += uint64_t(w);
    }
  }
  Deadline::waiting_for("the test file " + tmp + " to reach the disk (fdatasync)", 120);
  if (fdatasync(fd) != 0) {
    close(fd);
    ipc::remove(ipc::Kind::File, tmp);
    sys_fail("fdatasync " + tmp);
  }
  posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  // Not over whatever is there: a concurrent run's valid file is kept; an invalid test file of
  // this user's (short, older) is replaced; anything else (a link, another user's) is refused.
  if (!ipc::commit_file(tmp, path, false)) {
    struct stat st {};
    const bool mine = lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid();
    if (valid_file(path, size) || !mine) {
      ipc::remove(ipc::Kind::File, tmp);
      if (mine) return path;
      throw std::runtime_error(
          fmt::format("{} exists and is not a test file of yours (a link, a folder or "
                      "another user's); remove it or choose another -p dir",
                      path));
    }
    ipc::commit_file(tmp, path, true);
  }
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return path;
}

Plan::Plan(uint64_t file_size, bool random)
    : len_(random ? kRandSize : kSeqSize), count_(file_size / len_), random_(random) {
  if (!random_) return;
  perm_.resize(count_);
  for (uint64_t i = 0; i < count_; ++i) perm_[i] = uint32_t(i);
  // Fisher-Yates over mt19937_64 with a plain modulo: std::uniform_int_distribution differs
  // between standard libraries, and the order must be the same everywhere.
  std::mt19937_64 rng(kSeed);
  for (uint64_t i = count_ - 1; i > 0; --i) std::swap(perm_[i], perm_[rng() % (i + 1)]);
}

int open_file(const std::string& path, bool direct, bool random) {
  int fd = open_test_file(path, O_RDONLY | (direct ? O_DIRECT : 0));
  if (fd >= 0) {
    posix_fadvise(fd, 0, 0, random ? POSIX_FADV_RANDOM : POSIX_FADV_SEQUENTIAL);
    return fd;
  }
  if (direct && errno == EINVAL)
    throw std::runtime_error(
        fmt::format("the filesystem of {} refuses O_DIRECT (EINVAL); use -p "
                    "dir= on ext4 or xfs, or a buffered engine",
                    path));
  sys_fail("open " + path);
}

uint64_t direct_alignment(const std::string& path) {
  uint64_t align = 0;
  struct statx sx {};
  if (statx(AT_FDCWD, path.c_str(), 0, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN)) {
    if (sx.stx_dio_offset_align == 0)
      throw std::runtime_error(
          fmt::format("the filesystem of {} does not support O_DIRECT "
                      "(statx DIOALIGN is 0); use -p dir= on ext4 or xfs",
                      path));
    align = std::max<uint64_t>(sx.stx_dio_offset_align, sx.stx_dio_mem_align);
  }
  if (!align) {
    struct stat st {};
    if (stat(path.c_str(), &st) == 0) align = sysfs_logical_block_size(st.st_dev);
  }
  if (!align) align = 512;
  if (kBlock % align != 0)
    throw std::runtime_error(
        fmt::format("O_DIRECT on {} needs {}-byte alignment; this suite reads "
                    "4 KiB blocks",
                    path, align));
  return align;
}

std::unique_ptr<std::byte, void (*)(void*)> aligned_buffer(size_t n, bool huge) {
  const size_t align = huge ? size_t(2) << 20 : 4096, total = (n + align - 1) / align * align;
  void* p = std::aligned_alloc(align, total);
  if (!p) throw std::bad_alloc();
  if (huge) madvise(p, total, MADV_HUGEPAGE);  // refused or not granted: 4 KiB pages, as without
  std::memset(p, 0, n);                        // fault the pages in now, not inside the measured window
  return {static_cast<std::byte*>(p), &std::free};
}

std::string evict(const std::string& path, bool allow_drop_caches) {
  int fd = open_test_file(path, O_RDONLY);
  if (fd < 0) sys_fail("open " + path);
  int r = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  if (r != 0) throw std::system_error(r, std::generic_category(), "posix_fadvise DONTNEED");
  std::string how = "posix_fadvise(DONTNEED) of the file";
  if (!allow_drop_caches || resident_fraction(path) < 0.001) return how;
  // Pages fadvise could not evict (mapped elsewhere): the system-wide drop, which needs
  // CAP_SYS_ADMIN and also empties every other process's cache, is the last resort.
  sync();
  std::ofstream dc("/proc/sys/vm/drop_caches");
  if (dc && (dc << "1").flush()) return how + ", then /proc/sys/vm/drop_caches=1";
  return how + fmt::format(" (pages left resident; /proc/sys/vm/drop_caches: {})", std::strerror(errno));
}

double resident_fraction(const std::string& path) {
  int fd = open_own_file(path, O_RDONLY);
  if (fd < 0) return -1;
  struct stat st {};
  double frac = -1;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    void* m = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
    if (m != MAP_FAILED) {
      const long page = sysconf(_SC_PAGESIZE);
      std::vector<unsigned char> v((size_t(st.st_size) + page - 1) / page);
      if (mincore(m, size_t(st.st_size), v.data()) == 0) {
        size_t in = 0;
        for (unsigned char c : v) in += c & 1;
        frac = double(in) / double(v.size());
      }
      munmap(m, size_t(st.st_size));
    }
  }
  close(fd);
  return frac;
}

Setup prepare(Session& s, bool direct) {
  const Params& p = s.params();
  const uint64_t size = uint64_t(p.i64("file_size"));
  const std::string dir = p.str("dir");
  Record& rec = s.record();
  const uint64_t t0 = now_ns();
  Setup su{.path = ensure_file(dir, size),
           .file_size = size,
           .direct = direct,
           .qd = int(p.i64("qd")),
           .cache = p.str_or("cache", "drop"),
           .plan = Plan(size, p.str("pattern") == "rand"),
           .sampled = p.str_or("verify", "full") == "sample"};
  rec.extra["file"] = su.path;
  rec.extra["file_ready_s"] = double(now_ns() - t0) * 1e-9;
  // Write back every dirty page of the file system first: what a build or an earlier benchmark
  // left to write back would otherwise queue in front of the measured reads (reads of 0.5 s
  // each were seen right after a cargo build).
  const uint64_t t1 = now_ns();
  if (const int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    const Deadline::Waiting waiting("the file system of " + dir + " to write back (syncfs)", 120);
    syncfs(dfd);
    close(dfd);
  }
  rec.extra["syncfs_s"] = double(now_ns() - t1) * 1e-9;
  rec.extra["fs_tmpfs"] = is_tmpfs(dir);
  rec.extra["block_size"] = su.plan.len();
  rec.extra["ios_per_pass"] = su.plan.ios_per_pass();
  rec.extra["fadvise_hint"] = su.plan.random() ? "random" : "sequential";
  if (direct) {
    rec.extra["alignment"] = direct_alignment(su.path);
    close(open_file(su.path, true, false));  // a refusal shows here, before any worker starts
    rec.extra["cache"] = "bypassed (O_DIRECT)";
  } else if (su.cache == "warm") {
    struct sysinfo si {};
    if (sysinfo(&si) == 0 && double(si.freeram + si.bufferram) * si.mem_unit < 1.2 * double(size))
      throw Skip(fmt::format("cache=warm: the {} byte file does not fit in free memory", size));
    int fd = open_file(su.path, false, false);
    auto buf = aligned_buffer(1 << 20);
    {
      const Deadline::Waiting waiting("reading the test file into the page cache");
      for (uint64_t off = 0; off < size; off += 1 << 20) {
        Deadline::progress();
        if (pread(fd, buf.get(), 1 << 20, off_t(off)) < 0) sys_fail("warm read");
      }
    }
    close(fd);
    rec.extra["cache"] = "warm: the whole file read once before the run";
  } else {
    su.drop_method = evict(su.path, true);
    rec.extra["cache"] = "drop: " + su.drop_method + " before the run and at each new pass";
  }
  rec.extra["cache_resident_before"] = resident_fraction(su.path);
  return su;
}

DeviceReads::DeviceReads(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return;
  dir_ = fmt::format("/sys/dev/block/{}:{}", major(st.st_dev), minor(st.st_dev));
  if (!read(dir_, before_)) dir_.clear();
}

bool DeviceReads::read(const std::string& dir, Stat& st) {
  // Documented in Documentation/block/stat.rst: read I/Os, read merges, read sectors, ...
  std::ifstream in(dir + "/stat");
  return bool(in >> st.ios >> st.merges >> st.sectors);
}

void DeviceReads::record(Record& rec) const {
  Stat now;
  if (dir_.empty() || !read(dir_, now)) return;
  const uint64_t ios = now.ios - before_.ios, sectors = now.sectors - before_.sectors;
  // A partition has no queue/ of its own: its disk's is one level up.
  std::string q = dir_ + "/queue/";
  if (!std::filesystem::exists(q)) q = dir_ + "/../queue/";
  std::string sched;
  for (std::ifstream in(q + "scheduler"); in >> sched;)
    if (sched.front() == '[') {  // the active one is bracketed: "none [mq-deadline] kyber"
      sched = sched.substr(1, sched.size() - 2);
      break;
    }
  std::error_code ec;
  rec.extra["device"] = {{"name", std::filesystem::canonical(dir_, ec).filename().string()},
                         {"reads", ios},
                         {"merged", now.merges - before_.merges},
                         {"read_kib_per_request", ios ? double(sectors) * 512.0 / 1024.0 / double(ios) : 0.0},
                         {"scheduler", sched},
                         {"max_sectors_kb", sysfs_word(q + "max_sectors_kb")},
                         {"nr_requests", sysfs_word(q + "nr_requests")},
                         {"scope", "whole device, whole run (warm-up included), every process"}};
}

uint64_t Cursor::next() {
  uint64_t n = next_.fetch_add(1, std::memory_order_relaxed);
  if (n && !su_.direct && su_.cache == "drop" && n % su_.plan.ios_per_pass() == 0) evict(su_.path, false);
  return n;
}

void Tally::complete(long res, const void* buf, uint64_t off, uint64_t len, uint64_t t0, uint64_t t1,
                     bool measuring) {
  if (res < 0)
    throw std::system_error(int(-res), std::generic_category(), fmt::format("read at offset {}", off));
  const uint64_t blocks = len / kBlock;
  uint64_t bad = 0;
  if (uint64_t(res) != len) {
    bad = blocks;  // a short read of a file this size is data lost
  } else {
    const auto* b = static_cast<const std::byte*>(buf);
    for (uint64_t i = 0; i < blocks; ++i)
      bad += !(sampled ? block_ok_sampled(b + i * kBlock, off + i * kBlock)
                       : block_ok(b + i * kBlock, off + i * kBlock));
  }
  integrity.received += blocks;
  integrity.corrupt += bad;
  if (!measuring) return;
  ++ops;
  bytes += len;
  hist.record(t1 - t0);
}

void Tally::fold_into(Worker& w) const {
  auto& o = w.out();
  o.hist.merge(hist);
  o.ops += ops;
  o.bytes += bytes;
  o.integrity += integrity;
}

void run_engine(Session& s, const Setup& su, const std::string& engine,
                const std::function<void(Worker&)>& body) {
  // One worker process: its rusage (RUSAGE_SELF) covers every thread it runs, including the
  // kernel's io_uring helper threads, which belong to the process.
  std::vector<WorkerSpec> ws;
  ws.push_back({"worker", 0, -1, body});
  ws.back().series = false;  // its threads tally apart and fold in at the end (Tally::fold_into)
  const DeviceReads device(su.path);
  s.run_workers(std::move(ws), true, "io");
  Record& rec = s.record();
  device.record(rec);
  rec.extra["engine"] = engine;
  rec.extra["direct"] = su.direct;
  if (s.params().has("hugepages"))
    rec.extra["buffers"] = {{"huge_pages", s.params().flag("hugepages")}, {"thp_mode", thp_mode()}};
  rec.extra["verified_blocks"] = rec.integrity.received;
  rec.extra["verify"] = su.sampled ? "sample" : "full";
  if (rec.wall_s > 0) {
    rec.rates["iops"] = double(rec.ops) / rec.wall_s;
    rec.rates["MB_per_s"] = double(rec.bytes) / rec.wall_s / 1e6;
  }
  rec.extra["file_coverage"] = double(rec.ops) / double(su.plan.ios_per_pass());
}

}  // namespace ipclab::fileio
