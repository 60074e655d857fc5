// Functional tests of every bulk mechanism through the harness (run_one): both patterns, threads
// and processes, sizes from a page to past a pipe's capacity. A run passes only if every message
// arrived once, in order, with every byte intact, and its record states the bulk figures.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "../workload_support.hpp"
#include "core/base/error.hpp"
#include "core/plan/runner.hpp"

namespace ipclab {
namespace {

// A window that holds several operations of its size on a loaded machine under ASan (one 3 MiB
// round trip, verified in full, takes tens of ms there): no operation in it fails the run.
Record run_bulk(const std::string& mech, Overrides o, double duration_s = 0.05) {
  return test::run_point("bulk/" + mech, std::move(o), duration_s);
}

struct Variant {
  std::string mech;
  Overrides params;
  std::string name;
};

std::vector<Variant> variants() {
  return {{"pipe", {}, "pipe"},
          {"unix_stream", {}, "unix_stream"},
          {"shm_spsc", {}, "shm_spsc"},
          {"shm_bulk", {{"copy", {"inout"}}}, "shm_bulk_inout"},
          {"shm_bulk", {{"copy", {"inplace"}}}, "shm_bulk_inplace"},
          {"vmsplice", {{"drain", {"read"}}}, "vmsplice_read"},
          {"vmsplice", {{"drain", {"splice"}}, {"gift", {"1"}}}, "vmsplice_splice_gift"},
          {"memfd", {{"handoff", {"seal"}}}, "memfd_seal"},
          {"memfd", {{"handoff", {"ring"}}}, "memfd_ring"},
          {"process_vm", {{"direction", {"pull"}}}, "process_vm_pull"},
          {"process_vm", {{"direction", {"push"}}}, "process_vm_push"},
          {"zerocopy", {{"send", {"copy"}}}, "tcp_copy"},
          {"zerocopy", {{"send", {"msg_zerocopy"}}}, "tcp_msg_zerocopy"},
          {"zerocopy", {{"send", {"uring_send_zc"}}}, "tcp_uring_send_zc"}};
}

void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

class Bulk : public ::testing::TestWithParam<Variant> {};

TEST_P(Bulk, EveryByteArrivesAndTheRecordStatesTheBulkFigures) {
  const Variant& v = GetParam();
  for (std::string mode : {"threads", "processes"})
    for (std::string pattern : {"throughput", "roundtrip"})
      for (std::string size : {"4K", "1M", "3M"}) {
        Overrides o = v.params;
        o["mode"] = {mode};
        o["pattern"] = {pattern};
        o["size"] = {size};
        o["placement"] = {"unpinned"};
        const Record r = run_bulk(v.mech, o, size == "3M" ? 0.3 : 0.05);
        if (r.status == Status::Skipped) {
          EXPECT_FALSE(r.error.empty()) << r.name << ": skipped without a reason";
          continue;
        }
        ASSERT_EQ(r.status, Status::Ok) << r.name << ": " << r.error;
        EXPECT_GT(r.ops, 0u) << r.name;
        EXPECT_TRUE(r.integrity.clean()) << r.name;
        EXPECT_GT(r.integrity.received, 0u) << r.name;
        if (pattern == "throughput") {
          EXPECT_EQ(r.integrity.sent, r.integrity.received) << r.name;
        }
        // Each op moved one message (throughput) or a request and its echo (roundtrip).
        const uint64_t per_op =
            uint64_t(parse_integer(size, true).value()) * (pattern == "roundtrip" ? 2 : 1);
        EXPECT_EQ(r.bytes, r.ops * per_op) << r.name;
        ASSERT_TRUE(r.extra.contains("bulk")) << r.name;
        const auto& b = r.extra["bulk"];
        EXPECT_GT(b["GiB_per_s"].get<double>(), 0) << r.name;
        EXPECT_GT(b["memcpy_GiB_per_s"].get<double>(), 0) << r.name;
        EXPECT_NEAR(b["of_memcpy"].get<double>(),
                    b["GiB_per_s"].get<double>() / b["memcpy_GiB_per_s"].get<double>(), 1e-9)
            << r.name;
        // The CPU and faults per MiB and per op are the record's own, over its bytes and ops.
        const double mib = double(r.bytes) / double(1 << 20);
        EXPECT_NEAR(b["cpu_user_us_per_MiB"].get<double>(), r.cpu.user_s * 1e6 / mib, 1e-6) << r.name;
        EXPECT_NEAR(b["cpu_sys_us_per_MiB"].get<double>(), r.cpu.sys_s * 1e6 / mib, 1e-6) << r.name;
        EXPECT_NEAR(b["faults_per_op"].get<double>(), double(r.cpu.faults) / double(r.ops), 1e-12) << r.name;
      }
}

TEST_P(Bulk, SampledVerificationDeliversToo) {
  const Variant& v = GetParam();
  Overrides o = v.params;
  o["verify"] = {"sample"};
  o["size"] = {"1M"};
  o["placement"] = {"unpinned"};
  for (std::string pattern : {"throughput", "roundtrip"}) {
    o["pattern"] = {pattern};
    const Record r = run_bulk(v.mech, o);
    if (r.status == Status::Skipped) continue;
    EXPECT_EQ(r.status, Status::Ok) << r.name << ": " << r.error;
    EXPECT_TRUE(r.integrity.clean()) << r.name;
  }
}

INSTANTIATE_TEST_SUITE_P(All, Bulk, ::testing::ValuesIn(variants()),
                         [](const auto& info) { return info.param.name; });

TEST(Bulk, SizesOutsideTheSuitesRangeAreRefused) {
  EXPECT_THROW(run_bulk("pipe", {{"size", {"2K"}}}), UsageError);
  EXPECT_THROW(run_bulk("pipe", {{"size", {"2G"}}}), UsageError);
}

// A Unix socket has no zero-copy send: the kernel says so, and the benchmark is skipped with it.
TEST(Bulk, ZeroCopyOnAUnixSocketIsSkippedWithTheKernelsReason) {
  for (std::string send : {"msg_zerocopy", "uring_send_zc"}) {
    const Record r =
        run_bulk("zerocopy", {{"socket", {"unix"}}, {"send", {send}}, {"placement", {"unpinned"}}});
    if (r.status == Status::Ok) continue;  // a kernel that learnt it
    EXPECT_EQ(r.status, Status::Skipped) << r.name << ": " << r.error;
    EXPECT_NE(r.error.find("unix socket"), std::string::npos) << r.error;
  }
}

}  // namespace
}  // namespace ipclab
