// servers suite: protocol conformance of every model, a 1,000-client wave per model, a server
// killed mid-run, and no descriptor leaked by a run.
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "../workload_support.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/placement.hpp"
#include "core/server.hpp"
#include "core/session.hpp"
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
          [](int lfd, const Params&, const std::vector<int>&, int) {
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

}  // namespace
}  // namespace ipclab::servers
