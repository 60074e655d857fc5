#include "core/run/remote.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "core/base/cancel.hpp"
#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/base/fs.hpp"
#include "core/machine/env.hpp"
#include "core/measure/session.hpp"
#include "core/model/std_params.hpp"
#include "core/peers/server.hpp"
#include "core/process/listener.hpp"
#include "core/run/patterns.hpp"
#include "core/run/remote_wire.hpp"
#include "core/transport/fd_transport.hpp"

namespace ipclab::remote {

using namespace detail;

namespace {
constexpr int kClockProbes = 16;  // per estimate (Link::estimate_clocks)

// The mechanisms that cross hosts: the socket and server ones, then the transports in halves.
std::string crossing_names() {
  std::string names;
  for (auto& [name, type] : crossing()) names += (names.empty() ? "" : ", ") + name;
  for (auto& m : Registry::get().mechanisms())
    if (m.half) names += ", " + m.full_name();
  return names;
}
}  // namespace

std::string crossing_problem(const Mechanism& m, const Params& p, bool far_clients) {
  if (far_clients && m.suite != "echo" && m.suite != "servers")
    return fmt::format(
        "--remote-role client runs a server benchmark's clients there and its server here (echo, servers); "
        "{} has no such roles: drop --remote-role",
        m.full_name());
  if (!crossing().count(m.full_name()) && !m.half)
    return fmt::format(
        "--remote: {} cannot cross hosts (its two sides share this machine's kernel or memory, or its "
        "crossing is not done yet); across two hosts run one of {}",
        m.full_name(), crossing_names());
  if (m.half && m.half_check)
    if (std::string why = m.half_check(p); !why.empty())
      return fmt::format("--remote: {} {}", m.full_name(), why);
  if (m.suite == "servers") {
    if (p.i64_or("reactors", 1) != 1)
      return fmt::format("--remote: {} runs one reactor across hosts; use -p reactors=1", m.full_name());
    return "";
  }
  if (m.suite == "echo") return "";  // closed or open loop, one reactor or several: the server is there
  if (p.str_or("mode", "threads") == "processes")
    return "--remote: the remote side runs threads; use -p mode=threads";
  if (!std_params::is_roundtrip(p) && p.i64_or("latency_reservoir", 0) > 0)
    return "--remote: the reservoir of one-way latencies is sampled here, and the consumers are there; use "
           "-p latency_reservoir=0";
  return "";
}

// ---------------------------------------------------------------------------------------------
// The local end: the ssh session.

std::unique_ptr<Link> Link::open(const Options& o) {
  const std::string ssh = find_program("ssh");
  if (ssh.empty()) throw UsageError("--remote needs OpenSSH's client (ssh) on PATH; install openssh-client");
  std::unique_ptr<Link> link(new Link(o));
  std::vector<std::string> argv{ssh};
  for (auto& opt : o.ssh_options)
    for (auto& w : words(opt)) argv.push_back(w);
  // After the user's options: ssh takes the first value given for each, so theirs win.
  for (const char* d :
       {"BatchMode=yes", "ConnectTimeout=10", "ServerAliveInterval=5", "ServerAliveCountMax=3"}) {
    argv.push_back("-o");
    argv.push_back(d);
  }
  argv.insert(argv.end(), {"-T", "--", o.host, shell_quote(o.ipclab) + " remote-side"});
  // ssh's own ConnectTimeout (the user's, or ours) bounds reaching the host; the remote ipclab then
  // has as long again, and 10 s more, to start and collect its environment block.
  double connect_s = 10;
  for (size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == "-o" && argv[i + 1].rfind("ConnectTimeout=", 0) == 0) {
      connect_s = std::max(1.0, std::atof(argv[i + 1].c_str() + 15));
      break;
    }
  const double hello_s = 2 * connect_s + 10;
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0 || pipe2(out, O_CLOEXEC) != 0 ||
      pipe2(err, O_CLOEXEC) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe");
  link->ssh_ = Process::exec(Spawn{.stdin_fd = in[0], .stdout_fd = out[1], .stderr_fd = err[1]}, argv);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  link->in_ = in[1];
  link->out_ = out[0];
  link->err_ = err[0];

  // The hello.
  const std::string where = fmt::format("--remote {}", brief(o.host));
  nlohmann::json hello;
  std::string line;
  bool eof = false;
  const uint64_t deadline = now_ns() + uint64_t(hello_s * 1e9);
  for (;;) {
    link->read_some(0);
    if (!read_line(link->out_, link->out_buf_, line, std::min(deadline, now_ns() + 100'000'000), eof)) {
      if (eof || now_ns() >= deadline) break;
      continue;
    }
    try {
      hello = nlohmann::json::parse(line);
    } catch (const std::exception&) {
      continue;  // a remote login's banner or motd on stdout: not ours
    }
    if (hello.is_object() && hello.contains("ipclab_remote")) break;
    hello = nullptr;
  }
  if (hello.is_null()) {
    if (!eof) {
      link->ssh_.stop(0);
      throw UsageError(
          fmt::format("{}: no answer from the remote ipclab within {:.0f} s; check the host and that "
                      "`ssh {} {} remote-side` starts",
                      where, hello_s, brief(o.host), brief(o.ipclab)));
    }
    link->ssh_.wait(5.0);
    link->read_some(0);
    const int status = link->ssh_.reaped() ? link->ssh_.status() : -1;
    const int code = status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    const std::string said = link->ssh_said();
    if (code == 255)
      throw UsageError(
          fmt::format("{}: ssh failed: {}; check the host, its port and the key "
                      "(--ssh-option '-p PORT', --ssh-option '-i KEY')",
                      where, said.empty() ? "no reason given" : said));
    if (code == 127 || code == 126)
      throw UsageError(
          fmt::format("{}: no ipclab at '{}' there ({}); install the same ipclab there, or "
                      "give its path with --remote-ipclab PATH",
                      where, brief(o.ipclab), said.empty() ? "not found" : said));
    throw UsageError(
        fmt::format("{}: the remote ipclab '{}' ended before it said hello ({}{}); give the path "
                    "of the same ipclab with --remote-ipclab PATH",
                    where, brief(o.ipclab), status >= 0 ? describe_exit(status) : "no status",
                    said.empty() ? "" : ": " + said));
  }
  const nlohmann::json mine = identity();
  for (const char* k : {"version", "build_type", "build_flags"})
    if (!hello.contains(k) || hello[k] != mine[k])
      throw UsageError(
          fmt::format("{}: the remote ipclab '{}' is {}, this one is {}; run the same build on "
                      "both hosts (--remote-ipclab PATH names it there)",
                      where, brief(o.ipclab), identity_text(hello), identity_text(mine)));
  link->hello_ = hello;

  // The clocks, as the run starts: the context's.
  try {
    const auto [realtime, monotonic] = link->estimate_clocks();
    auto json_of = [](const ClockOffset& c, const char* clock) {
      return nlohmann::json{
          {"offset_ns", c.offset_ns},
          {"uncertainty_ns", c.uncertainty_ns},
          {"rtt_ns", c.rtt_ns},
          {"probes", kClockProbes},
          {"over", "ssh channel"},
          {"clock", clock},
          {"meaning", "remote clock minus local clock; the true offset lies within ± uncertainty"}};
    };
    link->clock_ = json_of(realtime, "CLOCK_REALTIME");
    link->monotonic_ = monotonic.known() ? json_of(monotonic, "CLOCK_MONOTONIC") : nlohmann::json(nullptr);
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("{}: {}", where, e.what()));
  }
  return link;
}

// NTP's estimate over the channel — the remote's reading against the midpoint of the local send
// and receive — from the probe with the shortest round trip, whose half is the bound on the error.
// Each probe reads both clocks here on either side of it, and both there in one answer.
std::pair<ClockOffset, ClockOffset> Link::estimate_clocks() {
  ClockOffset realtime, monotonic;
  int64_t best_rtt = -1;
  for (int i = 0; i < kClockProbes; ++i) {
    const uint64_t r0 = realtime_ns(), m0 = now_ns();
    send({{"op", "clock"}});
    const nlohmann::json r = receive(10.0, "its clock");
    const uint64_t m3 = now_ns(), r3 = realtime_ns();
    const int64_t rtt = int64_t(m3 - m0);
    if (best_rtt >= 0 && rtt >= best_rtt) continue;
    best_rtt = rtt;
    realtime = {int64_t(r.value("t", uint64_t(0))) - int64_t(r0 + (r3 - r0) / 2), int64_t(r3 - r0) / 2,
                int64_t(r3 - r0)};
    monotonic = r.contains("m")
                    ? ClockOffset{int64_t(r["m"].get<uint64_t>()) - int64_t(m0 + (m3 - m0) / 2), rtt / 2, rtt}
                    : ClockOffset{};
  }
  return {realtime, monotonic};
}

std::unique_ptr<Link> Link::back(const std::string& host, const std::string& server_address) {
  std::unique_ptr<Link> link(new Link(Options{.host = host, .address = server_address}));
  link->back_ = true;
  link->in_ = STDOUT_FILENO;
  link->out_ = STDIN_FILENO;
  return link;
}

Link::~Link() {
  if (back_) return;  // the remote side's own stdin and stdout: its caller's to end
  if (in_ >= 0) {
    try {
      write_line(in_, {{"op", "quit"}});
    } catch (const std::exception&) {
    }
    close(in_);  // the end of its input: the remote side ends and sweeps its run folder
  }
  // A remote side that answered nothing when last asked (frozen, or its host gone) will not end of
  // its own now either: ssh goes at once, and its session's end is the remote side's end of input.
  if (ssh_.running() && !ssh_.wait(unresponsive_ ? 0.0 : 5.0)) ssh_.stop(1.0);
  if (out_ >= 0) close(out_);
  if (err_ >= 0) close(err_);
}

nlohmann::json Link::context() const {
  nlohmann::json env = hello_.value("environment", nlohmann::json::object());
  return {{"host", o_.host},
          {"ipclab", o_.ipclab},
          {"ssh_options", o_.ssh_options},
          {"address", o_.address.empty() ? nlohmann::json(nullptr) : nlohmann::json(o_.address)},
          {"environment", env},
          {"clock", clock_},
          {"monotonic_clock", monotonic_}};
}

void Link::send(const nlohmann::json& j) {
  try {
    write_line(in_, j);
  } catch (const std::exception&) {
    throw std::runtime_error(fmt::format("the ssh connection to {} is lost{}", o_.host,
                                         ssh_said().empty() ? "" : ": " + ssh_said()));
  }
}

void Link::read_some(int ms) {
  if (err_ < 0) return;
  pollfd p{err_, POLLIN, 0};
  while (poll(&p, 1, ms) > 0) {
    char tmp[4096];
    ssize_t n = read(err_, tmp, sizeof tmp);
    if (n <= 0) {
      close(err_);
      err_ = -1;
      return;
    }
    err_buf_.append(tmp, size_t(n));
    if (err_buf_.size() > 16384) err_buf_.erase(0, err_buf_.size() - 8192);
    ms = 0;
  }
}

std::string Link::ssh_said() const {
  std::string s = err_buf_;
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  if (auto nl = s.rfind('\n'); nl != std::string::npos) s.erase(0, nl + 1);
  while (!s.empty() && s.back() == '\r') s.pop_back();
  return brief(s, 300);
}

nlohmann::json Link::try_receive(double timeout_s, const std::string& waiting_for) {
  const uint64_t deadline = now_ns() + uint64_t(timeout_s * 1e9);
  std::string line;
  bool eof = false;
  for (;;) {
    read_some(0);  // ssh's stderr too, at least every 100 ms, for the messages that name its end
    if (read_line(out_, out_buf_, line, std::min(deadline, now_ns() + 100'000'000), eof)) {
      try {
        auto j = nlohmann::json::parse(line);
        if (j.is_object()) return j;
      } catch (const std::exception&) {
      }
      continue;
    }
    if (eof) {
      ssh_.wait(1.0);
      read_some(0);
      throw std::runtime_error(fmt::format("the remote side on {} ended while ipclab waited for {}{}{}",
                                           o_.host, waiting_for,
                                           ssh_.reaped() ? " (ssh " + describe_exit(ssh_.status()) + ")" : "",
                                           ssh_said().empty() ? "" : ": " + ssh_said()));
    }
    if (now_ns() >= deadline) return nullptr;
  }
}

nlohmann::json Link::receive(double timeout_s, const std::string& waiting_for) {
  nlohmann::json j = try_receive(timeout_s, waiting_for);
  if (!j.is_null()) return j;
  unresponsive_ = true;
  throw std::runtime_error(
      fmt::format("the remote side on {} did not answer within {:.0f} s while ipclab "
                  "waited for {}: it is frozen or the connection hangs",
                  o_.host, timeout_s, waiting_for));
}

// ---------------------------------------------------------------------------------------------
// The local end of one benchmark.

namespace {

Link* g_link = nullptr;

// The remote side's role in the record: the round trips' server, or throughput's consumers.
std::string far_role(const Session& s, const Link& link) {
  return (std_params::is_roundtrip(s.params()) ? "server@" : "consumer@") + link.host();
}

// The producers' (clients') ends of the channels, the remote side's ends being on its host: of a
// crossing socket mechanism, connected sockets to its ports; of a transport in halves (Half), its
// senders' half, reaching the receivers' half there at its port.
class RemoteTransport final : public Transport {
 public:
  // A socket mechanism's channels (`type`). `credit_window`: UDP throughput's, the remote
  // receiver's (0: none), its credits returned on the socket (messaging::Credits).
  RemoteTransport(const Params& p, Link& link, int type, const std::string& address,
                  const std::vector<int>& ports, uint64_t credit_window)
      : link_(link), address_(address), ports_(ports) {
    size_t next = 0;
    auto make = [&]() {
      const int fd = messaging::connected_ipv4(type, address, ports.at(type == SOCK_STREAM ? 0 : next++),
                                               "the remote side");
      if (path_.is_null()) path_ = network_path(fd);
      return messaging::FdChannel{.prod_r = fd, .prod_w = fd};
    };
    inner_ = std::make_unique<messaging::FdTransport>(
        p,
        messaging::FdTransport::Options{
            .framing = type == SOCK_STREAM ? messaging::Framing::Stream : messaging::Framing::Message,
            .nonblocking = p.flag("nonblocking"),
            .credit_window = credit_window,
            .credits_on_socket = true},
        make);
  }
  // A transport in halves: `m`'s senders' half, to the receivers' at `address`:`port`.
  RemoteTransport(const Mechanism& m, const Params& p, Link& link, const std::string& address, int port)
      : link_(link), address_(address), ports_{port}, path_(network_path_to(address, port)) {
    inner_ = m.half(p, Half{.role = Role::Producer, .address = address, .port = port});
  }
  std::unique_ptr<Endpoint> open(Role role, int index) override {
    if (role != Role::Producer) throw std::logic_error("the remote side's endpoints are on the remote host");
    return inner_->open(role, index);
  }
  std::string object_name() const override { return fmt::format("{}:{}", address_, ports_.at(0)); }
  void describe(nlohmann::json& extra) const override {
    inner_->describe(extra);
    extra["remote"] = {{"host", link_.host()}, {"address", address_}, {"ports", ports_}};
    extra["network_path"] = {{"local", path_}};
  }
  void attach(Session& s) override {
    inner_->attach(s);
    const int senders = int(s.params().i64_or("producers", 1));
    Session* sp = &s;
    // Its progress is its senders' (each of their round trips is one of its echoes; their
    // messages stop once its consumers stop taking them).
    watch_server(
        s, link_,
        [sp, senders] {
          uint64_t n = 0;
          for (int i = 0; i < senders; ++i) n += sp->worker_progress(i);
          return n;
        },
        far_role(s, link_));
  }

 private:
  Link& link_;
  std::string address_;
  std::vector<int> ports_;
  nlohmann::json path_;
  std::unique_ptr<Transport> inner_;
};

}  // namespace

void watch_server(Session& s, Link& link, std::function<uint64_t()> progress, const std::string& role) {
  // The remote side, watched as a peer: ssh's end is its death (the connection lost, the remote
  // ipclab gone). Over a link back (Link::back) there is no ssh here: the server's death is in its
  // result, and the clients' watchdog names them stalled meanwhile.
  if (link.process().running())
    s.add_peer(
        PeerSpec{.role = role, .process = &link.process(), .progress = std::move(progress), .cpu_usage = [] {
                   return CpuUsage{};
                 }});  // measured there, folded in after
  Link* l = &link;
  s.on_phase([l](Phase ph) {
    try {
      if (ph == kMeasure) l->send({{"op", "measure"}});
      if (ph == kStop) l->send({{"op", "stop"}});
    } catch (const std::exception&) {
      // The connection is lost: the peer's death (ssh) fails the run.
    }
  });
}

namespace {
// Asks the far end for `op` ("server", "bench") of the session's benchmark, as its request_of
// (remote_side.cpp) reads it: the mechanism, its parameters and where to listen, and `extra`.
// Returns its reply; throws what the far end said when it could not.
nlohmann::json ask(Session& s, Link& link, const char* op, const nlohmann::json& extra,
                   const std::string& waiting_for) {
  nlohmann::json params = nlohmann::json::object();
  for (auto& [k, v] : s.params().items()) params[k] = v;
  nlohmann::json req = {{"op", op},
                        {"mechanism", s.mechanism().full_name()},
                        {"params", params},
                        {"address", link.options().address}};
  req.update(extra);
  link.send(req);
  auto r = link.receive(s.options().timeout_s(), waiting_for);
  // What the remote host lacks (a kernel feature, a library's) skips the point, as here.
  if (r.contains("error") && r.value("skip", false))
    throw Skip(fmt::format("on {}: {}", link.host(), r["error"].get<std::string>()));
  if (r.contains("error"))
    throw std::runtime_error(
        fmt::format("the remote side on {}: {}", link.host(), r["error"].get<std::string>()));
  return r;
}
}  // namespace

ServerAddress start_server(Session& s, Link& link, const ServerLaunch& launch) {
  const Mechanism& m = s.mechanism();
  const nlohmann::json asked = {{"nodelay", launch.nodelay}, {"reactors", launch.reactor_cpus.size()}};
  const auto r = ask(s, link, "server", {{"launch", asked}}, "its " + m.full_name() + " server");
  ServerAddress a{link.options().address.empty() ? r.value("address", "") : link.options().address,
                  r.value("port", 0), r.value("reactor_cpus", std::vector<int>{})};
  s.record().extra["remote"] = {{"host", link.host()}, {"address", a.address}, {"ports", {a.port}}};
  s.record().extra["network_path"]["local"] = network_path_to(a.address, a.port);
  return a;
}

namespace {

// Ends the remote side's benchmark (abort after a failure: its servers may wait for requests that
// never come) and returns its results; null when they did not come (the record fails, unless it
// had already). A run that failed already (a stall: the remote side may be frozen) waits no longer
// than the remote side's own grace after an abort, doubled.
nlohmann::json end_benchmark(Session& s, Link& link) {
  Record& rec = s.record();
  const bool failed = rec.status == Status::Failed;
  try {
    link.send({{"op", failed ? "abort" : "end"}});
    return link.receive(failed ? 2.5 : s.options().timeout_s(), "its results")
        .value("result", nlohmann::json::object());
  } catch (const std::exception& e) {
    if (!failed) rec.fail(e.what());
    return nullptr;
  }
}

}  // namespace

std::pair<CpuUsage, CpuUsage> stop_server(Session& s, Link& link) {
  Record& rec = s.record();
  const bool failed = rec.status == Status::Failed;
  const nlohmann::json r = end_benchmark(s, link);
  if (r.is_null()) return {};
  const CpuUsage window = cpu_of(r.value("cpu", nlohmann::json::object())),
                 life = cpu_of(r.value("cpu_whole_life", nlohmann::json::object()));
  const std::string role = "server@" + link.host();
  rec.cpu += window;
  auto& by_role = rec.extra["cpu_by_role"];
  by_role[role] = cpu_json(window);
  by_role[role]["per_op_ns"] = rec.ops ? window.total_s() * 1e9 / double(rec.ops) : 0.0;
  by_role[role]["measured_on"] = link.host();
  rec.extra["network_path"]["remote"] = r.value("path", nlohmann::json::object());
  for (auto& e : r.value("errors", nlohmann::json::array()))
    if (!failed) rec.fail(fmt::format("the remote side on {}: {}", link.host(), e.get<std::string>()));
  return {window, life};
}

BenchServer::BenchServer(Session& s, const ServerLaunch& launch, int cpu) : link_(in_use()), cpu_(cpu) {
  if (link_)
    far_ = start_server(s, *link_, launch);
  else
    local_.emplace(ServerProcess::start(launch, cpu));
}

void BenchServer::watch(Session& s, std::function<uint64_t()> progress) {
  if (link_) return watch_server(s, *link_, std::move(progress), "server@" + link_->host());
  s.add_peer({.role = "server",
              .index = 0,
              .process = &local_->process(),
              .cpu = cpu_,
              .progress = std::move(progress)});
}

void BenchServer::add_reactor_sides(Placement& placement, const ServerLaunch& launch) const {
  if (!link_) return ipclab::add_reactor_sides(placement, launch.reactor_cpus);
  // Pinned to CPUs of the other host: sides of its own role, so that no CPU number is read as one
  // of this host's.
  const size_t first = placement.sides.size();
  ipclab::add_reactor_sides(placement, far_.reactor_cpus);
  for (size_t i = first; i < placement.sides.size(); ++i) placement.sides[i].role += "@" + link_->host();
}

std::pair<CpuUsage, CpuUsage> BenchServer::stop(Session& s) {
  if (link_) return stop_server(s, *link_);
  const CpuUsage window = s.peer_cpu().at(0);
  return {window, local_->stop()};
}

namespace {
// The transport pattern's receivers, on the host of the link in use.
struct LinkReceivers final : FarReceivers {
  std::unique_ptr<Transport> open_transport(Session& s) override {
    return remote::open_transport(s, *g_link);
  }
  FarSeen fold(Session& s) override { return remote::fold(s, *g_link); }
} g_receivers;
}  // namespace

Link* in_use() { return g_link; }
bool far_clients() { return g_link && g_link->options().far_clients; }
void use(Link* link) {
  g_link = link;
  set_far_receivers(link ? &g_receivers : nullptr);
}

namespace {

// The one-way latency's clock offset, as extra.one_way records it.
nlohmann::json one_way_json(const ClockOffset& c) {
  return {
      {"offset_ns", c.offset_ns},
      {"uncertainty_ns", c.uncertainty_ns},
      {"method",
       fmt::format("CLOCK_MONOTONIC of both hosts, NTP-style over the ssh channel: the shortest "
                   "round trip of {} probes before the run gives the offset; the uncertainty is half "
                   "its round trip plus how far a second estimate after the run moved",
                   kClockProbes)},
      {"before", {{"offset_ns", c.offset_ns}, {"uncertainty_ns", c.uncertainty_ns}, {"rtt_ns", c.rtt_ns}}}};
}

}  // namespace

std::unique_ptr<Transport> open_transport(Session& s, Link& link) {
  const Mechanism& m = s.mechanism();
  const auto it = crossing().find(m.full_name());
  if (it == crossing().end() && !m.half)
    throw std::logic_error("open_transport: " + m.full_name() + " does not cross");
  const bool roundtrip = std_params::is_roundtrip(s.params());
  nlohmann::json extra = {{"channels", roundtrip ? s.params().i64_or("producers", 1) : 1},
                          {"consumers", s.params().i64_or("consumers", 1)},
                          {"duration_s", s.options().duration_s},
                          {"timeout_s", s.options().timeout_s()}};
  if (!roundtrip) {
    // The consumers there take one-way latencies of stamps made here: they add this offset to
    // each (its estimate now, just before the run; fold checks it after).
    const ClockOffset mono = link.estimate_clocks().second;
    if (mono.known()) {
      extra["clock_offset_ns"] = mono.offset_ns;
      s.record().extra["one_way"] = one_way_json(mono);
    } else {
      s.record().extra["one_way"] = {
          {"omitted", "the remote side reported no CLOCK_MONOTONIC reading: no offset, no one-way latency"}};
    }
  }
  const auto r = ask(s, link, "bench", extra, "its end of " + m.full_name());
  const std::string address =
      link.options().address.empty() ? r.value("address", "") : link.options().address;
  const auto ports = r.value("ports", std::vector<int>{});
  try {
    if (m.half) return std::make_unique<RemoteTransport>(m, s.params(), link, address, ports.at(0));
    return std::make_unique<RemoteTransport>(s.params(), link, it->second, address, ports,
                                             roundtrip ? 0 : r.value("credit_window", uint64_t(0)));
  } catch (...) {
    // Not connected (a firewall, a wrong --remote-address): the remote side's servers wait for
    // connections that will not come; end its benchmark so that the link serves the next one.
    try {
      link.send({{"op", "abort"}});
      link.receive(2.5, "the end of its benchmark");
    } catch (const std::exception&) {
    }
    throw;
  }
}

FarSeen fold(Session& s, Link& link) {
  Record& rec = s.record();
  const bool failed = rec.status == Status::Failed;
  const nlohmann::json r = end_benchmark(s, link);
  if (r.is_null()) return {};
  FarSeen seen;
  if (r.contains("consumers")) {  // throughput: what its consumers counted, as a local run's consumers do
    const nlohmann::json& c = r["consumers"];
    const nlohmann::json& in = c.value("integrity", nlohmann::json::object());
    rec.integrity.received += in.value("received", uint64_t(0));
    rec.integrity.duplicated += in.value("duplicated", uint64_t(0));
    rec.integrity.reordered += in.value("reordered", uint64_t(0));
    rec.integrity.corrupt += in.value("corrupt", uint64_t(0));
    rec.ops += c.value("ops", uint64_t(0));
    rec.bytes += c.value("bytes", uint64_t(0));
    seen.count = c.value("seen_count", std::vector<uint64_t>{});
    seen.seqsum = c.value("seen_seqsum", std::vector<uint64_t>{});
    // Their one-way latencies, corrected there by the offset estimated before the run. A second
    // estimate now bounds how far it moved over the run (drift, or a noisier probe): the
    // uncertainty is the first's plus that.
    nlohmann::json& ow = rec.extra["one_way"];
    if (ow.contains("offset_ns")) {
      try {
        const ClockOffset after = link.estimate_clocks().second;
        if (after.known()) {
          const int64_t moved = std::abs(after.offset_ns - ow["offset_ns"].get<int64_t>());
          ow["after"] = {{"offset_ns", after.offset_ns},
                         {"uncertainty_ns", after.uncertainty_ns},
                         {"rtt_ns", after.rtt_ns}};
          ow["uncertainty_ns"] = ow["uncertainty_ns"].get<int64_t>() + moved;
        }
      } catch (const std::exception& e) {
        if (!failed && rec.status != Status::Failed) rec.fail(e.what());
      }
      Histogram h;
      h.add_sparse(c.value("latency_values", std::vector<uint64_t>{}),
                   c.value("latency_counts", std::vector<uint64_t>{}));
      if (h.count()) rec.latency = Latency::from("one_way", h);
    }
    if (const nlohmann::json& rate = c.value("rate", nlohmann::json()); rate.is_object()) {
      seen.rate = std::make_unique<RateTrace>();
      seen.rate->raw.add_sparse(rate.value("raw_values", std::vector<uint64_t>{}),
                                rate.value("raw_counts", std::vector<uint64_t>{}));
      const auto sum = rate.value("slice_sum", std::vector<uint64_t>{}),
                 n = rate.value("slice_n", std::vector<uint64_t>{});
      for (size_t k = 0; k < size_t(RateTrace::kSlices) && k < sum.size() && k < n.size(); ++k)
        seen.rate->slice_sum[k] = sum[k], seen.rate->slice_n[k] = n[k];
    }
  }
  const std::string role = far_role(s, link);
  const CpuUsage cpu = cpu_of(r.value("cpu", nlohmann::json::object()));
  rec.cpu += cpu;
  auto& by_role = rec.extra["cpu_by_role"];
  by_role[role] = cpu_json(cpu);
  by_role[role]["measured_on"] = link.host();
  // Every role's CPU per op, the remote side's ops (throughput's) now counted.
  for (auto& [name, c] : by_role.items())
    c["per_op_ns"] = rec.ops ? (c.value("user_s", 0.0) + c.value("sys_s", 0.0)) * 1e9 / double(rec.ops) : 0.0;
  rec.extra["remote"]["requests"] = r.value("requests", 0);
  rec.extra["network_path"]["remote"] = r.value("path", nlohmann::json::object());
  for (auto& e : r.value("errors", nlohmann::json::array()))
    if (!failed) rec.fail(fmt::format("the remote side on {}: {}", link.host(), e.get<std::string>()));
  return seen;
}

// ---------------------------------------------------------------------------------------------
// --remote-role client: the clients there, the server here.

namespace {

// This host's address on the route to `remote` (a connected UDP socket's own address: the connect
// sends nothing): where clients on that host reach a server here.
std::string address_toward(const std::string& remote) {
  const int fd = messaging::connected_ipv4(SOCK_DGRAM, remote, 9, "the remote host");
  sockaddr_in me{};
  socklen_t len = sizeof me;
  const int rc = ::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len);
  ::close(fd);
  char text[INET_ADDRSTRLEN] = {};
  if (rc != 0 || !inet_ntop(AF_INET, &me.sin_addr, text, sizeof text))
    throw std::system_error(errno, std::generic_category(), "getsockname");
  return text;
}

// The far record becomes the run's: what its clients measured, its windows and placement, the
// server's CPU it was sent from here. In it, a role named after a host (server@ADDR, reactor@ADDR)
// is this host's, the others its own: they are named the other way round here, as a local run with
// --remote names them — the clients client@HOST, the server plain.
void adopt(Record& rec, const Record& far, const std::string& host) {
  rec.status = far.status;
  rec.error = far.error.empty() ? "" : fmt::format("on {}: {}", host, far.error);
  rec.ops = far.ops;
  rec.bytes = far.bytes;
  rec.wall_s = far.wall_s;
  rec.rates = far.rates;
  rec.latency = far.latency;
  rec.cpu = far.cpu;
  rec.integrity = far.integrity;
  rec.series = far.series;
  rec.placement = far.placement;
  auto flip = [&](const std::string& role) {
    const auto at = role.find('@');
    return at == std::string::npos ? role + "@" + host : role.substr(0, at);
  };
  for (Side& side : rec.placement.sides) side.role = flip(side.role);
  // The server is a side here as the remote server is one there (unpinned: ServerSide pins none);
  // the remote side watched no peer for it (Link::back), so its record has none.
  const bool has_server = std::any_of(rec.placement.sides.begin(), rec.placement.sides.end(),
                                      [](const Side& side) { return side.role == "server"; });
  if (!has_server) rec.placement.sides.push_back({.role = "server"});
  nlohmann::json extra = far.extra;
  if (extra.contains("cpu_by_role")) {
    nlohmann::json by_role = nlohmann::json::object();
    for (auto& [role, cpu] : extra["cpu_by_role"].items()) {
      nlohmann::json c = cpu;
      if (role.find('@') == std::string::npos)
        c["measured_on"] = host;
      else
        c.erase("measured_on");
      by_role[flip(role)] = c;
    }
    extra["cpu_by_role"] = by_role;
  }
  extra.erase("server_measured_on");
  extra["clients_measured_on"] = host;
  if (extra.contains("network_path")) {  // its local end is the other host's
    nlohmann::json& path = extra["network_path"];
    nlohmann::json theirs = path.value("local", nlohmann::json()),
                   ours = path.value("remote", nlohmann::json());
    path = {{"local", ours}, {"remote", theirs}};
  }
  if (extra.contains("remote")) extra["remote"]["host"] = host;
  extra["remote"]["role"] = "client";
  rec.extra.update(extra);
}

}  // namespace

void run_far_clients(Session& s, Link& link) {
  const Mechanism& m = s.mechanism();
  const RunOptions& o = s.options();
  nlohmann::json params = nlohmann::json::object();
  for (auto& [k, v] : s.params().items()) params[k] = v;
  // Where the clients reach the server: this host's address toward --remote-address, or (none
  // given) the one ssh came from, which the remote side reads from its SSH_CONNECTION.
  const std::string toward = link.options().address;
  link.send({{"op", "clients"},
             {"mechanism", m.full_name()},
             {"params", params},
             {"duration_s", o.duration_s},
             {"warmup_s", o.warmup_s},
             {"server_address", toward.empty() ? "" : address_toward(toward)}});
  // Each line from there comes within a window's timeout of the one before: the request for a
  // server, the phases, the end, the record (a capacity search asks for a server per point).
  const double quiet_s = o.timeout_s();
  for (;;) {
    const nlohmann::json j = link.receive(quiet_s, "its clients' run");
    if (j.contains("error"))
      throw std::runtime_error(
          fmt::format("the remote side on {}: {}", link.host(), j["error"].get<std::string>()));
    if (j.contains("record")) return adopt(s.record(), record_from_json(j["record"]), link.host());
    if (j.value("op", "") != "server") continue;
    // Its server, here, as the remote side starts one for a local run's clients.
    const std::string at = j.value("address", "");
    std::optional<ServerSide> side;
    try {
      side.emplace(m, s.params(), at, j.value("launch", nlohmann::json::object()));
    } catch (const std::exception& e) {
      link.send({{"error", fmt::format("{} server on {}: {}", m.full_name(), at, e.what())}});
      continue;
    }
    link.send({{"address", at}, {"port", side->port()}, {"reactor_cpus", side->reactor_cpus()}});
    uint64_t quiet_until = now_ns() + uint64_t(quiet_s * 1e9);
    side->follow([&](double, bool& eof) {
      eof = false;
      nlohmann::json c = link.try_receive(0.05, "the phases of its clients' run");
      if (!c.is_null())
        quiet_until = now_ns() + uint64_t(quiet_s * 1e9);
      else if (now_ns() >= quiet_until)
        throw std::runtime_error(fmt::format(
            "the remote side on {} sent nothing for {:.0f} s while its clients ran: it is frozen or the "
            "connection hangs",
            link.host(), quiet_s));
      return c;
    });
    link.send({{"result", side->finish(at)}});
  }
}

}  // namespace ipclab::remote
