// Protocol parser, server-process plumbing and the suite's workload (see common.hpp).
#include "mechanisms/servers/common.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstring>
#include <fstream>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/placement.hpp"
#include "core/session.hpp"
#include "core/std_params.hpp"
#include "core/watchdog.hpp"

namespace ipclab::servers {

const std::vector<std::string> kMessages = {"hi",      "hello",   "guten tag",       "ping",
                                            "wake up", "how r u", "have a nice day", "bye-bye",
                                            "see you", "exit"};

ProtocolConn::State ProtocolConn::feed(const char* data, size_t n, std::string& out) {
  for (size_t i = 0; i < n; ++i) {
    char c = data[i];
    if (c != '\n') {
      if (len_ == sizeof line_) return State::Bad;
      line_[len_++] = c;
      continue;
    }
    std::string_view line(line_, len_);
    len_ = 0;
    if (line == "exit") return State::Exit;
    bool known = false;
    for (size_t k = 0; k + 1 < kMessages.size(); ++k) known |= line == kMessages[k];
    if (!known) return State::Bad;
    out.append(kPong, kPongLen);
  }
  return State::Open;
}

namespace {
bool send_all(int fd, const std::string& out) {
  size_t off = 0;
  while (off < out.size()) {
    ssize_t w = ::send(fd, out.data() + off, out.size() - off, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;  // a few bytes never fill a socket buffer: the peer is gone
    off += size_t(w);
  }
  return true;
}
}  // namespace

void serve_blocking(int fd) {
  ProtocolConn pc;
  std::string out;
  char buf[512];
  for (;;) {
    ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    out.clear();
    auto st = pc.feed(buf, size_t(r), out);
    if (!out.empty() && !send_all(fd, out)) break;
    if (st != ProtocolConn::State::Open) break;
  }
  ::close(fd);
}

bool serve_ready(int fd, ProtocolConn& pc, bool drain) {
  std::string out;
  char buf[512];
  for (;;) {
    ssize_t r = ::recv(fd, buf, sizeof buf, 0);
    if (r < 0) return errno == EAGAIN || errno == EINTR;
    if (r == 0) return false;
    out.clear();
    auto st = pc.feed(buf, size_t(r), out);
    if (!out.empty() && !send_all(fd, out)) return false;
    if (st != ProtocolConn::State::Open) return false;
    if (!drain) return true;
  }
}

void epoll_reactor(int lfd, bool edge) {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  const uint32_t et = edge ? uint32_t(EPOLLET) : 0u;
  epoll_event lev{.events = EPOLLIN | et, .data = {.ptr = nullptr}};
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);
  struct Conn {
    int fd;
    ProtocolConn pc;
  };
  std::vector<epoll_event> evs(512);
  for (;;) {
    int k = epoll_wait(ep, evs.data(), int(evs.size()), -1);
    for (int i = 0; i < k; ++i) {
      auto* c = static_cast<Conn*>(evs[size_t(i)].data.ptr);
      if (!c) {  // the listener: accept all that wait (edge-triggered needs it, level benefits)
        for (;;) {
          int fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
          if (fd < 0) break;
          epoll_event ev{.events = EPOLLIN | EPOLLRDHUP | et, .data = {.ptr = new Conn{fd, {}}}};
          epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
        }
        continue;
      }
      if (!serve_ready(c->fd, c->pc, edge)) {
        ::close(c->fd);
        delete c;
      }
    }
  }
}

void ensure_nofile(uint64_t need, const std::string& what) {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  if (rl.rlim_cur != RLIM_INFINITY && need > rl.rlim_cur)
    throw UsageError(fmt::format("{} needs {} open files but RLIMIT_NOFILE (hard) is {}: lower it, "
                                 "or raise the limit (ulimit -Hn, limits.conf)", what, need, rl.rlim_cur));
}

int somaxconn() {
  std::ifstream f("/proc/sys/net/core/somaxconn");
  int v = 4096;
  f >> v;
  return v;
}

int listen_tcp(int port, int backlog, bool nonblocking, bool reuseport) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "socket");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (reuseport) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // loopback only (SPEC §1.6)
  a.sin_port = htons(uint16_t(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, backlog) != 0) {
    int e = errno;
    ::close(fd);
    throw std::system_error(e, std::generic_category(), "bind/listen 127.0.0.1");
  }
  return fd;
}

int local_port(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

// ---- ServerProcess ---------------------------------------------------------------------------

ServerProcess ServerProcess::fork_fn(int cpu, const std::function<void(int)>& serve) {
  return ServerProcess(Process::fork(Spawn{.cpu = cpu, .ready_pipe = true}, [&](int ready) -> int {
    signal(SIGPIPE, SIG_IGN);
    try {
      serve(ready);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "server: %s\n", e.what());
      return 1;
    }
    return 0;
  }));
}

ServerProcess ServerProcess::exec(int cpu, const std::vector<std::string>& argv) {
  if (argv.empty() || access(argv[0].c_str(), X_OK) != 0)
    throw Skip(fmt::format("server executable {} is not built", argv.empty() ? "" : argv[0]));
  return ServerProcess(Process::exec(Spawn{.cpu = cpu, .ready_pipe = true}, argv));
}

ServerProcess::ServerProcess(Process p) : proc_(std::move(p)) {
  port_ = std::atoi(proc_.await_ready(10).c_str());
  if (port_ > 0) return;
  proc_.wait(0.2);  // a closed pipe: the child is ending; let it be reaped
  const std::string why = proc_.death().empty() ? "did not report its port within 10 s" : death();
  proc_.stop();
  throw std::runtime_error("server process: " + why);
}

std::string ServerProcess::death() const {
  const std::string how = proc_.death();
  return how.empty() ? how : "server " + how;
}

CpuUsage ServerProcess::stop() {
  proc_.stop();  // killed by us: not a death
  return proc_.usage();
}

// ---- the suite's workload --------------------------------------------------------------------

namespace {

IPCLAB_REGISTER(Suite{
    .name = "servers",
    .help = "socket server models (blocking, threads, select, poll, epoll, io_uring, Asio) under up "
            "to 10,000 concurrent clients of the reference protocol (reference 001)",
});

std::vector<ParamSpec> suite_params(const ServerModel& m) {
  std::vector<ParamSpec> ps = {
      {.name = "concurrency", .type = ParamType::Int, .def = "100",
       .help = "clients started at once, one session each (the reference's concurrency)",
       .quick = {"100", "1000"}, .full = {"100", "2000", "10000"}, .min = 1, .max = 100000},
      {.name = "backlog", .type = ParamType::Int, .def = "4096",
       .help = "listen backlog (the kernel caps it to net.core.somaxconn)", .min = 1, .max = 1 << 20},
  };
  for (auto& p : m.extra_params) ps.push_back(p);
  ps.push_back({.name = "connect_timeout_ms", .type = ParamType::Int, .def = "3000",
                .help = "a connect not completed by then counts as rejected", .min = 1,
                .max = 3'600'000});
  ps.push_back({.name = "session_timeout_ms", .type = ParamType::Int, .def = "10000",
                .help = "a started session not completed by then counts as lost", .min = 1,
                .max = 3'600'000});
  ps.push_back(std_params::placement({"cross", "same", "unpinned"}, {"cross"}));
  return ps;
}

void run_model(const ServerModel& m, Session& s) {
  const Params& p = s.params();
  const int clients = int(p.i64("concurrency"));
  if (m.max_concurrency && size_t(clients) > m.max_concurrency) throw Skip(m.max_why);
  ensure_nofile(uint64_t(clients) + 64, fmt::format("concurrency {}", clients));
  const int cap = somaxconn();
  const int backlog = int(std::min<int64_t>(p.i64("backlog"), cap));
  auto& rec = s.record();
  rec.extra["backlog"] = backlog;
  if (backlog < p.i64("backlog"))
    rec.extra["backlog_note"] = fmt::format("capped to net.core.somaxconn = {}", cap);

  const int client_cpu = s.cpu_for(0), server_cpu = s.cpu_for(1);
  std::vector<int> reactor_cpus = m.reuseport ? s.options().cpus : std::vector<int>{};
  if (m.reuseport && s.placement() == "unpinned") reactor_cpus.assign(s.options().cpus.size(), -1);
  ServerProcess server = start_model(m, p, server_cpu, reactor_cpus, backlog);

  LoadResult res;
  double server_cpu_s = 0;
  {
    ScopedPin pin(client_cpu);
    // The stall watchdog: the load generator and the server both show progress as the
    // connects, replies and session ends the generator sees; a stopped server is named.
    Watchdog wd(s.options().duration_s);
    auto progress = [&res] { return res.progress; };
    wd.watch("client", 0, -1, gettid(), progress);
    wd.watch("server", 0, server.pid(), -1, progress);
    LoadConfig cfg{.port = server.port(), .clients = clients,
                   .connect_timeout_s = double(p.i64("connect_timeout_ms")) * 1e-3,
                   .session_timeout_s = double(p.i64("session_timeout_ms")) * 1e-3,
                   .abort_check = [&]() -> std::string { return server.alive() ? wd.check() : server.death(); }};
    // A wave ends when each client connected (or timed out) and finished its session (or timed
    // out): the deadline is that, after the session's own timeout.
    s.measure([&] {
      res = LoadResult{};
      double c0 = server.cpu_seconds();
      run_load(cfg, res);
      server_cpu_s = server.cpu_seconds() - c0;
    }, s.options().timeout_s() + cfg.connect_timeout_s + cfg.session_timeout_s);
  }
  // The record's cpu covers every process of the benchmark (docs/json-schema.md), as in echo:
  // measure() took the harness's (the load generator's); add the server's. schedstat gives one
  // figure, so it counts as sys.
  const double client_cpu_s = rec.cpu.user_s + rec.cpu.sys_s;
  rec.cpu.sys_s += server_cpu_s;
  const bool died = (res.lost || res.rejected || res.corrupt) ? server.dies_within(0.2) : !server.alive();
  CpuUsage whole = server.stop();

  rec.ops = res.processed;
  rec.integrity.sent = uint64_t(clients);
  rec.integrity.received = res.processed;
  rec.integrity.corrupt = res.corrupt;
  if (m.event_driven) rec.integrity.lost = res.lost;
  if (res.session.count()) rec.latency = Latency::from("session", res.session);
  rec.rates["sessions_per_s"] = res.wall_s > 0 ? double(res.processed) / res.wall_s : 0.0;
  auto& x = rec.extra;
  x["concurrency"] = clients;
  x["processed"] = res.processed;
  x["rejected"] = res.rejected;
  x["lost"] = res.lost;
  x["rejected_by"] = {{"refused", res.rejected_refused}, {"reset", res.rejected_reset},
                      {"timeout", res.rejected_timeout}, {"other", res.rejected_other}};
  x["lost_by"] = {{"timeout", res.lost_timeout}, {"closed", res.lost_closed}};
  if (res.connect.count()) {
    Latency c = Latency::from("connect", res.connect);
    x["connect_ns"] = {{"p50", c.p50}, {"p90", c.p90}, {"p99", c.p99}, {"max", c.max}};
  }
  x["server_cpu_s"] = server_cpu_s;
  x["server_cpu_per_session_ns"] = res.processed ? server_cpu_s * 1e9 / double(res.processed) : 0.0;
  x["client_cpu_per_session_ns"] = res.processed ? client_cpu_s * 1e9 / double(res.processed) : 0.0;
  x["server_cpu_whole_life_s"] = whole.user_s + whole.sys_s;
  x["server_pid_cpu"] = m.reuseport ? "one reactor thread per --cpus CPU" : std::to_string(server_cpu);
  x["client_cpu"] = client_cpu;
  rec.placement.sides.push_back({.role = "client", .index = 0, .pinned = client_cpu >= 0 ? std::vector<int>{client_cpu} : std::vector<int>{}});
  rec.placement.sides.push_back({.role = "server", .index = 0, .pinned = (!m.reuseport && server_cpu >= 0) ? std::vector<int>{server_cpu} : reactor_cpus});
  if (died) rec.fail(server.death());
  else if (!res.abort_reason.empty()) rec.fail(res.abort_reason);
  if (m.event_driven && (res.rejected || res.lost))
    rec.fail(fmt::format("an event-driven server must serve every client: {} rejected, {} lost",
                         res.rejected, res.lost));
}

std::vector<std::shared_ptr<ServerModel>>& models() {
  static std::vector<std::shared_ptr<ServerModel>> all;
  return all;
}

}  // namespace

ServerProcess start_model(const ServerModel& m, const Params& p, int cpu, const std::vector<int>& cpus,
                          int backlog) {
  return ServerProcess::fork_fn(m.reuseport ? -1 : cpu, [&](int ready) {
    int lfd = listen_tcp(0, backlog, m.event_driven, m.reuseport);
    std::string line = fmt::format("{}\n", local_port(lfd));
    if (write(ready, line.data(), line.size()) != ssize_t(line.size())) return;
    ::close(ready);
    m.serve(lfd, p, cpus, backlog);
  });
}

const ServerModel* find_model(const std::string& name) {
  for (auto& m : models())
    if (m->name == name) return m.get();
  return nullptr;
}

Mechanism make_mechanism(ServerModel model) {
  Mechanism mech{.suite = "servers", .name = model.name, .help = model.help, .params = suite_params(model)};
  auto shared = std::make_shared<ServerModel>(std::move(model));
  models().push_back(shared);
  mech.workload = [shared](Session& s) { run_model(*shared, s); };
  return mech;
}

}  // namespace ipclab::servers
