// The fileio suite's declaration (reference 003's file reads).
#include "core/model/mechanism.hpp"

namespace ipclab {
namespace {

IPCLAB_REGISTER(Suite{
    .name = "fileio",
    .help = "file reads: sequential 64 KiB and shuffled 4 KiB over a verified test file, across "
            "psync, libaio, liburing, the ipcrt runtime and fio",
    .plots = {"iops_vs_queue_depth", "throughput_vs_queue_depth"},
    .tables = {{.id = "rand",
                .title = "Random 4 KiB reads",
                .where = "pattern=rand",
                .figures = {{"IOs/s", "rate"},
                            {"MB/s", "megabytes_per_s"},
                            {"p50", "latency:p50"},
                            {"p99", "latency:p99"},
                            {"CPU/IO", "cpu"}},
                .label = "engine"},
               {.id = "seq",
                .title = "Sequential 64 KiB reads",
                .where = "pattern=seq",
                .figures = {{"IOs/s", "rate"},
                            {"MB/s", "megabytes_per_s"},
                            {"p50", "latency:p50"},
                            {"p99", "latency:p99"},
                            {"CPU/IO", "cpu"}},
                .label = "engine"}},
});

}  // namespace
}  // namespace ipclab
