// servers suite: protocol conformance of every model, a 1,000-client wave per model, a server
// killed mid-run, no descriptor leaked by a run, and the multi-reactor models' reactors: threads
// pinned to CPUs of their own, each with a listener of its own, recorded as sides.
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "../workload_support.hpp"
#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/machine/placement.hpp"
#include "core/measure/session.hpp"
#include "core/peers/server.hpp"
#include "core/plan/runner.hpp"
#include "mechanisms/servers/protocol.hpp"
#include "mechanisms/servers/suite.hpp"

namespace ipclab::servers {
namespace {

const std::vector<std::string> kModels = {
    "blocking_1th", "threads_mutex_accept", "select", "poll", "epoll_lt",
    "epoll_et",     "epoll_reuseport",      "uring",  "asio"};
// The models that serve one client (or N) at a time: rejected and lost sessions are their
// documented weakness, not a failure. Every other model must serve every client.
bool blocking(const std::string& model) { return model == "blocking_1th" || model == "threads_mutex_accept"; }

// Starts `mech`'s server with `p` as its workload would, over every allowed CPU.
ServerProcess start_server(const Mechanism& mech, const Params& p) {
  RunOptions o;
  o.cpus = allowed_cpus();
  Record rec;
  Session s(mech, p, o, rec);
  return ServerProcess::start(mech.server(s), -1);
}

int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(uint16_t(port));
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// The most descriptors this process can have: RLIMIT_NOFILE's hard limit (run_model raises the
// soft limit to it), or nothing when unlimited.
std::optional<uint64_t> nofile_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_max == RLIM_INFINITY) return std::nullopt;
  return uint64_t(rl.rlim_max);
}

// run_model's need for `clients` clients: one descriptor each, and 64 for itself.
constexpr uint64_t kOwnFds = 64;

// Why `clients` clients cannot run here (their descriptors are over the limit), or "".
std::string too_few_fds(uint64_t clients) {
  const auto lim = nofile_limit();
  if (!lim || *lim >= clients + kOwnFds) return "";
  return "RLIMIT_NOFILE (hard) is " + std::to_string(*lim) + ", under the " +
         std::to_string(clients + kOwnFds) + " descriptors " + std::to_string(clients) +
         " clients need; raise it (ulimit -Hn)";
}

std::string read_n(int fd, size_t n) {
  std::string s;
  char buf[64];
  while (s.size() < n) {
    ssize_t r = recv(fd, buf, std::min(sizeof buf, n - s.size()), 0);
    if (r <= 0) break;
    s.append(buf, size_t(r));
  }
  return s;
}

TEST(ServersProtocol, ParserAnswersEveryGreetingAndStopsAtExit) {
  ProtocolConn pc;
  std::string out;
  EXPECT_EQ(pc.feed("hi\nhel", 6, out), ProtocolConn::State::Open);
  EXPECT_EQ(out, "pong\n");
  EXPECT_EQ(pc.feed("lo\n", 3, out), ProtocolConn::State::Open);
  EXPECT_EQ(out, "pong\npong\n");
  EXPECT_EQ(pc.feed("exit\n", 5, out), ProtocolConn::State::Exit);
  ProtocolConn bad;
  EXPECT_EQ(bad.feed("hola\n", 5, out), ProtocolConn::State::Bad);
}

class EveryModel : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryModel, SpeaksTheProtocol) {
  const Mechanism* mech = test::find_mechanism("servers", GetParam());
  if (!mech) GTEST_SKIP() << GetParam() << " is not built here";
  ServerProcess srv = start_server(*mech, test::params_of(*mech, {{"backlog", "128"}}));
  // One message per write, then a line split across writes, then two lines in one write.
  int fd = connect_to(srv.port());
  for (size_t i = 0; i + 1 < kMessages.size(); ++i) {
    std::string line = kMessages[i] + "\n";
    ASSERT_EQ(send(fd, line.data(), line.size(), MSG_NOSIGNAL), ssize_t(line.size()));
    EXPECT_EQ(read_n(fd, 5), "pong\n") << "after " << kMessages[i];
  }
  ASSERT_EQ(send(fd, "exit\n", 5, MSG_NOSIGNAL), 5);
  char c;
  EXPECT_EQ(recv(fd, &c, 1, 0), 0) << "the server must close after exit";
  close(fd);
  fd = connect_to(srv.port());
  ASSERT_EQ(send(fd, "guten", 5, MSG_NOSIGNAL), 5);
  usleep(20000);
  ASSERT_EQ(send(fd, " tag\nping\n", 10, MSG_NOSIGNAL), 10);
  EXPECT_EQ(read_n(fd, 10), "pong\npong\n");
  ASSERT_EQ(send(fd, "exit\n", 5, MSG_NOSIGNAL), 5);
  EXPECT_EQ(recv(fd, &c, 1, 0), 0);
  close(fd);
  EXPECT_TRUE(srv.process().alive()) << srv.process().death();
}

TEST_P(EveryModel, ServesAThousandClients) {
  const Mechanism* mech = test::find_mechanism("servers", GetParam());
  if (!mech) GTEST_SKIP() << GetParam() << " is not built here";
  if (const auto why = too_few_fds(1000); !why.empty()) GTEST_SKIP() << why;
  const uint64_t t0 = now_ns();
  Record rec = test::run_workload(*mech, test::params_of(*mech, {{"concurrency", "1000"}}));
  EXPECT_LT(double(now_ns() - t0) * 1e-9, 8.0);
  const auto& x = rec.extra;
  EXPECT_EQ(x["processed"].get<uint64_t>() + x["rejected"].get<uint64_t>() + x["lost"].get<uint64_t>(),
            1000u);
  EXPECT_EQ(rec.integrity.corrupt, 0u);
  if (!blocking(GetParam())) {
    EXPECT_EQ(rec.status, Status::Ok) << rec.error;
    EXPECT_EQ(rec.ops, 1000u);
    ASSERT_TRUE(rec.latency.has_value());
    EXPECT_EQ(rec.latency->count, 1000u);
    // The window is the wave's, whatever --duration says (0 here).
    EXPECT_GT(rec.wall_s, 0.0);
    EXPECT_NEAR(rec.rates["sessions_per_s"].get<double>(), 1000.0 / rec.wall_s, 1e-6 * 1000.0 / rec.wall_s);
  } else {
    EXPECT_NE(rec.status, Status::Failed) << rec.error;
  }
}

// Waves, one after another, until the window holds --duration (at least one): every wave's clients
// served, counted, and timed; -p waves=N runs exactly N.
TEST(ServersWaves, WavesFillTheWindowOrCountAsAsked) {
  const Mechanism* mech = test::find_mechanism("servers", "epoll_lt");
  ASSERT_NE(mech, nullptr);
  Record rec = test::run_workload(*mech, test::params_of(*mech, {{"concurrency", "20"}}), 0.2, 0.05);
  ASSERT_EQ(rec.status, Status::Ok) << rec.error;
  const uint64_t waves = rec.extra["waves"].get<uint64_t>();
  EXPECT_GT(waves, 1u) << "a 0.2 s window holds more than one wave of 20 sessions";
  EXPECT_EQ(rec.extra["processed"].get<uint64_t>(), 20 * waves);
  EXPECT_EQ(rec.ops, 20 * waves);
  EXPECT_EQ(rec.integrity.sent, 20 * waves);
  EXPECT_TRUE(rec.integrity.clean()) << rec.integrity.text();
  ASSERT_TRUE(rec.latency.has_value());
  EXPECT_EQ(rec.latency->count, 20 * waves);
  EXPECT_GE(rec.wall_s, 0.2);

  Record two =
      test::run_workload(*mech, test::params_of(*mech, {{"concurrency", "20"}, {"waves", "2"}}), 5.0);
  ASSERT_EQ(two.status, Status::Ok) << two.error;
  EXPECT_EQ(two.extra["waves"].get<uint64_t>(), 2u);
  EXPECT_EQ(two.extra["processed"].get<uint64_t>(), 40u);
  EXPECT_LT(two.wall_s, 5.0) << "two waves end the window, not --duration";
}

INSTANTIATE_TEST_SUITE_P(Servers, EveryModel, ::testing::ValuesIn(kModels),
                         [](const auto& info) { return info.param; });

TEST(Servers, SelectAboveFdSetSizeIsSkippedWithTheReason) {
  const Mechanism* mech = test::find_mechanism("servers", "select");
  ASSERT_NE(mech, nullptr);
  try {
    test::run_workload(*mech, test::params_of(*mech, {{"concurrency", "2000"}}));
    FAIL() << "expected a Skip";
  } catch (const Skip& e) {
    EXPECT_NE(std::string(e.what()).find("FD_SETSIZE"), std::string::npos);
  }
}

TEST(Servers, ServerKilledMidRunFailsQuickly) {
  // A model that serves 50 sessions and then dies as if killed.
  Mechanism mech = make_mechanism({
      .name = "dies",
      .serve =
          [](int lfd, const Params&) {
            for (int served = 0;; ++served) {
              if (served == 50) raise(SIGKILL);
              int fd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
              if (fd < 0) {
                poll(nullptr, 0, 1);
                continue;
              }
              int fl = 0;
              ioctl(fd, FIONBIO, &fl);
              serve_blocking(fd);
            }
          },
  });
  if (const auto why = too_few_fds(1000); !why.empty()) GTEST_SKIP() << why;
  const int fds0 = test::open_fds();
  const uint64_t t0 = now_ns();
  Record rec = test::run_workload(mech, test::params_of(mech, {{"concurrency", "1000"}}));
  EXPECT_LT(double(now_ns() - t0) * 1e-9, 3.0);
  EXPECT_EQ(rec.status, Status::Failed);
  EXPECT_NE(rec.error.find("signal 9"), std::string::npos) << rec.error;
  EXPECT_EQ(test::open_fds(), fds0);
}

TEST(Servers, NoDescriptorLeaks) {
  const Mechanism* mech = test::find_mechanism("servers", "epoll_lt");
  ASSERT_NE(mech, nullptr);
  if (const auto why = too_few_fds(300); !why.empty()) GTEST_SKIP() << why;
  const int fds0 = test::open_fds();
  Record rec = test::run_workload(*mech, test::params_of(*mech, {{"concurrency", "300"}}));
  EXPECT_EQ(rec.status, Status::Ok) << rec.error;
  EXPECT_EQ(test::open_fds(), fds0);
}

TEST(Servers, TooManyClientsForTheFdLimitIsAUsageError) {
  const Mechanism* mech = test::find_mechanism("servers", "epoll_lt");
  ASSERT_NE(mech, nullptr);
  // One client more than the hard limit leaves room for, as read here.
  const auto lim = nofile_limit();
  if (!lim) GTEST_SKIP() << "RLIMIT_NOFILE is unlimited here: no concurrency is over it";
  const auto& spec = *std::find_if(mech->params.begin(), mech->params.end(),
                                   [](const ParamSpec& p) { return p.name == "concurrency"; });
  const uint64_t clients = *lim < kOwnFds ? 1 : *lim - kOwnFds + 1;
  if (clients > uint64_t(spec.max))
    GTEST_SKIP() << "RLIMIT_NOFILE (hard) is " << *lim << ": every concurrency up to " << spec.max
                 << " fits, none can be refused";
  try {
    test::run_workload(*mech, test::params_of(*mech, {{"concurrency", std::to_string(clients)}}));
    FAIL() << "concurrency " << clients << " ran under RLIMIT_NOFILE " << *lim << "; expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("RLIMIT_NOFILE"), std::string::npos) << e.what();
  }
}

// The models that run several reactors (ServerModel::multi_reactor).
const std::vector<std::string> kMultiReactor = {"epoll_reuseport", "uring"};

// Listening TCP sockets on 127.0.0.1:`port` (/proc/net/tcp, state 0A).
int listeners_on(int port) {
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);  // the header
  int n = 0;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, st;
    f >> sl >> local >> remote >> st;
    const auto colon = local.find(':');
    if (colon != std::string::npos && std::stoi(local.substr(colon + 1), nullptr, 16) == port && st == "0A")
      ++n;
  }
  return n;
}

// The CPU sets of the threads of process `pid` that are pinned to one CPU.
std::multiset<int> pinned_threads(pid_t pid) {
  std::multiset<int> out;
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/task").c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(std::atoi(e->d_name), sizeof set, &set) != 0 || CPU_COUNT(&set) != 1) continue;
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) out.insert(c);
  }
  closedir(d);
  return out;
}

class MultiReactor : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    mech_ = test::find_mechanism("servers", GetParam());
    if (!mech_) GTEST_SKIP() << GetParam() << " is not built here";
    if (allowed_cpus().size() < 2) GTEST_SKIP() << "placement=cross needs two CPUs";
  }
  const Mechanism* mech_ = nullptr;
};

// reactors=2 under placement=cross: two threads, pinned to the second and then the first CPU of
// --cpus (round-robin after the load generator's), each with its own listener on the one port —
// both listening before the port is reported.
TEST_P(MultiReactor, ReactorThreadsArePinnedEachWithAListenerOfItsOwn) {
  const std::vector<int> cpus = allowed_cpus();
  const Params p = test::params_of(*mech_, {{"backlog", "128"}, {"reactors", "2"}});
  RunOptions o;
  o.cpus = cpus;
  Record rec;
  Session s(*mech_, p, o, rec);
  const ServerLaunch launch = mech_->server(s);
  ASSERT_EQ(launch.reactor_cpus, (std::vector<int>{cpus[1], cpus[2 % cpus.size()]}));
  ServerProcess srv = ServerProcess::start(launch, -1);
  EXPECT_EQ(listeners_on(srv.port()), 2);
  // The reactor threads pin themselves once the port is out.
  const std::multiset<int> want = {cpus[1], cpus[2 % cpus.size()]};
  std::multiset<int> got;
  for (int i = 0; i < 200 && got != want; ++i, usleep(5000)) got = pinned_threads(srv.pid());
  EXPECT_EQ(got, want);
  // Each reactor speaks the protocol: enough connections that the kernel's hash reaches both.
  for (int c = 0; c < 16; ++c) {
    const int fd = connect_to(srv.port());
    ASSERT_EQ(send(fd, "hi\nexit\n", 8, MSG_NOSIGNAL), 8);
    EXPECT_EQ(read_n(fd, 5), "pong\n");
    char ch;
    EXPECT_EQ(recv(fd, &ch, 1, 0), 0);
    close(fd);
  }
  EXPECT_TRUE(srv.process().alive()) << srv.process().death();
}

// A wave against reactors=2: every client served, and each reactor a side of the record, pinned to
// a CPU of its own; reactors=1 keeps the one-reactor layout (the process pinned to the server CPU).
TEST_P(MultiReactor, TwoReactorsServeAWaveAndAreRecordedAsSides) {
  const std::vector<int> cpus = allowed_cpus();
  Record rec =
      test::run_workload(*mech_, test::params_of(*mech_, {{"concurrency", "500"}, {"reactors", "2"}}));
  ASSERT_EQ(rec.status, Status::Ok) << rec.error;
  EXPECT_EQ(rec.ops, 500u);
  EXPECT_TRUE(rec.integrity.clean()) << rec.integrity.text();
  EXPECT_EQ(rec.extra["processed"].get<uint64_t>(), 500u);
  std::vector<int> reactors;
  for (const Side& side : rec.placement.sides) {
    if (side.role == "server")
      EXPECT_TRUE(side.pinned.empty()) << "the process of several reactors is unpinned";
    if (side.role != "reactor") continue;
    EXPECT_EQ(side.index, int(reactors.size()));
    ASSERT_EQ(side.pinned.size(), 1u);
    reactors.push_back(side.pinned[0]);
  }
  EXPECT_EQ(reactors, (std::vector<int>{cpus[1], cpus[2 % cpus.size()]}));
  EXPECT_NE(reactors[0], reactors[1]);

  rec = test::run_workload(*mech_, test::params_of(*mech_, {{"concurrency", "100"}}));
  ASSERT_EQ(rec.status, Status::Ok) << rec.error;
  for (const Side& side : rec.placement.sides) {
    EXPECT_NE(side.role, "reactor");
    if (side.role == "server") EXPECT_EQ(side.pinned, std::vector<int>{cpus[1]});
  }
}

INSTANTIATE_TEST_SUITE_P(Servers, MultiReactor, ::testing::ValuesIn(kMultiReactor),
                         [](const auto& info) { return info.param; });

// A model of one reactor refuses several, naming the fix and the models that run them; the preset
// grid of a larger machine leaves those points out instead.
TEST(Servers, AModelOfOneReactorRefusesSeveral) {
  Overrides two;
  parse_override("reactors=2", two);
  try {
    plan(select_mechanisms({"servers/epoll_lt"}), Preset::Default, two, {0, 1});
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("use reactors=1"), std::string::npos) << what;
    EXPECT_NE(what.find("epoll_reuseport"), std::string::npos) << what;
  }
  EXPECT_EQ(plan(select_mechanisms({"servers/epoll_reuseport"}), Preset::Default, two, {0, 1}).size(), 1u);
  // A placement class relates two CPUs: several reactors have no such pair.
  Overrides by_class = two;
  parse_override("placement=llc", by_class);
  try {
    plan(select_mechanisms({"servers/epoll_reuseport"}), Preset::Default, by_class, {0, 1});
    FAIL() << "expected a UsageError";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("placement=cross, same or unpinned"), std::string::npos) << e.what();
  }
  // Eight CPUs: the quick grid scales reactors to 1, 2, 4, 8 — all for epoll_reuseport, 1 for epoll_lt.
  Overrides one_wave;
  parse_override("concurrency=100", one_wave);
  const std::vector<int> eight = {0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<int64_t> lt, rp;
  for (auto& b : plan(select_mechanisms({"servers/epoll_lt"}), Preset::Quick, one_wave, eight))
    lt.push_back(b.params.i64("reactors"));
  for (auto& b : plan(select_mechanisms({"servers/epoll_reuseport"}), Preset::Quick, one_wave, eight))
    rp.push_back(b.params.i64("reactors"));
  EXPECT_EQ(lt, (std::vector<int64_t>{1}));
  EXPECT_EQ(rp, (std::vector<int64_t>{1, 2, 4, 8}));
}

}  // namespace
}  // namespace ipclab::servers
