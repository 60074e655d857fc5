// file_read: reads a file with known content through ipcrt at queue depth 8 -- eight tasks each
// issuing 64 KiB async_read calls at distinct offsets -- and verifies every block. It writes the file
// itself (8 MiB by default, or argv[1] MiB) with a pattern derived from the block offset, so no input
// is needed. It doubles as a test: exit 0 when every block matches, 1 otherwise, 77 without io_uring.
//
// Build: cmake -S runtime -B /tmp/ipcrt-build -G Ninja && cmake --build /tmp/ipcrt-build --target
// ipcrt_example_file_read
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ipcrt/ipcrt.hpp"

using namespace ipcrt;

namespace {

constexpr std::size_t kBlock = 64 * 1024;
constexpr int kDepth = 8;

// Every 8-byte word holds its own file offset, so a misplaced block is detected.
void fill_block(uint64_t* words, uint64_t offset) {
  for (std::size_t i = 0; i < kBlock / 8; ++i) words[i] = offset + i * 8;
}

bool check_block(const uint64_t* words, uint64_t offset) {
  for (std::size_t i = 0; i < kBlock / 8; ++i)
    if (words[i] != offset + i * 8) return false;
  return true;
}

task<int> reader(int fd, std::size_t blocks, int first) {
  std::vector<uint64_t> buf(kBlock / 8);
  int bad = 0;
  for (std::size_t b = static_cast<std::size_t>(first); b < blocks; b += kDepth) {
    const uint64_t off = b * kBlock;
    int n = co_await async_read(fd, buf.data(), kBlock, off);
    bad += n != static_cast<int>(kBlock) || !check_block(buf.data(), off);
  }
  co_return bad;
}

task<int> read_all(int fd, std::size_t blocks) {
  std::vector<join_handle<int>> hs;
  for (int i = 0; i < kDepth; ++i) hs.push_back(spawn(reader(fd, blocks, i)));
  int bad = 0;
  for (auto& h : hs) bad += co_await h;
  co_return bad;
}

}  // namespace

int main(int argc, char** argv) {
  if (!features::get().io_uring) {
    std::puts("SKIP: io_uring not available");
    return 77;
  }
  const std::size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 8;
  const std::size_t blocks = mib * 1024 * 1024 / kBlock;
  char path[] = "/tmp/ipcrt-file-read-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    std::perror("mkstemp");
    return 1;
  }
  unlink(path);
  std::vector<uint64_t> block(kBlock / 8);
  for (std::size_t b = 0; b < blocks; ++b) {
    fill_block(block.data(), b * kBlock);
    if (pwrite(fd, block.data(), kBlock, static_cast<off_t>(b * kBlock)) != static_cast<ssize_t>(kBlock)) {
      std::perror("pwrite");
      return 1;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  const int bad = sync_wait(read_all(fd, blocks));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("file_read: %zu x 64 KiB at QD %d (page cache warm), %d bad blocks, %.0f MB/s\n", blocks,
              kDepth, bad, static_cast<double>(blocks * kBlock) / s / 1e6);
  close(fd);
  return bad == 0 ? 0 : 1;
}
