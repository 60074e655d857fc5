// The library transports through the harness (run_one), threads of this process: both patterns,
// every endpoint, messages from 64 B to 64 KiB; a run passes only if every message arrived once,
// in order, intact, and the record names the library's version and the kernel transport under it.
// (Processes: tests/libs/test_libs_cli.py, in runs of their own — see libs/nng.cpp.)
#include <gtest/gtest.h>
#include <sched.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <map>
#include <string>
#include <utility>

#include "../workload_support.hpp"
#include "core/base/error.hpp"
#include "core/plan/runner.hpp"

namespace ipclab {
namespace {

Record run_lib(const std::string& mech, Overrides o) { return test::run_point("libs/" + mech, std::move(o)); }

class Libs : public ::testing::TestWithParam<std::string> {};

TEST_P(Libs, EveryEndpointAndPatternDeliversEveryMessageIntact) {
  const std::string lib = GetParam();
  for (std::string endpoint : {"ipc", "tcp", "inproc"})
    for (std::string pattern : {"throughput", "roundtrip"})
      for (std::string size : {"64", "4K", "64K"}) {
        const Record r = run_lib(lib, {{"endpoint", {endpoint}},
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
        EXPECT_EQ(r.extra.at("kernel_transport"), endpoint == "ipc"   ? "unix_stream"
                                                  : endpoint == "tcp" ? "tcp"
                                                                      : "none (in-process)");
      }
}

// message=copy: sent from the sender's own buffer, which the library copies (zmq_send, nng_send);
// message=msg, the default, is the tests above (a message of the library's, handed over).
TEST_P(Libs, CopiedMessagesArriveIntactInBothPatterns) {
  const std::string lib = GetParam();
  for (std::string pattern : {"throughput", "roundtrip"}) {
    const Record r = run_lib(
        lib, {{"message", {"copy"}}, {"pattern", {pattern}}, {"size", {"4K"}}, {"placement", {"unpinned"}}});
    ASSERT_EQ(r.status, Status::Ok) << r.name << ": " << r.error;
    EXPECT_GT(r.ops, 0u) << r.name;
    EXPECT_TRUE(r.integrity.clean()) << r.name;
    EXPECT_EQ(r.params.str("message"), "copy") << r.name;
  }
}

INSTANTIATE_TEST_SUITE_P(All, Libs, ::testing::Values("zmq", "nng"),
                         [](const auto& info) { return info.param; });

TEST(Libs, ZmqRequestReplyRunsRoundTripsOnly) {
  const Record r =
      run_lib("zmq", {{"socket", {"reqrep"}}, {"pattern", {"roundtrip"}}, {"placement", {"unpinned"}}});
  EXPECT_EQ(r.status, Status::Ok) << r.error;
  EXPECT_TRUE(r.integrity.clean());
  EXPECT_EQ(r.extra.at("sockets"), (nlohmann::json{{"sender", "REQ"}, {"receiver", "REP"}}));
  EXPECT_THROW(run_lib("zmq", {{"socket", {"reqrep"}}, {"pattern", {"throughput"}}}), UsageError);
}

// -p socket=auto is the pair libzmq's perf tools use for the pattern (REQ/REP round trips,
// PUSH/PULL streams), pair is PAIR for both; extra.sockets names what ran.
TEST(Libs, ZmqSocketAutoIsThePerfToolsPairForThePattern) {
  const std::map<std::pair<std::string, std::string>, std::pair<std::string, std::string>> want = {
      {{"auto", "roundtrip"}, {"REQ", "REP"}},
      {{"auto", "throughput"}, {"PUSH", "PULL"}},
      {{"auto", "rate"}, {"PUSH", "PULL"}},
      {{"pair", "roundtrip"}, {"PAIR", "PAIR"}},
      {{"pair", "throughput"}, {"PAIR", "PAIR"}}};
  for (const auto& [key, sockets] : want) {
    Overrides o = {{"socket", {key.first}}, {"pattern", {key.second}}, {"placement", {"unpinned"}}};
    if (key.second == "rate") o["rate"] = {"2k"};
    const Record r = run_lib("zmq", o);
    ASSERT_EQ(r.status, Status::Ok) << r.name << ": " << r.error;
    EXPECT_TRUE(r.integrity.clean()) << r.name;
    EXPECT_EQ(r.extra.at("sockets"),
              (nlohmann::json{{"sender", sockets.first}, {"receiver", sockets.second}}))
        << r.name;
  }
}

// PUSH/PULL (threads; processes: test_libs_cli.py): every message once, in order, intact, over each
// endpoint, and the stop marker's acknowledgement — the receiver's word in the rendezvous, a PUSH
// having no way back — reaches the sender, which closes at once instead of after its 5 s bound.
TEST(Libs, ZmqPushPullDeliversEveryMessageOnceAndStops) {
  for (std::string endpoint : {"ipc", "tcp", "inproc"})
    for (std::string size : {"64", "64K"}) {
      const auto t0 = std::chrono::steady_clock::now();
      const Record r = run_lib("zmq", {{"socket", {"pushpull"}},
                                       {"endpoint", {endpoint}},
                                       {"pattern", {"throughput"}},
                                       {"size", {size}},
                                       {"placement", {"unpinned"}}});
      const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      ASSERT_EQ(r.status, Status::Ok) << r.name << ": " << r.error;
      EXPECT_GT(r.integrity.sent, 0u) << r.name;
      EXPECT_EQ(r.integrity.sent, r.integrity.received) << r.name;
      EXPECT_EQ(r.integrity.lost, 0u) << r.name;
      EXPECT_EQ(r.integrity.duplicated, 0u) << r.name;
      EXPECT_EQ(r.integrity.reordered, 0u) << r.name;
      EXPECT_EQ(r.integrity.corrupt, 0u) << r.name;
      EXPECT_EQ(r.extra.at("sockets"), (nlohmann::json{{"sender", "PUSH"}, {"receiver", "PULL"}})) << r.name;
      EXPECT_LT(took_s, 4.5) << r.name << ": the sender waited out its bound for the stop's acknowledgement";
    }
  EXPECT_THROW(run_lib("zmq", {{"socket", {"pushpull"}}, {"pattern", {"roundtrip"}}}), UsageError);
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
        const Record r = run_lib("iceoryx", {{"wait", {wait}},
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
  EXPECT_THROW(run_lib("iceoryx", {{"wait", {"spin"}}, {"placement", {"same"}}}), UsageError);
}

TEST(Libs, InprocCrossesNoProcess) {
  for (std::string lib : {"zmq", "nng"})
    EXPECT_THROW(run_lib(lib, {{"endpoint", {"inproc"}}, {"mode", {"processes"}}}), UsageError);
}

}  // namespace
}  // namespace ipclab
