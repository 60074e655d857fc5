// echo suite: every server echoes verified bytes under the harness's client, an external
// executable joins through the peer contract, a server that dies fails the record quickly, a run
// leaves no descriptor behind, and the open-loop client (pattern=rate) keeps its schedule with
// several requests in flight per connection and marks a rate beyond its reach saturated; with
// reactors=2 the epoll and uring servers run two pinned reactors against two client threads.
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "../workload_support.hpp"
#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/machine/placement.hpp"
#include "core/measure/session.hpp"
#include "core/peers/server.hpp"
#include "core/plan/runner.hpp"
#include "mechanisms/echo/client.hpp"
#include "mechanisms/echo/common.hpp"

#if __has_include(<ipcrt/ipcrt.hpp>)
#include <ipcrt/features.hpp>
#endif

namespace ipclab::echo {
namespace {

Record run(const Mechanism& m, const Params& p, double duration_s = 0.2) {
  return test::run_workload(m, p, duration_s, 0.05);
}

// echo/epoll's client and workload against a server of the test's own.
Record run_against(const std::function<void(int listen_fd, const Params& p)>& serve, const Params& p,
                   double duration_s = 0.2) {
  const Mechanism* epoll = test::find_mechanism("echo", "epoll");
  EXPECT_NE(epoll, nullptr);
  Mechanism m = *epoll;
  m.server = [serve](const Session& s) {
    return ServerLaunch{.serve = [serve, p = s.params()](int lfd) { serve(lfd, p); }};
  };
  return run(m, p, duration_s);
}

struct EchoCase {
  std::string mech, label;
  std::map<std::string, std::string> over;
};

class EveryServer : public ::testing::TestWithParam<EchoCase> {};

TEST_P(EveryServer, EchoesVerifiedBytes) {
  const EchoCase& c = GetParam();
  const Mechanism* m = test::find_mechanism("echo", c.mech);
  if (!m) GTEST_SKIP() << "echo/" << c.mech << " is not built here";
  std::map<std::string, std::string> over{{"connections", "4"}, {"size", "1024"}};
  for (const auto& [k, v] : c.over) over[k] = v;
  const int fds0 = test::open_fds();
  Record rec;
  try {
    rec = run(*m, test::params_of(*m, over));
  } catch (const Skip& e) {
    GTEST_SKIP() << e.what();
  }
  EXPECT_EQ(rec.status, Status::Ok) << rec.error;
  EXPECT_GT(rec.ops, 100u);
  EXPECT_EQ(rec.integrity.corrupt, 0u);
  ASSERT_TRUE(rec.latency.has_value());
  EXPECT_EQ(rec.latency->kind, "rtt");
  EXPECT_GT(rec.extra["server_cpu_per_echo_ns"].get<double>(), 0.0);
  EXPECT_GT(rec.extra["client_cpu_per_echo_ns"].get<double>(), 0.0);
  // The Session's window: --duration (0.2 s), the client running through it.
  EXPECT_GE(rec.wall_s, 0.2);
  EXPECT_NEAR(rec.rates["echoes_per_s"].get<double>(), double(rec.ops) / rec.wall_s,
              1e-6 * double(rec.ops) / rec.wall_s);
  EXPECT_EQ(test::open_fds(), fds0);
}

INSTANTIATE_TEST_SUITE_P(
    Echo, EveryServer,
    ::testing::Values(
        EchoCase{"epoll", "", {}}, EchoCase{"uring", "raw", {{"loop", "raw"}}},
        EchoCase{"uring", "raw_fixed", {{"loop", "raw"}, {"fixed_files", "1"}}},
        EchoCase{
            "uring", "raw_oneshot_pollfirst", {{"loop", "raw"}, {"multishot", "0"}, {"poll_first", "1"}}},
        EchoCase{"uring", "raw_batched", {{"loop", "raw"}, {"wait_nr", "3"}, {"min_wait_us", "50"}}},
        // Messages larger than a provided buffer arrive in several chunks, sent back in order.
        EchoCase{"uring", "raw_64k", {{"loop", "raw"}, {"size", "65536"}, {"fixed_files", "1"}}},
        EchoCase{"uring", "ipcrt", {{"loop", "ipcrt"}}},
        EchoCase{"uring", "ipcrt_fixed", {{"loop", "ipcrt"}, {"fixed_files", "1"}}},
        EchoCase{"asio", "epoll", {{"backend", "epoll"}}},
        EchoCase{"asio", "io_uring", {{"backend", "io_uring"}}}, EchoCase{"go", "", {}},
        // The cases above run the default client (uring where built); these the epoll one.
        EchoCase{"epoll", "client_epoll", {{"client", "epoll"}}},
        EchoCase{"uring", "raw_client_epoll", {{"loop", "raw"}, {"client", "epoll"}}},
        EchoCase{"uring", "raw_64k_client_epoll", {{"loop", "raw"}, {"size", "65536"}, {"client", "epoll"}}},
        EchoCase{"asio", "epoll_client_epoll", {{"backend", "epoll"}, {"client", "epoll"}}},
        EchoCase{"go", "client_epoll", {{"client", "epoll"}}}),
    [](const auto& info) {
      return info.param.mech + (info.param.label.empty() ? "" : "_" + info.param.label);
    });

#if __has_include(<ipcrt/ipcrt.hpp>)
// The loop=raw server with `p`, started as run_echo starts it, for clients of the test's own.
ServerProcess start_raw_server(const Params& p) {
  return ServerProcess::start({.serve = [p](int lfd) { serve_uring_raw(lfd, p); }, .backlog = 128}, -1);
}

int connect_to(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(uint16_t(port));
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

int server_fds(pid_t pid) {
  int n = 0;
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (!d) return -1;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

class RawUring : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    m_ = test::find_mechanism("echo", "uring");
    if (!m_) GTEST_SKIP() << "echo/uring is not built here";
    if (!(ipcrt::features::get().recv_multishot && ipcrt::features::get().buf_ring))
      GTEST_SKIP() << "the kernel lacks multishot recv or provided-buffer rings";
    if (GetParam() == "1" && !ipcrt::features::get().registered_files)
      GTEST_SKIP() << "the kernel refuses a sparse registered-file table";
  }
  Params params(const std::string& conns) const {
    return test::params_of(*m_, {{"loop", "raw"}, {"connections", conns}, {"fixed_files", GetParam()}});
  }
  const Mechanism* m_ = nullptr;
};

// Far more connections over the server's life than its connection table holds (2 x connections,
// at least 64): each close must free the slot, the buffers and the descriptor or file slot.
TEST_P(RawUring, ConnectionsCloseAndSlotsAreReused) {
  ServerProcess srv = start_raw_server(params("1"));
  // The baseline is taken once the first connection has come and gone and the count has settled:
  // what the server opens once, after it reported its port, is not a per-connection leak.
  auto settled_fds = [&] {
    int last = server_fds(srv.pid()), now = last;
    for (int t = 0, same = 0; t < 200 && same < 5; ++t, last = now) {
      usleep(10000);
      now = server_fds(srv.pid());
      same = now == last ? same + 1 : 0;
    }
    return now;
  };
  int fds0 = -1;
  char msg[100], back[100];
  for (int i = 0; i < 300; ++i) {
    if (i == 1) fds0 = settled_fds();
    int fd = connect_to(srv.port());
    ASSERT_GE(fd, 0) << "connection " << i << ": " << strerror(errno);
    for (size_t k = 0; k < sizeof msg; ++k) msg[k] = char(i * 7 + int(k));
    ASSERT_EQ(::send(fd, msg, sizeof msg, MSG_NOSIGNAL), ssize_t(sizeof msg));
    size_t got = 0;
    while (got < sizeof back) {
      ssize_t r = ::recv(fd, back + got, sizeof back - got, 0);
      ASSERT_GT(r, 0) << "connection " << i << " ended early";
      got += size_t(r);
    }
    ASSERT_EQ(std::memcmp(msg, back, sizeof msg), 0) << "connection " << i;
    ::close(fd);
  }
  // The last closes are asynchronous: give the server a moment to finish them.
  int fds = -1;
  for (int t = 0; t < 100 && (fds = server_fds(srv.pid())) != fds0; ++t) usleep(10000);
  EXPECT_EQ(fds, fds0);
  EXPECT_TRUE(srv.process().alive()) << srv.process().death();
  srv.stop();
}

// A client that writes 8 MiB and reads only when it cannot write: the server's sends back up,
// its buffer ring (64 x 4 KiB here) runs dry, recv ends with ENOBUFS and must be re-armed once
// sends complete; every byte must come back once, in order.
TEST_P(RawUring, BackpressureRunsTheBufferRingDryAndRecovers) {
  ServerProcess srv = start_raw_server(params("1"));
  int fd = connect_to(srv.port());
  ASSERT_GE(fd, 0);
  int fl = 1;
  ASSERT_EQ(::ioctl(fd, FIONBIO, &fl), 0);
  constexpr size_t kTotal = 8 << 20;
  auto byte_at = [](size_t i) { return static_cast<unsigned char>((i * 131) ^ (i >> 12)); };
  std::vector<unsigned char> out(65536), in(65536);
  size_t sent = 0, got = 0;
  const uint64_t deadline = now_ns() + 20'000'000'000ull;
  while (got < kTotal && now_ns() < deadline) {
    bool blocked = true;
    if (sent < kTotal) {
      const size_t n = std::min(out.size(), kTotal - sent);
      for (size_t k = 0; k < n; ++k) out[k] = byte_at(sent + k);
      ssize_t w = ::send(fd, out.data(), n, MSG_NOSIGNAL);
      if (w > 0)
        sent += size_t(w), blocked = false;
      else
        ASSERT_EQ(errno, EAGAIN) << strerror(errno);
    }
    if (!blocked) continue;
    pollfd pf{.fd = fd, .events = POLLIN, .revents = 0};
    ::poll(&pf, 1, 100);
    ssize_t r = ::recv(fd, in.data(), in.size(), 0);
    if (r < 0) {
      ASSERT_EQ(errno, EAGAIN) << strerror(errno);
      continue;
    }
    ASSERT_GT(r, 0) << "the server closed the connection after " << got << " bytes";
    for (ssize_t k = 0; k < r; ++k)
      ASSERT_EQ(in[size_t(k)], byte_at(got + size_t(k))) << "byte " << got + size_t(k);
    got += size_t(r);
  }
  EXPECT_EQ(got, kTotal);
  ::close(fd);
  EXPECT_TRUE(srv.process().alive()) << srv.process().death();
  srv.stop();
}

INSTANTIATE_TEST_SUITE_P(Echo, RawUring, ::testing::Values("0", "1"),
                         [](const auto& info) { return std::string("fixed_files_") + info.param; });
#endif

TEST(Echo, ExternalExecutableFollowsTheContract) {
  const Mechanism* m = test::find_mechanism("echo", "peer");
  ASSERT_NE(m, nullptr);
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "python3 missing";
  Record rec = run(*m, test::params_of(*m, {{"connections", "2"},
                                            {"size", "3000"},
                                            {"server", IPCLAB_TEST_DIR "/echo/echo_server.py"}}));
  EXPECT_EQ(rec.status, Status::Ok) << rec.error;
  EXPECT_GT(rec.ops, 10u);
}

TEST(Echo, MissingPeerExecutableIsSkipped) {
  const Mechanism* m = test::find_mechanism("echo", "peer");
  ASSERT_NE(m, nullptr);
  EXPECT_THROW(run(*m, test::params_of(*m, {{"server", "/nonexistent/echo-server"}})), Skip);
}

// The checks every client loop must make, run against each loop: the closed ones (client=epoll,
// client=uring) and the open-loop one (pattern=rate).
class EveryClient : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "uring" && !have_uring_client()) GTEST_SKIP() << "no io_uring client in this build";
  }
  // The parameters that select the loop, with `over`.
  std::map<std::string, std::string> with(std::map<std::string, std::string> over) const {
    if (GetParam() == "rate") {
      over["pattern"] = "rate";
      over["rate"] = "2k";
    } else {
      over["client"] = GetParam();
    }
    return over;
  }
};

TEST_P(EveryClient, ServerDyingMidRunFailsQuickly) {
  const Mechanism* m = test::find_mechanism("echo", "epoll");
  ASSERT_NE(m, nullptr);
  auto dies = [](int, const Params&) {
    usleep(100000);
    raise(SIGKILL);
  };
  const int fds0 = test::open_fds();
  const uint64_t t0 = now_ns();
  Record rec = run_against(dies, test::params_of(*m, with({{"connections", "4"}})));
  EXPECT_LT(double(now_ns() - t0) * 1e-9, 3.0);
  EXPECT_EQ(rec.status, Status::Failed);
  // The death, not the connection it broke, is the reason.
  EXPECT_NE(rec.error.find("server 0 died of signal 9"), std::string::npos) << rec.error;
  EXPECT_EQ(test::open_fds(), fds0);
}

// A server that echoes faithfully 20 times and then flips one bit: the record fails, naming the
// message, with one corrupt message counted.
TEST_P(EveryClient, AlteredEchoFailsTheRecord) {
  const Mechanism* m = test::find_mechanism("echo", "epoll");
  ASSERT_NE(m, nullptr);
  auto flips = [](int lfd, const Params& p) {
    const auto size = size_t(p.i64("size"));
    pollfd pfd{.fd = lfd, .events = POLLIN, .revents = 0};
    ::poll(&pfd, 1, 5000);  // the listening socket is non-blocking; the accepted one is not
    const int fd = ::accept(lfd, nullptr, nullptr);
    std::vector<char> buf(size);
    for (int n = 0;; ++n) {
      for (size_t got = 0; got < size;) {
        const ssize_t r = ::recv(fd, buf.data() + got, size - got, 0);
        if (r <= 0) _exit(0);
        got += size_t(r);
      }
      if (n == 20) buf[size / 2] ^= 1;
      if (::send(fd, buf.data(), size, MSG_NOSIGNAL) != ssize_t(size)) _exit(0);
    }
  };
  const int fds0 = test::open_fds();
  Record rec = run_against(flips, test::params_of(*m, with({{"connections", "1"}, {"size", "256"}})));
  EXPECT_EQ(rec.status, Status::Failed);
  EXPECT_EQ(rec.integrity.corrupt, 1u);
  EXPECT_NE(rec.error.find("message 20: echoed bytes differ"), std::string::npos) << rec.error;
  EXPECT_EQ(test::open_fds(), fds0);
}

INSTANTIATE_TEST_SUITE_P(Echo, EveryClient, ::testing::Values("epoll", "uring", "rate"),
                         [](const auto& info) { return info.param; });

// pattern=rate against echo/epoll's own server: a record of echo/epoll's parameters with `over`.
Params rate_params(std::map<std::string, std::string> over) {
  const Mechanism* m = test::find_mechanism("echo", "epoll");
  EXPECT_NE(m, nullptr);
  over["pattern"] = "rate";
  return test::params_of(*m, over);
}

// A server that reads what has arrived, holds it 2 ms and echoes it all: one request at a time
// would make at most 500 round trips a second on one connection; an open-loop client at 2000/s
// keeps about four in flight and keeps its rate, each echo 2 ms or more after its intended start.
TEST(EchoRate, PipelinesRequestsOnAConnectionAtTheRequestedRate) {
  auto holds = [](int lfd, const Params&) {
    pollfd pfd{.fd = lfd, .events = POLLIN, .revents = 0};
    ::poll(&pfd, 1, 5000);
    const int fd = ::accept(lfd, nullptr, nullptr);
    std::vector<char> buf(1 << 16);
    for (;;) {
      const ssize_t r = ::recv(fd, buf.data(), buf.size(), 0);
      if (r <= 0) _exit(0);
      usleep(2000);
      if (::send(fd, buf.data(), size_t(r), MSG_NOSIGNAL) != r) _exit(0);
    }
  };
  const int fds0 = test::open_fds();
  // 0.6 s: a window's 1% short of due (the saturation rule) is then 12 requests, 6 ms behind — what
  // a stall of a loaded machine under ASan can cost (0.2 s, 2 ms of it, failed at -j2 under ASan).
  Record rec = run_against(holds, rate_params({{"connections", "1"}, {"size", "64"}, {"rate", "2k"}}), 0.6);
  ASSERT_EQ(rec.status, Status::Ok) << rec.error;
  const auto& r = rec.extra["rate"];
  EXPECT_FALSE(r["saturated"].get<bool>()) << r["saturation"];
  EXPECT_EQ(r["requested_per_s"].get<double>(), 2000.0);
  // Pipelined: one request at a time against a server that holds each for 2 ms could complete at
  // most 500/s. The bound is wide of 2000/s for a loaded machine (1,979/s was seen at load 4 under
  // ASan), and far from 500.
  EXPECT_NEAR(r["achieved_per_s"].get<double>(), 2000.0, 200.0);
  // 0.6 s at 2000/s, less the window's last few still in flight at its end.
  EXPECT_NEAR(double(rec.ops), 1200.0, 120.0);
  EXPECT_EQ(rec.integrity.corrupt, 0u);
  ASSERT_TRUE(rec.latency.has_value());
  EXPECT_EQ(rec.latency->kind, "rtt");
  EXPECT_GE(rec.latency->p50, 2'000'000u);
  ASSERT_TRUE(r["raw_ns"].is_object());
  EXPECT_GE(r["raw_ns"]["p50"].get<double>(), 2e6);
  // One scheduling error per request started in the window.
  EXPECT_NEAR(r["sched_error_ns"]["count"].get<double>(), r["achieved_per_s"].get<double>() * rec.wall_s,
              0.5);
  EXPECT_EQ(test::open_fds(), fds0);
}

// echo/epoll at a modest rate over several connections: clean, on schedule, a latency that is
// never less than the raw one (a request starts at or after its intended time), and the server's
// CPU per echo in the record on its own.
TEST(EchoRate, ModestRateRunsCleanWithServerCpuPerEcho) {
  const Mechanism* m = test::find_mechanism("echo", "epoll");
  ASSERT_NE(m, nullptr);
  const int fds0 = test::open_fds();
  // 0.5 s at 20000/s: each 1/16 of the window (the backlog rule's slices) holds 625 requests, and a
  // few milliseconds lost to other work on a shared machine are well under 1% of the window, so
  // that neither reads as saturation.
  Record rec =
      test::run_workload(*m, rate_params({{"connections", "4"}, {"size", "64"}, {"rate", "20k"}}), 0.5, 0.05);
  ASSERT_EQ(rec.status, Status::Ok) << rec.error;
  const auto& r = rec.extra["rate"];
  EXPECT_FALSE(r["saturated"].get<bool>()) << r["saturation"];
  EXPECT_EQ(r["arrivals"], "fixed");
  EXPECT_NEAR(r["achieved_per_s"].get<double>(), 20000.0, 200.0);
  ASSERT_TRUE(rec.latency.has_value());
  EXPECT_EQ(rec.latency->kind, "rtt");
  EXPECT_GT(rec.latency->count, 9000u);
  ASSERT_TRUE(r["raw_ns"].is_object());
  EXPECT_EQ(r["raw_ns"]["count"].get<uint64_t>(), rec.latency->count);
  EXPECT_GE(double(rec.latency->p50), r["raw_ns"]["p50"].get<double>());
  EXPECT_EQ(rec.extra["client"], "epoll");
  const auto& by_role = rec.extra["cpu_by_role"];
  ASSERT_TRUE(by_role.contains("server")) << by_role.dump();
  EXPECT_GT(by_role["server"]["per_op_ns"].get<double>(), 0.0);
  EXPECT_GT(by_role["client"]["per_op_ns"].get<double>(), 0.0);
  EXPECT_EQ(test::open_fds(), fds0);
}

// A rate far beyond what one client thread can start (a send per request) is saturated: both
// rates recorded, no latency figure.
TEST(EchoRate, RateBeyondReachIsSaturatedWithoutLatency) {
  const Mechanism* m = test::find_mechanism("echo", "epoll");
  ASSERT_NE(m, nullptr);
  const int fds0 = test::open_fds();
  Record rec = run(*m, rate_params({{"connections", "4"}, {"size", "64"}, {"rate", "20M"}}));
  ASSERT_EQ(rec.status, Status::Ok) << rec.error;
  const auto& r = rec.extra["rate"];
  EXPECT_TRUE(r["saturated"].get<bool>());
  EXPECT_NE(r["saturation"].get<std::string>().find("of 20000000/s:"), std::string::npos) << r["saturation"];
  EXPECT_LT(r["achieved_per_s"].get<double>(), 0.99 * 20e6);
  EXPECT_GT(r["achieved_per_s"].get<double>(), 0.0);
  EXPECT_FALSE(rec.latency.has_value());
  EXPECT_TRUE(r["raw_ns"].is_null());
  EXPECT_GT(rec.ops, 0u);
  EXPECT_EQ(test::open_fds(), fds0);
}

// reactors=2: two reactor threads, each pinned with a listener of its own, against two client
// threads with four connections each; every echo verified, and each reactor and client thread a
// side of the record on the CPU the layout gives it (client j on the (j+1)-th CPU, reactor i on
// the (i+3)-th, round-robin: on two CPUs each reactor on a CPU of its own, beside a client).
class TwoReactors : public ::testing::TestWithParam<EchoCase> {};

TEST_P(TwoReactors, EchoVerifiedBytesFromPinnedReactors) {
  const EchoCase& c = GetParam();
  const Mechanism* m = test::find_mechanism("echo", c.mech);
  if (!m) GTEST_SKIP() << "echo/" << c.mech << " is not built here";
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "two reactors on distinct CPUs need two CPUs";
  std::map<std::string, std::string> over{{"connections", "8"}, {"size", "1024"}, {"reactors", "2"}};
  for (const auto& [k, v] : c.over) over[k] = v;
  const Params p = test::params_of(*m, over);
  ASSERT_EQ(m->check(p), "");
  const int fds0 = test::open_fds();
  Record rec;
  try {
    rec = run(*m, p);
  } catch (const Skip& e) {
    GTEST_SKIP() << e.what();
  }
  ASSERT_EQ(rec.status, Status::Ok) << rec.error;
  EXPECT_GT(rec.ops, 100u);
  EXPECT_TRUE(rec.integrity.clean()) << rec.integrity.text();
  EXPECT_EQ(rec.integrity.received, rec.integrity.sent);
  if (over.count("pattern") == 0) EXPECT_EQ(rec.integrity.received, rec.ops);
  std::vector<int> reactors, clients;
  for (const Side& side : rec.placement.sides) {
    if (side.role == "server")
      EXPECT_TRUE(side.pinned.empty()) << "the process of several reactors is unpinned";
    if (side.role != "reactor" && side.role != "client") continue;
    ASSERT_EQ(side.pinned.size(), 1u) << side.role << side.index;
    (side.role == "reactor" ? reactors : clients).push_back(side.pinned[0]);
  }
  const size_t n = cpus.size();
  EXPECT_EQ(clients, (std::vector<int>{cpus[0], cpus[1 % n]}));
  EXPECT_EQ(reactors, (std::vector<int>{cpus[2 % n], cpus[3 % n]}));
  ASSERT_EQ(reactors.size(), 2u);
  EXPECT_NE(reactors[0], reactors[1]);
  EXPECT_EQ(test::open_fds(), fds0);
}

INSTANTIATE_TEST_SUITE_P(
    Echo, TwoReactors,
    ::testing::Values(EchoCase{"epoll", "", {}}, EchoCase{"epoll", "client_epoll", {{"client", "epoll"}}},
                      EchoCase{"uring", "raw", {{"loop", "raw"}}},
                      EchoCase{"uring", "raw_fixed", {{"loop", "raw"}, {"fixed_files", "1"}}},
                      EchoCase{"uring", "ipcrt", {{"loop", "ipcrt"}}},
                      // Open loop: each client thread half the rate, on a schedule of its own.
                      EchoCase{"epoll", "rate", {{"pattern", "rate"}, {"rate", "2k"}}}),
    [](const auto& info) {
      return info.param.mech + (info.param.label.empty() ? "" : "_" + info.param.label);
    });

// The servers that run one reactor refuse several, naming those that run them; reactors=k needs a
// connection for each of its k client threads.
TEST(Echo, ReactorsAreRefusedWhereTheyCannotRun) {
  auto refusal = [](const std::string& selection, std::vector<std::string> values) -> std::string {
    Overrides o;
    for (auto& v : values) parse_override(v, o);
    try {
      plan(select_mechanisms({selection}), Preset::Default, o, {0, 1});
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  };
  for (const char* single : {"echo/asio", "echo/go", "echo/peer"}) {
    const std::string why = refusal(single, {"reactors=2"});
    EXPECT_NE(why.find("use reactors=1"), std::string::npos) << single << ": " << why;
    EXPECT_NE(why.find("echo/epoll"), std::string::npos) << single << ": " << why;
  }
  EXPECT_NE(refusal("echo/epoll", {"reactors=2", "connections=1"}).find("connections >= 2"),
            std::string::npos);
  EXPECT_EQ(refusal("echo/epoll", {"reactors=2", "connections=2"}), "");
}

}  // namespace
}  // namespace ipclab::echo
