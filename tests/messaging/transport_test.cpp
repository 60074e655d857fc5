// Functional tests of every messaging mechanism through the harness (run_one): both patterns,
// threads and (where possible) processes, several producers/consumers where offered. A run
// passes only if every message arrived once, in order per producer, with every byte intact.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/plan/runner.hpp"

namespace ipclab {
namespace {

Record run_transport(const std::string& mech, Overrides o) {
  auto mechs = select_mechanisms({"messaging/" + mech});
  auto plan_ = plan(mechs, Preset::Default, o);
  EXPECT_EQ(plan_.size(), 1u);
  RunOptions opts;
  opts.duration_s = 0.05;
  opts.warmup_s = 0.01;
  opts.repetitions = 1;
  opts.cpus = {};
  return run_one(plan_.at(0), opts, 0);
}

// The largest message `mech` takes here: the queues' kernel cap, read as the mechanism reads it
// (8192 where it cannot be read), or the size parameter's bound.
int64_t max_size(const std::string& mech) {
  const char* cap = mech == "posix_mq"  ? "/proc/sys/fs/mqueue/msgsize_max"
                    : mech == "sysv_mq" ? "/proc/sys/kernel/msgmax"
                                        : nullptr;
  if (!cap) return 65536;
  int64_t v = 8192;
  std::ifstream(cap) >> v;
  return v;
}

// `size`, or the largest message `mech` takes here when that is smaller.
std::string size_for(const std::string& mech, int64_t size) {
  return std::to_string(std::min(size, max_size(mech)));
}

void expect_clean(const Record& r) {
  EXPECT_EQ(r.status, Status::Ok) << r.name << ": " << r.error;
  EXPECT_GT(r.ops, 0u) << r.name;
  EXPECT_EQ(r.integrity.lost, 0u) << r.name;
  EXPECT_EQ(r.integrity.duplicated, 0u) << r.name;
  EXPECT_EQ(r.integrity.corrupt, 0u) << r.name;
  EXPECT_GT(r.integrity.received, 0u) << r.name;
}

struct TransportCase {
  std::string mech;
  bool processes, shared;
};

class Messaging : public ::testing::TestWithParam<TransportCase> {};

TEST_P(Messaging, RoundTripDeliversEveryMessageIntact) {
  const auto& c = GetParam();
  for (int64_t size : {8, 64, 8192})
    expect_clean(run_transport(
        c.mech,
        {{"pattern", {"roundtrip"}}, {"size", {size_for(c.mech, size)}}, {"placement", {"unpinned"}}}));
}

TEST_P(Messaging, ThroughputDeliversEveryMessageInOrder) {
  const auto& c = GetParam();
  for (int64_t size : {24, 1000, 8192})
    expect_clean(run_transport(c.mech, {{"pattern", {"throughput"}},
                                        {"size", {size_for(c.mech, size)}},
                                        {"placement", {"unpinned"}},
                                        {"random", {"1"}}}));
}

TEST_P(Messaging, ProcessesAndSeveralPairs) {
  const auto& c = GetParam();
  if (c.processes)
    expect_clean(run_transport(
        c.mech, {{"pattern", {"throughput"}}, {"mode", {"processes"}}, {"placement", {"unpinned"}}}));
  expect_clean(run_transport(
      c.mech,
      {{"pattern", {"roundtrip"}}, {"producers", {"2"}}, {"consumers", {"2"}}, {"placement", {"unpinned"}}}));
}

TEST_P(Messaging, SharedQueueWithSeveralProducersAndConsumers) {
  const auto& c = GetParam();
  Overrides o{
      {"pattern", {"throughput"}}, {"producers", {"3"}}, {"consumers", {"2"}}, {"placement", {"unpinned"}}};
  if (!c.shared) {
    EXPECT_THROW(run_transport(c.mech, o), UsageError);
    return;
  }
  expect_clean(run_transport(c.mech, o));
}

// Open loop: every message sent on its schedule arrives intact, its latency recorded from its
// intended send time (corrected), from its actual one (raw), and the sender's lateness.
TEST_P(Messaging, OpenLoopDeliversEveryMessageOnItsSchedule) {
  const auto& c = GetParam();
  Overrides o{{"pattern", {"rate"}},
              {"rate", {"2k"}},
              {"arrivals", {"poisson"}},
              {"pace", {"sleep"}},
              {"placement", {"unpinned"}},
              {"size", {size_for(c.mech, 100)}},
              {"mode", {c.processes ? "processes" : "threads"}}};
  if (c.shared) o["producers"] = o["consumers"] = {"2"};
  const Record r = run_transport(c.mech, o);
  expect_clean(r);
  const auto& rate = r.extra.at("rate");
  EXPECT_EQ(rate.at("requested_per_s").get<double>(), 2000.0);
  EXPECT_EQ(rate.at("arrivals"), "poisson");
  // What the senders sent inside the window is what the receivers counted as measured.
  EXPECT_EQ(rate.at("sent").get<uint64_t>(), r.ops) << r.name;
  EXPECT_EQ(rate.at("sched_error_ns").at("count").get<uint64_t>(), r.ops) << r.name;
  if (rate.at("saturated").get<bool>()) {  // possible on a crowded machine; then never a latency
    EXPECT_FALSE(r.latency) << r.name;
    EXPECT_TRUE(rate.at("raw_ns").is_null()) << r.name;
    return;
  }
  ASSERT_TRUE(r.latency) << r.name;
  EXPECT_EQ(r.latency->count, r.ops);
  const auto& raw = rate.at("raw_ns");
  EXPECT_EQ(raw.at("count").get<uint64_t>(), r.ops);
  // Each message's intended time is at or before its actual one: corrected >= raw, quantile by quantile.
  for (auto [q, v] : {std::pair{"p50", r.latency->p50}, {"p99", r.latency->p99}, {"max", r.latency->max}})
    EXPECT_GE(double(v) * 1.01, raw.at(q).get<double>()) << r.name << " " << q;
}

INSTANTIATE_TEST_SUITE_P(
    All, Messaging,
    ::testing::Values(TransportCase{"pipe", true, false}, TransportCase{"fifo", true, false},
                      TransportCase{"unix_stream", true, false}, TransportCase{"unix_dgram", true, true},
                      TransportCase{"unix_seqpacket", true, true}, TransportCase{"tcp", true, false},
                      TransportCase{"udp", true, true}, TransportCase{"posix_mq", true, true},
                      TransportCase{"sysv_mq", true, true}, TransportCase{"eventfd", true, false},
                      TransportCase{"shm_spsc", true, false}, TransportCase{"shm_mpmc", true, true},
                      TransportCase{"mutex_cv", false, true}, TransportCase{"lockfree_queue", false, true},
                      TransportCase{"uring_msg_ring", false, false}),
    [](const auto& info) { return info.param.mech; });

TEST(Messaging, EveryWaitStrategyOfTheRings) {
  for (std::string m : {"shm_spsc", "shm_mpmc"})
    for (std::string w : {"spin", "spin_yield", "futex", "adaptive"})
      for (std::string pattern : {"throughput", "roundtrip"})
        expect_clean(run_transport(
            m, {{"pattern", {pattern}}, {"wait", {w}}, {"placement", {"unpinned"}}, {"queue_depth", {"4"}}}));
}

TEST(Messaging, NonBlockingBusyPolls) {
  for (std::string m : {"fifo", "unix_stream", "unix_dgram", "tcp", "udp", "posix_mq", "sysv_mq", "eventfd"})
    expect_clean(
        run_transport(m, {{"pattern", {"throughput"}}, {"nonblocking", {"1"}}, {"placement", {"unpinned"}}}));
}

TEST(Messaging, ImpossibleCombinationsAreRefused) {
  EXPECT_THROW(run_transport("mutex_cv", {{"mode", {"processes"}}}), UsageError);
  EXPECT_THROW(run_transport("udp", {{"size", {"65536"}}}), UsageError);
  EXPECT_THROW(run_transport("shm_spsc", {{"pattern", {"throughput"}}, {"producers", {"2"}}}), UsageError);
  EXPECT_THROW(run_transport("tcp", {{"pattern", {"roundtrip"}}, {"producers", {"2"}}}), UsageError);
  // One slot: its freed sequence (pos + capacity) would equal its full one (pos + 1).
  EXPECT_THROW(run_transport("shm_mpmc", {{"queue_depth", {"1"}}}), UsageError);
}

// The smallest rings: one slot for shm_spsc, two for shm_mpmc, each side holding its last message
// in its slot until its next receive.
TEST(Messaging, TheSmallestRingsPassEveryMessage) {
  for (auto [m, depth] : {std::pair{"shm_spsc", "1"}, std::pair{"shm_mpmc", "2"}})
    for (std::string pattern : {"throughput", "roundtrip"})
      expect_clean(run_transport(m, {{"pattern", {pattern}},
                                     {"wait", {"spin"}},
                                     {"placement", {"unpinned"}},
                                     {"queue_depth", {depth}}}));
}

// One byte over the kernel's cap on a queue's messages, as read here, is refused naming the cap.
void expect_over_the_cap_refused(const std::string& mech, const std::string& cap_name) {
  const int64_t cap = max_size(mech);
  if (cap >= 65536)
    GTEST_SKIP() << cap_name << " is " << cap << " here: every size the size parameter allows fits";
  try {
    run_transport(mech, {{"size", {std::to_string(cap + 1)}}, {"placement", {"unpinned"}}});
    ADD_FAILURE() << mech << " ran " << cap + 1 << "-byte messages over " << cap_name << " = " << cap;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(cap_name), std::string::npos) << e.what();
  }
}

TEST(Messaging, PosixMqSizeOverMsgsizeMaxIsRefused) {
  expect_over_the_cap_refused("posix_mq", "msgsize_max");
}
TEST(Messaging, SysvMqSizeOverMsgmaxIsRefused) { expect_over_the_cap_refused("sysv_mq", "msgmax"); }

TEST(Messaging, PosixMqDepthIsCappedAndRecorded) {
  Record r = run_transport(
      "posix_mq", {{"pattern", {"throughput"}}, {"queue_depth", {"1000"}}, {"placement", {"unpinned"}}});
  expect_clean(r);
  ASSERT_TRUE(r.extra.contains("mq_maxmsg"));
  // Capped at the kernel's limit, read here (RLIMIT_MSGQUEUE may cap it further).
  int64_t msg_max = 0;
  std::ifstream("/proc/sys/fs/mqueue/msg_max") >> msg_max;
  if (msg_max <= 0) GTEST_SKIP() << "/proc/sys/fs/mqueue/msg_max cannot be read here";
  EXPECT_GE(r.extra["mq_maxmsg"].get<int64_t>(), 1);
  EXPECT_LE(r.extra["mq_maxmsg"].get<int64_t>(), std::min<int64_t>(1000, msg_max));
  EXPECT_EQ(r.extra["queue_depth_used"], r.extra["mq_maxmsg"]);
}

}  // namespace
}  // namespace ipclab
