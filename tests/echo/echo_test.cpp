// echo suite: every server echoes verified bytes under the harness's client, an external
// executable joins through the peer contract, a server that dies fails the record quickly, and a
// run leaves no descriptor behind.
#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/placement.hpp"
#include "core/session.hpp"
#include "mechanisms/echo/common.hpp"

namespace ipclab::echo {
namespace {

const Mechanism* find_mech(const std::string& name) {
  for (const auto& m : Registry::get().mechanisms())
    if (m.suite == "echo" && m.name == name) return &m;
  return nullptr;
}

Params params_of(const Mechanism& m, std::map<std::string, std::string> over) {
  Params p;
  for (const auto& spec : m.params) p.set(spec.name, over.count(spec.name) ? over[spec.name] : spec.def);
  return p;
}

Record run(const Mechanism& m, const Params& p, const ServerLaunch* launch = nullptr) {
  RunOptions o;
  o.duration_s = 0.2;
  o.warmup_s = 0.05;
  o.cpus = allowed_cpus();
  Record rec;
  Session s(m, p, o, rec);
  if (launch) run_echo(s, *launch);
  else m.workload(s);
  return rec;
}

int open_fds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

struct Case {
  std::string mech, key, value;
};

class EveryServer : public ::testing::TestWithParam<Case> {};

TEST_P(EveryServer, EchoesVerifiedBytes) {
  const Case& c = GetParam();
  const Mechanism* m = find_mech(c.mech);
  if (!m) GTEST_SKIP() << "echo/" << c.mech << " is not built here";
  std::map<std::string, std::string> over{{"connections", "4"}, {"size", "1024"}};
  if (!c.key.empty()) over[c.key] = c.value;
  const int fds0 = open_fds();
  Record rec;
  try {
    rec = run(*m, params_of(*m, over));
  } catch (const Skip& e) {
    GTEST_SKIP() << e.what();
  }
  EXPECT_EQ(rec.status, Status::Ok) << rec.error;
  EXPECT_GT(rec.ops, 100u);
  EXPECT_EQ(rec.integrity.corrupt, 0u);
  ASSERT_TRUE(rec.latency.has_value());
  EXPECT_EQ(rec.latency->kind, "rtt");
  EXPECT_GT(rec.extra["server_cpu_per_echo_ns"].get<double>(), 0.0);
  EXPECT_EQ(open_fds(), fds0);
}

INSTANTIATE_TEST_SUITE_P(Echo, EveryServer,
                         ::testing::Values(Case{"epoll", "", ""}, Case{"uring", "fixed_files", "0"},
                                           Case{"uring", "fixed_files", "1"},
                                           Case{"asio", "backend", "epoll"},
                                           Case{"asio", "backend", "io_uring"},
                                           Case{"go", "", ""}),
                         [](const auto& info) {
                           return info.param.mech + (info.param.value.empty() ? "" : "_" + info.param.value);
                         });

TEST(Echo, ExternalExecutableFollowsTheContract) {
  const Mechanism* m = find_mech("peer");
  ASSERT_NE(m, nullptr);
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "python3 missing";
  Record rec = run(*m, params_of(*m, {{"connections", "2"}, {"size", "3000"},
                                      {"server", IPCLAB_TEST_DIR "/echo/echo_server.py"}}));
  EXPECT_EQ(rec.status, Status::Ok) << rec.error;
  EXPECT_GT(rec.ops, 10u);
}

TEST(Echo, MissingPeerExecutableIsSkipped) {
  const Mechanism* m = find_mech("peer");
  ASSERT_NE(m, nullptr);
  EXPECT_THROW(run(*m, params_of(*m, {{"server", "/nonexistent/echo-server"}})), Skip);
}

TEST(Echo, ServerDyingMidRunFailsQuickly) {
  const Mechanism* m = find_mech("epoll");
  ASSERT_NE(m, nullptr);
  ServerLaunch dies{.serve = [](int, const Params&) {
    usleep(100000);
    raise(SIGKILL);
  }};
  const int fds0 = open_fds();
  const uint64_t t0 = now_ns();
  Record rec = run(*m, params_of(*m, {{"connections", "4"}}), &dies);
  EXPECT_LT(double(now_ns() - t0) * 1e-9, 3.0);
  EXPECT_EQ(rec.status, Status::Failed);
  EXPECT_NE(rec.error.find("signal 9"), std::string::npos) << rec.error;
  EXPECT_EQ(open_fds(), fds0);
}

}  // namespace
}  // namespace ipclab::echo
