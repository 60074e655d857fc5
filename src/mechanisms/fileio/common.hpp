#pragma once
// What every fileio engine shares: the parameters, the test file (created once, atomically, with
// content that lets every 4 KiB block be verified), the IO plan (sequential 64 KiB or a shuffled
// permutation of 4 KiB blocks, seed 42), page-cache handling, O_DIRECT checks, and the per-IO
// accounting (verify, latency, ops) — so engines differ only in how they issue reads.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/model/mechanism.hpp"
#include "core/stats/histogram.hpp"
#include "core/stats/record.hpp"

namespace ipclab {
class Session;
class Worker;
}  // namespace ipclab

namespace ipclab::fileio {

/// Unit of verification: every 4 KiB block carries its own offset, a magic word and a pattern.
constexpr uint64_t kBlock = 4096;
constexpr uint64_t kSeqSize = 64 * 1024;
constexpr uint64_t kRandSize = 4096;
constexpr uint64_t kSeed = 42;
constexpr const char* kDefaultDir = "/var/tmp/ipclab-fileio";

/// The suite's parameter list: pattern, qd (quick grid `qd_quick`), then the engine's `own`, then
/// file_size and dir.
std::vector<ParamSpec> suite_params(std::vector<ParamSpec> own,
                                    std::vector<std::string> qd_quick = {"1", "32"});
/// `cache` (drop | warm) for engines that can read through the page cache.
ParamSpec cache_param();
/// `batch`: at most this many reads per submitting system call (io_uring_enter, io_submit).
/// 1 (default) submits each read as soon as it is prepared, as fio's default
/// iodepth_batch_submit=1 does; 0 submits every read prepared in one turn of the loop at once.
ParamSpec batch_param();
/// `hugepages` (1 | 0): the IO buffers on 2 MiB transparent huge pages, or on 4 KiB pages.
ParamSpec hugepages_param();
/// `verify` (full | sample): how much of every block read is checked (block_ok, block_ok_sampled).
ParamSpec verify_param();
/// "" or why the combination cannot run (cache=warm with O_DIRECT, a -p dir that is not an
/// existing writable folder).
std::string check_cache(const Params& p, bool direct);
/// "" or why `dir` cannot hold the test file: a folder the user names must exist and be writable
/// (ipclab creates only its own default folder).
std::string check_dir(const std::string& dir);

/// Writes the pattern of the block at file offset `off` into `buf` (kBlock bytes).
void fill_block(void* buf, uint64_t off);
/// True when `buf` (kBlock bytes) holds exactly the block at offset `off`.
bool block_ok(const void* buf, uint64_t off);
/// True when `buf` (kBlock bytes) starts with the header of the block at `off` (its offset and
/// the magic word) and ends with that block's last word: the block the read asked for, whole,
/// without reading the 62 cache lines between.
bool block_ok_sampled(const void* buf, uint64_t off);

/// The test file of `size` bytes in `dir`: reused when present with that size and valid blocks,
/// otherwise written to a temporary of the run (ipc::create_file), fsynced and renamed. Returns
/// its path.
std::string ensure_file(const std::string& dir, uint64_t size);

/// Reads and IO plan of one run: IO n reads `len` bytes at `offset(n)`; wraps after the file.
class Plan {
 public:
  Plan(uint64_t file_size, bool random);
  uint64_t len() const { return len_; }
  uint64_t ios_per_pass() const { return count_; }
  uint64_t offset(uint64_t n) const {
    uint64_t i = n % count_;
    return random_ ? uint64_t(perm_[i]) * len_ : i * len_;
  }
  bool random() const { return random_; }

 private:
  uint64_t len_, count_;
  bool random_;
  std::vector<uint32_t> perm_;
};

/// Opens the test file for reading; with `direct`, O_DIRECT with its refusals made clear. The
/// access hint is fio's default (fadvise_hint=1): RANDOM for rand (no readahead), SEQUENTIAL for seq.
int open_file(const std::string& path, bool direct, bool random);
/// Alignment O_DIRECT needs for buffers, lengths and offsets on the file's device (statx
/// DIOALIGN, else the device's logical block size, else 4096); throws when 4096 is not a multiple.
uint64_t direct_alignment(const std::string& path);
/// Buffer of `n` bytes aligned to 4096 (freed with std::free).
/// `huge`: on 2 MiB transparent huge pages (whole ones, madvise(MADV_HUGEPAGE)), so that a read's
/// buffer is one physically contiguous piece; where the kernel's THP mode is "never", or memory is
/// too fragmented for a huge page, the kernel gives 4 KiB pages as without.
std::unique_ptr<std::byte, void (*)(void*)> aligned_buffer(size_t n, bool huge = false);

/// Everything an engine needs, prepared once before the workers start (file, plan, cache state).
struct Setup {
  std::string path;
  uint64_t file_size = 0;
  bool direct = false;
  int qd = 1;
  std::string cache;  // drop | warm
  Plan plan;
  std::string drop_method;  // how evictions are done (fadvise, or drop_caches)
  bool sampled = false;     // verify=sample: block_ok_sampled instead of block_ok
};

/// Reads the common params, creates/reuses the file, checks O_DIRECT, handles the page cache and
/// records it in extra (cache, cache_resident_before, file, alignment).
Setup prepare(Session& s, bool direct);

/// Hands out IO numbers to the queue slots of one run; at each new pass over the file with
/// cache=drop, the file is evicted again so that a pass never reads what the previous one cached.
class Cursor {
 public:
  explicit Cursor(const Setup& su) : su_(su) {}
  uint64_t next();
  uint64_t passes_started() const { return next_.load(std::memory_order_relaxed) / su_.plan.ios_per_pass(); }

 private:
  const Setup& su_;
  std::atomic<uint64_t> next_{0};
};

/// Per-thread tally of completed IOs, folded into the worker's slot at the end.
struct Tally {
  explicit Tally(const Setup& su) : sampled(su.sampled) {}
  Histogram hist;
  uint64_t ops = 0, bytes = 0;
  Integrity integrity;
  bool sampled;  // how much of each block complete() checks (Setup::sampled)

  /// Accounts one completed IO: `res` is the read's result (bytes, or -errno which throws);
  /// checks every block of it (whole, or its samples); counts ops/bytes/latency only when `measuring`.
  void complete(long res, const void* buf, uint64_t off, uint64_t len, uint64_t t0, uint64_t t1,
                bool measuring);
  void fold_into(Worker& w) const;
};

/// Runs one worker process that does `body` (its IO loop) through warm-up and measure, then
/// folds rates (iops, MB_per_s) and extra (passes) into the record.
void run_engine(Session& s, const Setup& su, const std::string& engine,
                const std::function<void(Worker&)>& body);

/// The read counters of the block device under the test file (/sys/dev/block/M:m/stat), taken
/// around a run so the record shows what the device was asked: how many read requests, of what
/// mean size, and how many of our reads the block layer merged into others (plugging and the IO
/// scheduler join adjacent reads). The counters are the device's, not the run's: other processes
/// reading the same disk are counted too, and warm-up is included.
class DeviceReads {
 public:
  explicit DeviceReads(const std::string& path);
  /// extra.device: {name, reads, merged, read_kib_per_request, scheduler, max_sectors_kb,
  /// nr_requests} — the deltas since construction; nothing when sysfs has no stat for the device.
  void record(Record& rec) const;

 private:
  struct Stat {
    uint64_t ios = 0, merges = 0, sectors = 0;
  };
  static bool read(const std::string& dir, Stat& st);
  std::string dir_;  // /sys/dev/block/M:m, empty when unknown
  Stat before_;
};

/// Evicts the file from the page cache (posix_fadvise DONTNEED); returns how.
std::string evict(const std::string& path, bool allow_drop_caches);
/// Fraction of the file's pages resident in the page cache (mincore).
double resident_fraction(const std::string& path);

}  // namespace ipclab::fileio
