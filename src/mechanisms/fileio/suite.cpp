// The fileio suite's declaration (reference 003's file reads).
#include "core/model/mechanism.hpp"

namespace ipclab {
namespace {

// A pattern's table of the page, per engine.
Suite::Table reads_table(const std::string& pattern, const std::string& title) {
  return {.id = pattern,
          .title = title,
          .where = "pattern=" + pattern,
          .figures = {{"IOs/s", "rate"},
                      {"MB/s", "megabytes_per_s"},
                      {"p50", "latency:p50"},
                      {"p99", "latency:p99"},
                      {"CPU/IO", "cpu"}},
          .label = "engine"};
}

IPCLAB_REGISTER(Suite{
    .name = "fileio",
    .help = "file reads: sequential 64 KiB and shuffled 4 KiB over a verified test file, across "
            "psync, libaio, liburing, the ipcrt runtime and fio",
    .plots = {"iops_vs_queue_depth", "throughput_vs_queue_depth"},
    .tables = {reads_table("rand", "Random 4 KiB reads"), reads_table("seq", "Sequential 64 KiB reads")},
});

}  // namespace
}  // namespace ipclab
