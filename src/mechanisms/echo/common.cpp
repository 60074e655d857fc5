// The echo client and the suite's workload (see common.hpp and client.hpp).
#include "mechanisms/echo/common.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstring>
#include <random>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/placement.hpp"
#include "core/session.hpp"
#include "mechanisms/echo/client.hpp"
#include "mechanisms/servers/common.hpp"

namespace ipclab::echo {
namespace {

IPCLAB_REGISTER(Suite{
    .name = "echo",
    .help = "TCP echo over loopback: server pinned to one CPU, event-driven client on the other; "
            "throughput, RTT and server CPU per echo (reference 003)",
});

// Messages are windows into one random pattern, at an offset that changes with every message and
// connection, so a byte from a stale, duplicated or foreign message does not compare equal.
constexpr size_t kSpread = 4096;

// Sends what is left of connection idx's message; arms EPOLLOUT while the socket buffer is full.
bool pump(Client& cl, int ep, size_t idx) {
  Conn& c = cl.cs[idx];
  while (c.sent < cl.size) {
    ssize_t w = ::send(c.fd, c.msg + c.sent, cl.size - c.sent, MSG_NOSIGNAL);
    if (w < 0 && errno == EAGAIN) break;
    if (w < 0) {
      cl.error = fmt::format("send: {}", strerror(errno));
      return false;
    }
    c.sent += size_t(w);
  }
  bool want = c.sent < cl.size;
  if (want != c.want_out) {
    c.want_out = want;
    epoll_event ev{.events = EPOLLIN | (want ? EPOLLOUT : 0u), .data = {.u64 = idx}};
    epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
  }
  return true;
}

// Opens `n` connections to 127.0.0.1:`port` (TCP_NODELAY, non-blocking), appended to `cl.cs`;
// sets `cl.error` when one fails.
void connect_to(Client& cl, int port, size_t n) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(uint16_t(port));
  for (size_t i = 0; i < n && cl.error.empty(); ++i) {
    Conn& c = cl.cs.emplace_back();
    c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (c.fd < 0 || ::connect(c.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      cl.error = fmt::format("connect to the server: {}", strerror(errno));
      break;
    }
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::ioctl(c.fd, FIONBIO, &one) != 0) cl.error = fmt::format("FIONBIO: {}", strerror(errno));
  }
}

}  // namespace

void Client::start_msg(size_t idx) {
  Conn& c = cs[idx];
  c.msg = pattern.data() + (c.seq * 61 + idx * 997) % kSpread;
  c.sent = c.got = 0;
  c.t_send = now_ns();
}

void Client::begin() {
  if (slice_ns) return start_turn(0);
  for (size_t i = 0; i < cs.size(); ++i) {
    start_msg(i);
    kick.push_back(i);
  }
}

// Starts `side`'s connections (into `kick`) and its turn, after reading its server's CPU.
void Client::start_turn(int side) {
  active_ = side;
  draining_ = false;
  turn_ops_ = 0;
  turn_cpu0_ = servers[side]->cpu_seconds();
  const size_t n = cs.size() / 2;
  for (size_t i = size_t(side) * n; i < size_t(side + 1) * n; ++i) {
    start_msg(i);
    kick.push_back(i);
  }
  inflight_[side] = unsigned(n);
  turn_start_ = now_ns();
  turn_end_ = turn_start_ + slice_ns;
}

void Client::switch_turn(uint64_t now) {
  const double cpu = servers[active_]->cpu_seconds() - turn_cpu0_;
  if (turn_start_ >= measure_at && now <= stop_at)
    slices.push_back({.side = active_, .ops = turn_ops_, .wall_ns = now - turn_start_, .server_cpu_s = cpu});
  start_turn(active_ ^ 1);
}

bool Client::tick() {
  if (!error.empty()) return false;
  const uint64_t now = now_ns();
  if (!measuring_ && now >= measure_at) {
    measuring_ = true;
    t_begin = now;
    srv0_ = servers[0]->cpu_seconds();
    client0_ = cpu_usage(RUSAGE_THREAD);
  }
  if (now >= stop_at) {
    t_end = now;
    server_cpu_s = servers[0]->cpu_seconds() - srv0_;
    client_cpu = cpu_usage(RUSAGE_THREAD) - client0_;
    return false;
  }
  if (now >= next_check_) {
    next_check_ = now + 20'000'000;
    for (servers::ServerProcess* sp : servers)
      if (sp && error.empty() && !sp->alive()) error = sp->death();
    if (error.empty() && watchdog) error = watchdog->check();
  }
  if (slice_ns && error.empty()) {
    if (!draining_ && now >= turn_end_) draining_ = true;
    if (draining_ && inflight_[active_] == 0) switch_turn(now);
  }
  return error.empty();
}

bool Client::received(size_t idx, const unsigned char* data, size_t n) {
  Conn& c = cs[idx];
  if (n > size - c.got || std::memcmp(data, c.msg + c.got, n) != 0) {
    ++rec->integrity.corrupt;
    error = n > size - c.got
                ? fmt::format("connection {} message {}: {} bytes echoed, {} sent", idx, c.seq, c.got + n, size)
                : fmt::format("connection {} message {}: echoed bytes differ from those sent", idx, c.seq);
    return false;
  }
  c.got += n;
  if (c.got < size) return false;
  const uint64_t t = now_ns();
  ++echoes;
  if (measuring_) {
    hist.record(t - c.t_send);
    ++ops;
  }
  ++c.seq;
  if (slice_ns) {
    ++turn_ops_;
    if (draining_) {  // the turn is over: this connection rests until its side's next turn
      --inflight_[side_of(idx)];
      return false;
    }
  }
  start_msg(idx);
  return true;
}

void drive_epoll(Client& cl) {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) {
    cl.error = fmt::format("epoll_create1: {}", strerror(errno));
    return;
  }
  for (size_t i = 0; i < cl.cs.size(); ++i) {
    epoll_event ev{.events = EPOLLIN, .data = {.u64 = i}};
    epoll_ctl(ep, EPOLL_CTL_ADD, cl.cs[i].fd, &ev);
  }
  std::vector<unsigned char> rbuf(cl.size);
  cl.begin();
  std::vector<epoll_event> evs(256);
  while (cl.tick()) {
    for (size_t i : cl.kick)
      if (!pump(cl, ep, i)) break;
    cl.kick.clear();
    int k = epoll_wait(ep, evs.data(), int(evs.size()), 20);
    for (int e = 0; e < k && cl.error.empty(); ++e) {
      const size_t idx = evs[size_t(e)].data.u64;
      Conn& c = cl.cs[idx];
      if ((evs[size_t(e)].events & EPOLLOUT) && !pump(cl, ep, idx)) break;
      if (!(evs[size_t(e)].events & (EPOLLIN | EPOLLERR | EPOLLHUP))) continue;
      ssize_t r = ::recv(c.fd, rbuf.data(), cl.size - c.got, 0);
      if (r < 0 && errno == EAGAIN) continue;
      if (r <= 0) {
        cl.error = r == 0 ? "the server closed a connection" : fmt::format("recv: {}", strerror(errno));
        break;
      }
      if (cl.received(idx, rbuf.data(), size_t(r)) && !pump(cl, ep, idx)) break;
    }
  }
  ::close(ep);
}

std::vector<ParamSpec> suite_params(std::vector<ParamSpec> extra) {
  std::vector<ParamSpec> ps = {
      {.name = "connections", .type = ParamType::Int, .def = "16",
       .help = "client connections, one message in flight on each", .quick = {"16", "64"},
       .full = {"1", "4", "8", "16", "32", "64"}, .min = 1, .max = 4096},
      {.name = "size", .type = ParamType::Size, .def = "1024", .help = "message size in bytes",
       .min = 1, .max = kMaxSize},
      // uring by default: the cheaper loop, so the servers, not the client, set the pace.
      {.name = "client", .type = ParamType::String, .def = have_uring_client() ? "uring" : "epoll",
       .choices = {"epoll", "uring"},
       .help = "the load generator's loop: uring (multishot recv, one SQE per send, no syscall per "
               "message) or epoll (recv and send per message); the server's sends pay for waking it"},
  };
  for (auto& p : extra) ps.push_back(p);
  return ps;
}

namespace {
// Set while launch_of() runs a mechanism's workload: run_echo hands over its launch and returns.
thread_local ServerLaunch* t_capture = nullptr;
}  // namespace

servers::ServerProcess start_server(const ServerLaunch& launch, int cpu, const Params& p) {
  using servers::ServerProcess;
  if (!launch.argv.empty()) return ServerProcess::exec(cpu, launch.argv);
  return ServerProcess::fork_fn(cpu, [&](int ready) {
    int lfd = servers::listen_tcp(0, 1024, true, false);
    std::string line = fmt::format("{}\n", servers::local_port(lfd));
    if (write(ready, line.data(), line.size()) != ssize_t(line.size())) return;
    ::close(ready);
    launch.serve(lfd, p);
  });
}

ServerLaunch launch_of(const Mechanism& m, const Params& p, const RunOptions& o) {
  ServerLaunch launch;
  Record scratch;
  Session s(m, p, o, scratch);
  t_capture = &launch;
  try {
    m.workload(s);
  } catch (...) {
    t_capture = nullptr;
    throw;
  }
  t_capture = nullptr;
  if (!launch.serve && launch.argv.empty())
    throw UsageError(fmt::format("{} does not start an echo server that echo/ab can pair", m.full_name()));
  return launch;
}

int client_cpu(const RunOptions& o) { return o.cpus.empty() ? -1 : o.cpus[0]; }

int server_cpu(const RunOptions& o) {
  return o.cpus.size() > 1 ? o.cpus[1] : client_cpu(o);
}

void prepare_client(const Params& p, int nservers) {
  if (p.str("client") == "uring" && !have_uring_client())
    throw UsageError("client=uring needs the io_uring runtime, which this build left out; use client=epoll");
  const int64_t nconn = p.i64("connections");
  servers::ensure_nofile(uint64_t(nservers * nconn) + 64,
                         nservers == 1 ? fmt::format("connections {}", nconn)
                                       : fmt::format("connections {} to each of {} servers", nconn, nservers));
}

std::unique_ptr<Client> run_client(Session& s, servers::ServerProcess* a, servers::ServerProcess* b,
                                   uint64_t slice_ns) {
  const Params& p = s.params();
  const size_t nconn = size_t(p.i64("connections"));
  auto cl = std::make_unique<Client>();  // holds a histogram (tens of KiB): not on the stack
  cl->size = size_t(p.i64("size"));
  cl->pattern.resize(cl->size + kSpread);
  std::mt19937_64 rng(42);
  for (auto& byte : cl->pattern) byte = static_cast<unsigned char>(rng());
  cl->rec = &s.record();
  cl->servers[0] = a;
  cl->servers[1] = b;
  cl->slice_ns = slice_ns;
  cl->watchdog = std::make_unique<Watchdog>(s.options().duration_s);
  const Client* c = cl.get();
  auto echoes = [c] { return c->echoes; };
  cl->watchdog->watch("client", 0, -1, gettid(), echoes);
  for (int i = 0; i < 2; ++i)
    if (cl->servers[i]) cl->watchdog->watch("server", i, cl->servers[i]->pid(), -1, echoes);
  {
    ScopedPin pin(client_cpu(s.options()));
    for (servers::ServerProcess* sp : cl->servers)
      if (sp) connect_to(*cl, sp->port(), nconn);
    cl->measure_at = now_ns() + uint64_t(s.options().warmup_s * 1e9);
    cl->stop_at = cl->measure_at + uint64_t(s.options().duration_s * 1e9);
    if (cl->error.empty()) p.str("client") == "uring" ? drive_uring(*cl) : drive_epoll(*cl);
  }
  for (auto& c : cl->cs)
    if (c.fd >= 0) ::close(c.fd);
  return cl;
}

void record_client(Record& rec, const Client& cl, const Session& s) {
  rec.wall_s = cl.t_end && cl.t_begin ? double(cl.t_end - cl.t_begin) * 1e-9 : 0.0;
  rec.ops = cl.ops;
  rec.bytes = cl.ops * cl.size;
  rec.integrity.sent = rec.integrity.received = cl.ops;
  if (cl.hist.count()) rec.latency = Latency::from("rtt", cl.hist);
  rec.cpu = cl.client_cpu;
  rec.rates["echoes_per_s"] = rec.wall_s > 0 ? double(cl.ops) / rec.wall_s : 0.0;
  rec.extra["client"] = s.params().str("client") == "uring" ? "io_uring" : "epoll";
  const auto pinned = [](int cpu) { return cpu >= 0 ? std::vector<int>{cpu} : std::vector<int>{}; };
  rec.placement.layout = "cross";
  rec.placement.cpus = s.options().cpus;
  rec.placement.sides.push_back({.role = "client", .index = 0, .pinned = pinned(client_cpu(s.options()))});
  for (int i = 0; i < 2; ++i)
    if (cl.servers[i])
      rec.placement.sides.push_back({.role = "server", .index = i, .pinned = pinned(server_cpu(s.options()))});
}

std::string death_after(servers::ServerProcess& server, const std::string& client_error) {
  return (client_error.empty() ? !server.alive() : server.dies_within(0.2)) ? server.death() : std::string();
}

bool fail_run(Record& rec, const std::string& death, const std::string& client_error) {
  if (!death.empty()) rec.fail(death + (client_error.empty() ? "" : " (" + client_error + ")"));
  else if (!client_error.empty()) rec.fail(client_error);
  return !death.empty() || !client_error.empty();
}

void run_echo(Session& s, const ServerLaunch& launch) {
  if (t_capture) {
    *t_capture = launch;
    return;
  }
  const Params& p = s.params();
  prepare_client(p, 1);
  servers::ServerProcess server = start_server(launch, server_cpu(s.options()), p);
  const auto cl = run_client(s, &server);
  const std::string death = death_after(server, cl->error);
  CpuUsage whole = server.stop();

  auto& rec = s.record();
  record_client(rec, *cl, s);
  const double srv = cl->server_cpu_s;
  // Server CPU from schedstat is one figure (user and sys together): recorded as sys.
  rec.cpu.sys_s += srv;
  rec.rates["MiB_per_s"] = rec.wall_s > 0 ? double(rec.bytes) / rec.wall_s / (1 << 20) : 0.0;
  auto& x = rec.extra;
  x["server_cpu_s"] = srv;
  x["server_cpu_per_echo_ns"] = rec.ops ? srv * 1e9 / double(rec.ops) : 0.0;
  x["client_cpu_per_echo_ns"] = rec.ops ? (cl->client_cpu.user_s + cl->client_cpu.sys_s) * 1e9 / double(rec.ops) : 0.0;
  x["server_cpu_whole_life_s"] = whole.user_s + whole.sys_s;
  x["server"] = launch.argv.empty() ? "forked" : launch.argv[0];
  fail_run(rec, death, cl->error);
}

}  // namespace ipclab::echo
