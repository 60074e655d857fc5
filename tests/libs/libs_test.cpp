// The library transports through the harness (run_one), threads of this process: both patterns,
// every endpoint, messages from 64 B to 64 KiB; a run passes only if every message arrived once,
// in order, intact, and the record names the library's version and the kernel transport under it.
// (Processes: tests/libs/test_libs_cli.py, in runs of their own — see libs/nng.cpp.)
#include <gtest/gtest.h>

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

TEST(Libs, InprocCrossesNoProcess) {
  for (std::string lib : {"zmq", "nng"})
    EXPECT_THROW(run(lib, {{"endpoint", {"inproc"}}, {"mode", {"processes"}}}), UsageError);
}

}  // namespace
}  // namespace ipclab
