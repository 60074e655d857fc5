// The bulk suite: moving megabytes between two sides — the copying baselines (pipe, Unix stream
// socket, shared-memory ring) and the ways Linux offers to copy less (vmsplice, sealed memfds,
// cross-memory attach, zero-copy sends, shared memory read in place). Every record states what
// a bulk transfer costs: bandwidth, CPU per MiB split into user and system time, page faults per
// message, and its bandwidth as a fraction of one thread's memcpy at the same size, measured in
// the same run right after it on the same CPU (core/machine/membw.hpp; anchors/memcpy runs the same copy
// under the harness).
#include <algorithm>

#include "core/machine/membw.hpp"
#include "core/machine/placement.hpp"
#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"
#include "core/stats/record.hpp"

namespace ipclab {
namespace {

// Long enough for a dozen 64 MiB copies, short beside the run itself (and no longer than it).
constexpr double kMemcpySeconds = 0.15;

void finish(Session& s) {
  Record& r = s.record();
  if (!r.bytes || !(r.wall_s > 0)) return;
  const double mib = double(r.bytes) / double(1 << 20);
  const double gib_s = double(r.bytes) / r.wall_s / double(1ull << 30);
  double copy = 0;
  {
    ScopedPin pin(s.cpu_for(0));
    copy =
        membw::memcpy_gib_s(size_t(r.params.i64("size")), std::min(kMemcpySeconds, s.options().duration_s));
  }
  r.extra["bulk"] = {
      {"GiB_per_s", gib_s},
      {"cpu_user_us_per_MiB", r.cpu.user_s * 1e6 / mib},
      {"cpu_sys_us_per_MiB", r.cpu.sys_s * 1e6 / mib},
      {"faults_per_op", r.faults_per_op()},
      {"memcpy_GiB_per_s", copy},
      {"of_memcpy", copy > 0 ? gib_s / copy : 0.0},
  };
}

IPCLAB_REGISTER(Suite{
    .name = "bulk",
    .help = "moving megabytes: copying baselines, vmsplice, memfd, process_vm, zero-copy sends, shared "
            "memory in place",
    .plots = {"bulk_gib_s_vs_size", "bulk_cpu_per_mib_vs_size", "bulk_roundtrip_vs_size"},
    .tables = {{.id = "throughput",
                .title = "Throughput: one sender streams messages to one receiver",
                .where = "pattern=throughput",
                .figures = {{"GiB/s", "extra_number:bulk.GiB_per_s"},
                            {"of memcpy", "extra_fraction:bulk.of_memcpy"},
                            {"user µs/MiB", "extra_number:bulk.cpu_user_us_per_MiB"},
                            {"sys µs/MiB", "extra_number:bulk.cpu_sys_us_per_MiB"},
                            {"faults/message", "faults"},
                            {"one-way p50", "latency:p50"},
                            {"memcpy GiB/s", "extra_number:bulk.memcpy_GiB_per_s"}}},
               {.id = "roundtrip",
                .title = "Round trips: a message and its echo (GiB/s counts both ways)",
                .where = "pattern=roundtrip",
                .figures = {{"GiB/s", "extra_number:bulk.GiB_per_s"},
                            {"of memcpy", "extra_fraction:bulk.of_memcpy"},
                            {"RTT p50", "latency:p50"},
                            {"RTT p99", "latency:p99"},
                            {"user µs/MiB", "extra_number:bulk.cpu_user_us_per_MiB"},
                            {"sys µs/MiB", "extra_number:bulk.cpu_sys_us_per_MiB"},
                            {"faults/round trip", "faults"}}}},
    .answers = {"largest_size_bandwidth"},
    .finish = finish,
});

}  // namespace
}  // namespace ipclab
