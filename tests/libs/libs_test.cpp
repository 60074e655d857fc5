// The library transports through the harness (run_one), threads of this process: both patterns,
// every endpoint, messages from 64 B to 64 KiB; a run passes only if every message arrived once,
// in order, intact, and the record names the library's version and the kernel transport under it.
// (Processes: tests/libs/test_libs_cli.py, in runs of their own — see libs/nng.cpp.)
#include <gtest/gtest.h>
#include <sched.h>

#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/runner.hpp"
#include "../workload_support.hpp"

namespace ipclab {
namespace {

Record run(const std::string& mech, Overrides o) { return test::run_point("libs/" + mech, std::move(o)); }

class Libs : public ::testing::TestWithParam<std::string> {};

TEST_P(Libs, EveryEndpointAndPatternDeliversEveryMessageIntact) {
  const std::string lib = GetParam();
  for (std::string endpoint : {"ipc", "tcp", "inproc"})
    for (std::string pattern : {"throughput", "roundtrip"})
      for (std::string size : {"64", "4K", "64K"}) {
        const Record r = run(lib, {{"endpoint", {endpoint}},
                                   {"pattern", {pattern}},
                                   {"size", {size}},
                                   {"placement", {"unpinned"}}});
        ASSERT_EQ(r.status, Status::Ok) << r.name << ": " << r.error;
        EXPECT_GT(r.ops, 0u) << r.name;
        EXPECT_TRUE(r.integrity.clean()) << r.name;
        if (pattern == "throughput") {
          EXPECT_EQ(r.integrity.sent, r.integrity.received) << r.name;
        }
        const std::string library = r.extra.at("library");
        EXPECT_EQ(library.rfind(lib == "zmq" ? "libzmq " : "nng ", 0), 0u) << library;
        EXPECT_EQ(r.extra.at("kernel_transport"),
                  endpoint == "ipc" ? "unix_stream" : endpoint == "tcp" ? "tcp" : "none (in-process)");
      }
}

INSTANTIATE_TEST_SUITE_P(All, Libs, ::testing::Values("zmq", "nng"), [](const auto& info) { return info.param; });

TEST(Libs, ZmqRequestReplyRunsRoundTripsOnly) {
  const Record r = run("zmq", {{"socket", {"reqrep"}}, {"pattern", {"roundtrip"}}, {"placement", {"unpinned"}}});
  EXPECT_EQ(r.status, Status::Ok) << r.error;
  EXPECT_TRUE(r.integrity.clean());
  EXPECT_THROW(run("zmq", {{"socket", {"reqrep"}}, {"pattern", {"throughput"}}}), UsageError);
}

// iceoryx through the harness's own RouDi: both patterns, both ways of waiting, 64 B to 64 KiB,
// every message received where the sender wrote it. Skipped (with iceoryx's reason) where another
// RouDi's fixed names exist.
TEST(Libs, IceoryxDeliversEveryMessageInPlace) {
  cpu_set_t allowed;
  const bool two_cpus = sched_getaffinity(0, sizeof allowed, &allowed) == 0 && CPU_COUNT(&allowed) >= 2;
  for (std::string wait : {"waitset", "spin"})
    for (std::string pattern : {"throughput", "roundtrip"})
      for (std::string size : {"64", "4K", "64K"}) {
        // Spinning needs the other side on a CPU of its own (refused on one).
        if (wait == "spin" && !two_cpus) continue;
        const Record r = run("iceoryx", {{"wait", {wait}},
                                         {"pattern", {pattern}},
                                         {"size", {size}},
                                         {"placement", {wait == "spin" ? "cross" : "unpinned"}}});
        if (r.status == Status::Skipped) GTEST_SKIP() << r.error;
        ASSERT_EQ(r.status, Status::Ok) << r.name << ": " << r.error;
        EXPECT_GT(r.ops, 0u) << r.name;
        EXPECT_TRUE(r.integrity.clean()) << r.name;
        if (pattern == "throughput") {
          EXPECT_EQ(r.integrity.sent, r.integrity.received) << r.name;
        }
        EXPECT_EQ(r.extra.at("library"), "iceoryx 2.0.3");
        EXPECT_EQ(r.extra.at("baseline").at("mechanism"), "shm_spsc");
        EXPECT_EQ(r.extra.at("baseline").at("params").at("wait"), wait == "spin" ? "spin" : "futex");
        // RouDi is a peer of the session: its CPU over the window is charged apart.
        EXPECT_TRUE(r.extra.at("cpu_by_role").contains("roudi")) << r.extra.dump();
      }
  EXPECT_THROW(run("iceoryx", {{"wait", {"spin"}}, {"placement", {"same"}}}), UsageError);
}

TEST(Libs, InprocCrossesNoProcess) {
  for (std::string lib : {"zmq", "nng"})
    EXPECT_THROW(run(lib, {{"endpoint", {"inproc"}}, {"mode", {"processes"}}}), UsageError);
}

}  // namespace
}  // namespace ipclab
