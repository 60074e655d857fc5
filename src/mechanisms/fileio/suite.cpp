// The fileio suite's declaration (reference 003's file reads).
#include "core/model/mechanism.hpp"

namespace ipclab {
namespace {

IPCLAB_REGISTER(Suite{
    .name = "fileio",
    .help = "file reads: sequential 64 KiB and shuffled 4 KiB over a verified test file, across "
            "psync, libaio, liburing, the ipcrt runtime and fio",
    .plots = {"iops_vs_queue_depth", "throughput_vs_queue_depth"},
});

}  // namespace
}  // namespace ipclab
