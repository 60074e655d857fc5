#include "core/remote/remote.hpp"

#include <arpa/inet.h>
#include <dirent.h>
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
#include <set>
#include <sstream>
#include <thread>

#include "core/base/cancel.hpp"
#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/base/fs.hpp"
#include "core/base/params.hpp"
#include "core/machine/env.hpp"
#include "core/measure/session.hpp"
#include "core/model/std_params.hpp"
#include "core/peers/server.hpp"
#include "core/process/listener.hpp"
#include "core/remote/wire.hpp"
#include "core/run/patterns.hpp"
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

namespace {

// What a remote login shell may print before the remote ipclab's hello (a banner, a motd): beyond
// it, the shell is taken to print more than a login's greeting.
constexpr uint64_t kShellNoise = 1u << 20;

// HOST of [USER@]HOST, without brackets.
std::string bare_host(const std::string& host) {
  std::string h = host.substr(host.rfind('@') == std::string::npos ? 0 : host.rfind('@') + 1);
  if (h.size() > 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  return h;
}

bool host_is_loopback(const std::string& host) {
  const std::string h = bare_host(host);
  if (h == "localhost" || h == "localhost.localdomain" || h == "ip6-localhost" || h == "::1") return true;
  in_addr a{};
  return inet_pton(AF_INET, h.c_str(), &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}

// What kind of address `a` is when it cannot be a remote host's on a data path; nullptr when it can.
const char* unfit_kind(in_addr a) {
  const uint32_t h = ntohl(a.s_addr);
  if ((h >> 24) == 0) return "unspecified";
  if ((h >> 24) == 127) return "loopback";
  if ((h >> 28) == 0xE) return "multicast";
  if (h == 0xFFFFFFFFu) return "broadcast";
  return nullptr;
}

// The heartbeat's interval: IPCLAB_REMOTE_HEARTBEAT_S, or the default.
Heartbeat heartbeat_from_env(std::string& source) {
  Heartbeat h;
  source = "default";
  const char* e = std::getenv("IPCLAB_REMOTE_HEARTBEAT_S");
  if (!e) return h;
  const auto v = parse_real(e);
  if (!v || !(*v >= Heartbeat::kMin && *v <= Heartbeat::kMax))
    throw UsageError(fmt::format(
        "IPCLAB_REMOTE_HEARTBEAT_S '{}': give the seconds between the --remote channel's heartbeats, {:g} "
        "to {:g} (default {:g}), or unset it",
        brief(e, 40), Heartbeat::kMin, Heartbeat::kMax, Heartbeat{}.interval_s));
  h.interval_s = *v;
  source = "IPCLAB_REMOTE_HEARTBEAT_S";
  return h;
}

// The IPv4 address ssh's own connection reached: the peer of its established TCP socket, read from
// /proc (its descriptors, and its network namespace's TCP tables). "" when it has none — a proxy
// (ProxyJump, ProxyCommand) or a shared connection (ControlMaster) carries it — with `why` saying so,
// or when it reached the host over IPv6.
std::string ssh_reached(pid_t pid, std::string& why) {
  std::set<std::string> inodes;
  const std::string fds = fmt::format("/proc/{}/fd", pid);
  if (DIR* d = opendir(fds.c_str())) {
    while (dirent* e = readdir(d)) {
      char target[64] = {};
      const ssize_t n = readlinkat(dirfd(d), e->d_name, target, sizeof target - 1);
      const std::string t(target, n > 0 ? size_t(n) : 0);
      if (t.rfind("socket:[", 0) == 0 && t.back() == ']') inodes.insert(t.substr(8, t.size() - 9));
    }
    closedir(d);
  }
  for (const char* table : {"tcp", "tcp6"}) {
    std::ifstream in(fmt::format("/proc/{}/net/{}", pid, table));
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      const auto f = words(line);  // sl local rem st queues timer retransmits uid timeout inode ...
      if (f.size() < 10 || f[3] != "01" || !inodes.count(f[9])) continue;
      std::string hex = f[2].substr(0, f[2].find(':'));
      if (hex.size() == 32 && hex.compare(0, 24, "0000000000000000FFFF0000") == 0) hex = hex.substr(24);
      if (hex.size() != 8) {
        why = "ssh reached the host over IPv6; the data path is IPv4";
        continue;
      }
      in_addr a{};
      a.s_addr = uint32_t(std::strtoul(hex.c_str(), nullptr, 16));  // as the kernel printed it
      char text[INET_ADDRSTRLEN] = {};
      inet_ntop(AF_INET, &a, text, sizeof text);
      return text;
    }
  }
  if (why.empty())
    why =
        "ssh reaches the host through a proxy or a shared connection (ProxyJump, ProxyCommand, "
        "ControlMaster): the address it reached is not its own to read";
  return "";
}

// A port given to ssh (-p PORT, -pPORT, -o Port=PORT), for the fixes messages suggest; "" for none.
std::string ssh_port(const std::vector<std::string>& options) {
  std::vector<std::string> w;
  for (auto& o : options)
    for (auto& x : words(o)) w.push_back(x);
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i] == "-p" && i + 1 < w.size()) return w[i + 1];
    if (w[i].rfind("-p", 0) == 0 && w[i].size() > 2) return w[i].substr(2);
    if (w[i] == "-o" && i + 1 < w.size() && w[i + 1].rfind("Port=", 0) == 0) return w[i + 1].substr(5);
  }
  return "";
}

}  // namespace

std::string address_problem(const std::string& address, const std::string& host) {
  in_addr a{};
  if (inet_pton(AF_INET, address.c_str(), &a) != 1)
    return fmt::format("--remote-address '{}': give an IPv4 address of the remote host, e.g. 10.0.0.2",
                       brief(address));
  const char* kind = unfit_kind(a);
  if (!kind || (std::string(kind) == "loopback" && host_is_loopback(host))) return "";
  return fmt::format(
      "--remote-address {}: {} {} address is no address of {} to connect to; give the address of its "
      "interface the data path should cross (e.g. the one ssh reaches it at), or leave --remote-address out",
      address, kind[0] == 'u' ? "an" : "a", kind, brief(host, 80));
}

Link::Link(Options o) : o_(std::move(o)) {}

namespace {

// ssh's command line for `o` (ssh -o BatchMode=yes [--ssh-option...] HOST -- IPCLAB remote-side),
// and how long ssh may take to reach the host (its ConnectTimeout: the user's, or ours).
std::vector<std::string> ssh_argv(const std::string& ssh, const Options& o, double& connect_s) {
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
  connect_s = 10;
  for (size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == "-o" && argv[i + 1].rfind("ConnectTimeout=", 0) == 0) {
      connect_s = std::max(1.0, std::atof(argv[i + 1].c_str() + 15));
      break;
    }
  return argv;
}

}  // namespace

std::unique_ptr<Link> Link::connect(const Options& o) {
  const std::string ssh = find_program("ssh");
  if (ssh.empty()) throw UsageError("--remote needs OpenSSH's client (ssh) on PATH; install openssh-client");
  std::string beat_source;
  const Heartbeat beat = heartbeat_from_env(beat_source);
  std::unique_ptr<Link> link(new Link(o));
  double connect_s = 10;
  const std::vector<std::string> argv = ssh_argv(ssh, o, connect_s);
  // ssh's own ConnectTimeout bounds reaching the host; the remote ipclab then has as long again,
  // and 10 s more, to start and collect its environment block.
  const double hello_s = 2 * connect_s + 10;
  const std::string where = fmt::format("--remote {}", brief(o.host));
  link->start_ssh(argv);
  link->check_hello(link->await_hello(hello_s, where), where);
  link->start_heartbeat(beat, beat_source);
  link->take_data_address(where);
  link->estimate_context_clocks(where);
  return link;
}

// ssh started with its stdin, stdout and stderr on pipes to this side, the control channel over
// the first two.
void Link::start_ssh(const std::vector<std::string>& argv) {
  int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0 || pipe2(out, O_CLOEXEC) != 0 ||
      pipe2(err, O_CLOEXEC) != 0)
    throw std::system_error(errno, std::generic_category(), "pipe");
  ssh_ = Process::exec(Spawn{.stdin_fd = in[0], .stdout_fd = out[1], .stderr_fd = err[1]}, argv);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  in_ = in[1];
  out_ = out[0];
  err_ = err[0];
  own_ = std::make_unique<Channel>(out_, in_);
  channel_ = own_.get();
}

// The hello, within `hello_s`. A login shell may print before it (a banner, a motd): a little of
// that is let by. UsageError saying why when none came (explain_no_hello).
nlohmann::json Link::await_hello(double hello_s, const std::string& where) {
  Channel& channel = *channel_;
  nlohmann::json hello;
  std::string line;
  const uint64_t deadline = now_ns() + uint64_t(hello_s * 1e9);
  for (;;) {
    read_some(0);
    if (channel.next(line, std::min(deadline, now_ns() + 100'000'000))) {
      try {
        hello = nlohmann::json::parse(line);
      } catch (const std::exception&) {
        continue;  // a remote login's banner or motd on stdout: not ours
      }
      if (hello.is_object() && hello.contains("ipclab_remote")) break;
      hello = nullptr;
      continue;
    }
    if (channel.end() != Channel::End::Open || now_ns() >= deadline || channel.bytes_in() > kShellNoise)
      break;
  }
  if (hello.is_null()) explain_no_hello(hello_s, where);
  return hello;
}

// Why no hello came, as a UsageError naming the fix: a login shell that printed too much, no answer
// in time, or ssh's end (the host key unknown, ssh failing, no ipclab there, one that ended).
void Link::explain_no_hello(double hello_s, const std::string& where) {
  Channel& channel = *channel_;
  const uint64_t noise = channel.bytes_in();
  if (noise > kShellNoise || channel.end() == Channel::End::Overlong) {
    ssh_.stop(0);
    throw UsageError(fmt::format(
        "{}: the remote login shell printed {} bytes before the remote ipclab's answer (ipclab reads at "
        "most {} KiB of a banner); make the shell quiet for non-interactive sessions (print nothing from "
        "~/.bashrc, ~/.profile and the like unless the shell is interactive)",
        where, noise, kShellNoise >> 10));
  }
  if (channel.end() == Channel::End::Open) {
    ssh_.stop(0);
    throw UsageError(
        fmt::format("{}: no answer from the remote ipclab within {:.0f} s{}; check the host and that "
                    "`ssh {} {} remote-side` starts",
                    where, hello_s,
                    noise ? fmt::format(" (only {} bytes of something else: a login banner?)", noise) : "",
                    brief(o_.host), brief(o_.ipclab)));
  }
  ssh_.wait(5.0);
  read_some(0);
  const int status = ssh_.reaped() ? ssh_.status() : -1;
  const int code = status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  const std::string said = ssh_said();
  if (code == 255 && err_buf_.find("Host key verification failed") != std::string::npos) {
    const std::string port = ssh_port(o_.ssh_options), name = bare_host(o_.host);
    throw UsageError(fmt::format(
        "{}: ssh does not know the host's key ({}); check its fingerprint and add it to known_hosts: "
        "connect once with `ssh {}{}` and accept it, or `ssh-keyscan {}{} >> ~/.ssh/known_hosts`",
        where, said, port.empty() ? "" : "-p " + port + " ", brief(o_.host),
        port.empty() ? "" : "-p " + port + " ", brief(name)));
  }
  if (code == 255)
    throw UsageError(
        fmt::format("{}: ssh failed: {}; check the host, its port and the key "
                    "(--ssh-option '-p PORT', --ssh-option '-i KEY')",
                    where, said.empty() ? "no reason given" : said));
  if (code == 127 || code == 126)
    throw UsageError(
        fmt::format("{}: no ipclab at '{}' there ({}); install the same ipclab there, or "
                    "give its path with --remote-ipclab PATH",
                    where, brief(o_.ipclab), said.empty() ? "not found" : said));
  throw UsageError(
      fmt::format("{}: the remote ipclab '{}' ended before it said hello ({}{}); give the path "
                  "of the same ipclab with --remote-ipclab PATH",
                  where, brief(o_.ipclab), status >= 0 ? describe_exit(status) : "no status",
                  said.empty() ? "" : ": " + said));
}

// Both ends the same version and build, and the hello well formed: its CPUs, its sweep's lines.
void Link::check_hello(const nlohmann::json& hello, const std::string& where) {
  const nlohmann::json mine = identity();
  for (const char* k : {"version", "build_type", "build_flags"})
    if (!hello.contains(k) || hello[k] != mine[k])
      throw UsageError(
          fmt::format("{}: the remote ipclab '{}' is {}, this one is {}; run the same build on "
                      "both hosts (--remote-ipclab PATH names it there)",
                      where, brief(o_.ipclab), identity_text(hello), identity_text(mine)));
  try {
    const nlohmann::json& env = object(hello, "environment", "hello");
    remote_cpus_ = int(whole(object(env, "cpu", "hello.environment"), "logical_cpus", 1, 1 << 20,
                             std::nullopt, "hello.environment.cpu"));
    const nlohmann::json& swept = hello.value("swept", nlohmann::json::array());
    if (!swept.is_array() || swept.size() > 1000 ||
        !std::all_of(swept.begin(), swept.end(), [](auto& l) { return l.is_string(); }))
      throw BadReply(fmt::format("hello.swept is {}: want a list of lines", brief(swept.dump(), 60)));
  } catch (const BadReply& e) {
    throw UsageError(
        fmt::format("{}: the remote ipclab's hello is malformed ({}); its ipclab is not this one, "
                    "or something on that host alters its answers",
                    where, e.what()));
  }
  hello_ = hello;
}

// The heartbeat, both ways, from now on.
void Link::start_heartbeat(const Heartbeat& beat, const std::string& source) {
  channel_->send({{"op", "heartbeat"}, {"interval_s", beat.interval_s}});
  channel_->beat(beat);
  heartbeat_ = beat.to_json();
  heartbeat_["source"] = source;
}

// The data path's address: --remote-address (checked as it was parsed), or where ssh's own
// connection reached the host — never one the remote side names.
void Link::take_data_address(const std::string& where) {
  if (!o_.address.empty()) {
    address_ = o_.address;
    return;
  }
  std::string why;
  address_ = ssh_reached(ssh_.pid(), why);
  if (address_.empty())
    throw UsageError(fmt::format(
        "{}: {}; give the host's address for the data path with --remote-address ADDR", where, why));
  if (const std::string problem = address_problem(address_, o_.host); !problem.empty())
    throw UsageError(fmt::format(
        "{}: ssh reached it at {} (a tunnel or a forwarded port?), where the data path cannot follow; "
        "give the host's own address with --remote-address ADDR",
        where, address_));
}

// The clocks, as the run starts: the context's.
void Link::estimate_context_clocks(const std::string& where) {
  try {
    const auto [realtime, monotonic] = estimate_clocks();
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
    clock_ = json_of(realtime, "CLOCK_REALTIME");
    monotonic_ = monotonic.known() ? json_of(monotonic, "CLOCK_MONOTONIC") : nlohmann::json(nullptr);
  } catch (const std::exception& e) {
    throw UsageError(fmt::format("{}: {}", where, e.what()));
  }
}

// NTP's estimate over the channel — the remote's reading against the midpoint of the local send
// and receive — from the probe with the shortest round trip, whose half is the bound on the error.
// Each probe reads both clocks here as it is sent and its answer's arrival (as the channel's thread
// read it), and both there in one answer, given as the remote side's channel read the probe; each
// figure is checked: a whole number of nanoseconds.
std::pair<ClockOffset, ClockOffset> Link::estimate_clocks() {
  ClockOffset realtime, monotonic;
  int64_t best_rtt = -1;
  for (int i = 0; i < kClockProbes; ++i) {
    const uint64_t r0 = realtime_ns(), m0 = now_ns();
    send({{"op", "clock"}});
    const nlohmann::json r = receive(10.0, "its clock");
    // Its arrival as the channel's thread read it: the hand-over to this thread is no part of it.
    const uint64_t m3 = std::max(arrived_ns_, m0), r3 = r0 + (m3 - m0);
    int64_t t = 0;
    std::optional<int64_t> m;
    try {
      t = whole(r, "t", 0, INT64_MAX, std::nullopt, "clock");
      if (r.contains("m")) m = whole(r, "m", 0, INT64_MAX, std::nullopt, "clock");
    } catch (const BadReply& e) {
      throw BadReply(
          fmt::format("the remote side on {} answered its clock with a malformed figure: {}; its "
                      "ipclab is not this one, or something on that host alters its answers",
                      o_.host, e.what()));
    }
    const int64_t rtt = int64_t(m3 - m0);
    if (best_rtt >= 0 && rtt >= best_rtt) continue;
    best_rtt = rtt;
    realtime = {t - int64_t(r0 + (r3 - r0) / 2), int64_t(r3 - r0) / 2, int64_t(r3 - r0)};
    monotonic = m ? ClockOffset{*m - int64_t(m0 + (m3 - m0) / 2), rtt / 2, rtt} : ClockOffset{};
  }
  return {realtime, monotonic};
}

std::unique_ptr<Link> Link::back(const std::string& host, const std::string& server_address,
                                 Channel& channel) {
  std::unique_ptr<Link> link(new Link(Options{.host = host, .address = server_address}));
  link->back_ = true;
  link->channel_ = &channel;
  link->address_ = server_address;
  return link;
}

Link::~Link() {
  if (back_) return;  // the remote side's own channel: its caller's to end
  if (own_) {
    try {
      own_->send({{"op", "quit"}});
    } catch (const std::exception&) {
    }
    own_.reset();  // its thread, which beats on ssh's stdin, ends before that closes
  }
  if (in_ >= 0) close(in_);  // the end of its input: the remote side ends and sweeps its run folder
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
          {"data_address", address_},
          {"data_address_from", o_.address.empty() ? "the address ssh reached" : "--remote-address"},
          {"heartbeat", heartbeat_},
          {"environment", env},
          {"swept", hello_.value("swept", nlohmann::json::array())},
          {"clock", clock_},
          {"monotonic_clock", monotonic_}};
}

void Link::send(const nlohmann::json& j) {
  try {
    channel_->send(j);
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

std::string Link::lost() const {
  const Channel::End end = channel_ ? channel_->end() : Channel::End::Open;
  return end == Channel::End::Silent || end == Channel::End::Overlong
             ? fmt::format("the remote side on {} is taken for gone: {}", o_.host, channel_->end_text())
             : "";
}

nlohmann::json Link::try_receive(double timeout_s, const std::string& waiting_for) {
  const uint64_t deadline = now_ns() + uint64_t(timeout_s * 1e9);
  std::string line;
  for (;;) {
    read_some(0);  // ssh's stderr too, at least every 100 ms, for the messages that name its end
    if (channel_->next(line, std::min(deadline, now_ns() + 100'000'000), &arrived_ns_)) {
      try {
        auto j = nlohmann::json::parse(line);
        if (j.is_object()) return j;
      } catch (const std::exception&) {
      }
      continue;
    }
    if (!lost().empty()) {
      unresponsive_ = true;
      throw std::runtime_error(
          fmt::format("the remote side on {} is taken for gone while ipclab waited for {}: {}", o_.host,
                      waiting_for, channel_->end_text()));
    }
    if (channel_->end() != Channel::End::Open) {
      ssh_.wait(1.0);
      read_some(0);
      const int status = ssh_.reaped() ? ssh_.status() : -1;
      const bool code_255 = status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 255;
      throw std::runtime_error(fmt::format(
          "the remote side on {} ended while ipclab waited for {}{}{}", o_.host, waiting_for,
          status < 0 ? ""
          : code_255 ? " (ssh exited with 255: the connection failed, or the remote ipclab was killed)"
                     : " (ssh " + describe_exit(status) + ")",
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

// The remote side's role in the record: the round trips' server, or throughput's consumers.
std::string far_role(const Session& s, const Link& link) {
  return std::string(role_name(Role::Consumer, std_params::is_roundtrip(s.params()))) + "@" + link.host();
}

// The producers' (clients') ends of the channels, the remote side's ends being on its host: of a
// crossing socket mechanism, connected sockets to its ports; of a transport in halves (Half), its
// senders' half, reaching the receivers' half there at its port.
class RemoteTransport final : public Transport {
 public:
  // A socket mechanism's channels (`type`). `credit_window`: UDP throughput's, the remote
  // receiver's (0: none), its credits returned on the socket (transport::Credits).
  RemoteTransport(const Params& p, Link& link, int type, const std::string& address,
                  const std::vector<int>& ports, uint64_t credit_window)
      : link_(link), address_(address), ports_(ports) {
    size_t next = 0;
    auto make = [&]() {
      const int fd = transport::connected_ipv4(type, address, ports.at(type == SOCK_STREAM ? 0 : next++),
                                               "the remote side");
      if (path_.is_null()) path_ = network_path(fd);
      return transport::FdChannel{.prod_r = fd, .prod_w = fd};
    };
    inner_ = std::make_unique<transport::FdTransport>(
        p,
        transport::FdTransport::Options{
            .framing = type == SOCK_STREAM ? transport::Framing::Stream : transport::Framing::Message,
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
  void ended(Record& rec) const override { inner_->ended(rec); }
  void attach(Session& s) override {
    inner_->attach(s);
    const int senders = int(s.params().i64_or("producers", 1));
    Session* sp = &s;
    // Its progress is its senders' (each of their round trips is one of its echoes; their
    // messages stop once its consumers stop taking them).
    watch_far_server(
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

void watch_far_server(Session& s, Link& link, std::function<uint64_t()> progress, const std::string& role) {
  // The remote side, watched as a peer: ssh's end is its death (the connection lost, the remote
  // ipclab gone), and so is its silence past the heartbeat's deadline while ssh still runs (the
  // link down, the remote side frozen). Over a link back (Link::back) there is no ssh here: the
  // server's death is in its result, and the clients' watchdog names them stalled meanwhile.
  Link* l = &link;
  if (link.process().running())
    s.add_peer(PeerSpec{.role = role,
                        .process = &link.process(),
                        .progress = std::move(progress),
                        .cpu_usage = [] { return CpuUsage{}; },  // measured there, folded in after
                        .process_is = "the local ssh to it",
                        .lost = [l] { return l->lost(); }});
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

// An answer that failed its check, as the record's error.
std::string refused(const Link& link, const BadReply& e) {
  return fmt::format(
      "the remote side on {} answered what fails its check: {}; none of its answer is taken (a different or "
      "broken ipclab there, or something altering its answers)",
      link.host(), e.what());
}

// Fails the record with `why`, or adds it to the reason it failed for already.
void fail_too(Record& rec, const std::string& why) {
  if (rec.status == Status::Failed)
    rec.error += "; " + why;
  else
    rec.fail(why);
}

// The data path's address in an answer (`where`: its name) must be the one asked for.
void check_address(const nlohmann::json& r, const Link& link, const std::string& where) {
  const std::string at = text(r, "address", 64, std::nullopt, where);
  if (at != link.address())
    throw BadReply(
        fmt::format("{}.address is {}: the data path goes only to {} ({}), which it was asked to "
                    "listen on; it is not followed elsewhere",
                    where, brief(nlohmann::json(at).dump(), 60), link.address(),
                    link.options().address.empty() ? "where ssh reached the host" : "--remote-address"));
}

// A remote end's network path as the record keeps it: the fields network_path() gives, each checked.
nlohmann::json path_of(const nlohmann::json& r, const std::string& where) {
  const nlohmann::json& p = object(r, "path", where);
  const std::string w = where + ".path";
  nlohmann::json out = nlohmann::json::object();
  for (const char* k : {"address", "interface", "driver"})
    if (p.contains(k)) out[k] = text(p, k, 64, std::nullopt, w);
  if (p.contains("qdisc")) out["qdisc"] = text(p, "qdisc", 4096, std::nullopt, w);
  if (p.contains("mtu")) out["mtu"] = whole(p, "mtu", 0, 1 << 24, std::nullopt, w);
  if (p.contains("speed_mbps"))
    out["speed_mbps"] = whole(p, "speed_mbps", 0, int64_t(1) << 40, std::nullopt, w);
  return out;
}

// The errors the remote side reports, each a line.
std::vector<std::string> errors_of(const nlohmann::json& r, const std::string& where) {
  std::vector<std::string> out;
  if (!r.contains("errors")) return out;
  const nlohmann::json& e = r["errors"];
  if (!e.is_array() || e.size() > 256 ||
      !std::all_of(e.begin(), e.end(), [](auto& x) { return x.is_string(); }))
    throw BadReply(fmt::format("{}.errors is {}: want a list of lines", where, brief(e.dump(), 60)));
  for (auto& x : e) out.push_back(brief(x.get<std::string>(), 500));
  return out;
}

// Asks the far end for `op` ("server", "bench") of the session's benchmark, as its request_of
// (side.cpp) reads it: the mechanism, its parameters and where to listen (the data path's
// address, always), and `extra`. Returns its reply; throws what the far end said when it could not.
nlohmann::json ask(Session& s, Link& link, const char* op, const nlohmann::json& extra,
                   const std::string& waiting_for) {
  nlohmann::json params = nlohmann::json::object();
  for (auto& [k, v] : s.params().items()) params[k] = v;
  nlohmann::json req = {
      {"op", op}, {"mechanism", s.mechanism().full_name()}, {"params", params}, {"address", link.address()}};
  req.update(extra);
  link.send(req);
  auto r = link.receive(s.options().timeout_s(), waiting_for);
  if (r.contains("error")) {
    std::string why;
    bool skip = false;
    try {
      why = text(r, "error", 4096, std::nullopt, op);
      if (r.contains("skip") && !r["skip"].is_boolean())
        throw BadReply(fmt::format("{}.skip is {}: want true or false", op, brief(r["skip"].dump(), 60)));
      skip = r.value("skip", false);
    } catch (const BadReply& e) {
      throw std::runtime_error(refused(link, e));
    }
    // What the remote host lacks (a kernel feature, a library's) skips the point, as here.
    if (skip) throw Skip(fmt::format("on {}: {}", link.host(), why));
    throw std::runtime_error(fmt::format("the remote side on {}: {}", link.host(), why));
  }
  return r;
}

// Calls off what the remote side opened for a benchmark this side will not run (its answer failed
// its check, or its end cannot be reached), so that the link serves the next one.
void call_off(Link& link) {
  try {
    link.send({{"op", "abort"}});
    link.receive(2.5, "the end of its benchmark");
  } catch (const std::exception&) {
  }
}

}  // namespace

ServerAddress start_far_server(Session& s, Link& link, const ServerLaunch& launch) {
  const Mechanism& m = s.mechanism();
  const uint64_t asked_ns = now_ns();
  const size_t reactors = launch.reactor_cpus.size();
  const nlohmann::json asked = {{"nodelay", launch.nodelay}, {"reactors", reactors}};
  const auto r = ask(s, link, "server", {{"launch", asked}}, "its " + m.full_name() + " server");
  ServerAddress a;
  try {
    check_address(r, link, "server");
    const int port = int(whole(r, "port", 1, 65535, std::nullopt, "server"));
    const auto cpus = wholes(r, "reactor_cpus", std::max<size_t>(reactors, 1), 1 << 20, "server");
    if (reactors > 1 && cpus.size() != reactors)
      throw BadReply(
          fmt::format("server.reactor_cpus has {} CPUs: want {}, one per reactor", cpus.size(), reactors));
    a = {link.address(), port, std::vector<int>(cpus.begin(), cpus.end()), asked_ns};
  } catch (const BadReply& e) {
    call_off(link);
    throw std::runtime_error(refused(link, e));
  }
  s.record().extra["remote"] = {{"host", link.host()}, {"address", a.address}, {"ports", {a.port}}};
  s.record().extra["network_path"]["local"] = network_path_to(a.address, a.port);
  return a;
}

namespace {

// Ends the remote side's benchmark (abort after a failure: its servers may wait for requests that
// never come) and returns its results; null when they did not come or are not an object (the record
// fails, or says so too). A run that failed already (a stall: the remote side may be frozen) waits
// no longer than the remote side's own grace after an abort, doubled.
nlohmann::json end_benchmark(Session& s, Link& link) {
  Record& rec = s.record();
  const bool failed = rec.status == Status::Failed;
  try {
    link.send({{"op", failed ? "abort" : "end"}});
    const nlohmann::json r = link.receive(failed ? 2.5 : s.options().timeout_s(), "its results");
    if (!r.contains("result") || !r["result"].is_object())
      throw BadReply(fmt::format("its results are {}: want {{\"result\": {{...}}}}", brief(r.dump(), 60)));
    return r["result"];
  } catch (const BadReply& e) {
    fail_too(rec, refused(link, e));
    return nullptr;
  } catch (const std::exception& e) {
    if (!failed) rec.fail(e.what());
    return nullptr;
  }
}

// The CPU seconds a remote figure over `wall_s` seconds may reach on `cpus` CPUs: the window there
// opens and closes a channel's delay after this side's, hence the margin.
double cpu_bound(double wall_s, int cpus) { return (std::max(wall_s, 0.0) * 1.1 + 1.0) * std::max(cpus, 1); }

}  // namespace

std::pair<CpuUsage, CpuUsage> stop_far_server(Session& s, Link& link, const ServerAddress& at) {
  Record& rec = s.record();
  const bool failed = rec.status == Status::Failed;
  const nlohmann::json r = end_benchmark(s, link);
  if (r.is_null()) return {};
  CpuUsage window, life;
  nlohmann::json path;
  std::vector<std::string> errors;
  try {
    window = cpu_of(object(r, "cpu", "result"), cpu_bound(rec.wall_s, link.remote_cpus()), "result.cpu");
    life =
        cpu_of(object(r, "cpu_whole_life", "result"),
               cpu_bound(double(now_ns() - at.asked_ns) * 1e-9, link.remote_cpus()), "result.cpu_whole_life");
    path = path_of(r, "result");
    errors = errors_of(r, "result");
  } catch (const BadReply& e) {
    fail_too(rec, refused(link, e));
    rec.extra["cpu_by_role"].erase("server@" + link.host());  // the session's placeholder
    return {};
  }
  const std::string role = "server@" + link.host();
  rec.cpu += window;
  auto& by_role = rec.extra["cpu_by_role"];
  by_role[role] = cpu_json(window);
  by_role[role]["per_op_ns"] = rec.ops ? window.total_s() * 1e9 / double(rec.ops) : 0.0;
  by_role[role]["measured_on"] = link.host();
  rec.extra["network_path"]["remote"] = path;
  for (auto& e : errors)
    if (!failed) rec.fail(fmt::format("the remote side on {}: {}", link.host(), e));
  return {window, life};
}

BenchServer::BenchServer(Session& s, const ServerLaunch& launch, int cpu)
    : link_(s.options().remote), cpu_(cpu) {
  if (link_)
    far_ = start_far_server(s, *link_, launch);
  else
    local_.emplace(ServerProcess::start(launch, cpu));
}

void BenchServer::watch(Session& s, std::function<uint64_t()> progress) {
  if (link_) return watch_far_server(s, *link_, std::move(progress), "server@" + link_->host());
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
  if (link_) return stop_far_server(s, *link_, far_);
  const CpuUsage window = s.peer_cpu().at(0);
  return {window, local_->stop()};
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

std::unique_ptr<Transport> open_crossing_transport(Session& s, Link& link) {
  const Mechanism& m = s.mechanism();
  const auto it = crossing().find(m.full_name());
  if (it == crossing().end() && !m.half)
    throw std::logic_error("open_crossing_transport: " + m.full_name() + " does not cross");
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
  try {
    // Its answer: the address asked for, and as many ports as its end has channels (a socket
    // mechanism's UDP round trips: one per channel; otherwise one), each a port.
    check_address(r, link, "bench");
    const size_t want =
        !m.half && it->second == SOCK_DGRAM && roundtrip ? size_t(extra["channels"].get<int64_t>()) : 1;
    const auto listed = wholes(r, "ports", 64, 65535, "bench");
    if (listed.size() != want || std::count(listed.begin(), listed.end(), 0))
      throw BadReply(fmt::format("bench.ports is {}: want {} port{} from 1 to 65535",
                                 brief(r["ports"].dump(), 60), want, want == 1 ? "" : "s"));
    const std::vector<int> ports(listed.begin(), listed.end());
    if (m.half) return std::make_unique<RemoteTransport>(m, s.params(), link, link.address(), ports.at(0));
    // UDP throughput's credit window, sized there: at least one message, at most queue_depth.
    const uint64_t credit_window =
        roundtrip || it->second != SOCK_DGRAM
            ? 0
            : uint64_t(
                  whole(r, "credit_window", 1, s.params().i64_or("queue_depth", 256), std::nullopt, "bench"));
    return std::make_unique<RemoteTransport>(s.params(), link, it->second, link.address(), ports,
                                             credit_window);
  } catch (const BadReply& e) {
    call_off(link);
    throw std::runtime_error(refused(link, e));
  } catch (...) {
    // Not connected (a firewall, a wrong --remote-address): the remote side's servers wait for
    // connections that will not come; end its benchmark so that the link serves the next one.
    call_off(link);
    throw;
  }
}

namespace {

// What the remote side answered at the end of a transport's benchmark, each figure checked
// against what this side saw (check_far_result) before any of it is folded into the record.
struct FarResult {
  CpuUsage cpu;
  uint64_t requests = 0;
  nlohmann::json path;
  std::vector<std::string> errors;
  bool consumers = false;  // throughput: what its consumers counted
  Integrity integrity;
  uint64_t ops = 0, bytes = 0;
  std::vector<uint64_t> seen_count, seen_seqsum, latency_values, latency_counts;
  bool rate = false;
  std::vector<uint64_t> raw_values, raw_counts, slice_sum, slice_n;
};

// The sum of `counts`, BadReply naming `where` when it passes `hi` (or overflows on the way).
uint64_t sum_at_most(const std::vector<uint64_t>& counts, uint64_t hi, const std::string& where) {
  uint64_t sum = 0;
  for (uint64_t c : counts)
    if (__builtin_add_overflow(sum, c, &sum) || sum > hi)
      throw BadReply(fmt::format("{} add up to more than {}, the messages it took", where, hi));
  return sum;
}

// Checks the result `r` of `s`'s benchmark: CPU within the window on the remote side's threads
// (each of its servers or consumers at most one CPU), the requests it answered within what this
// side counted — at least the round trips answered here, at most every request or message sent
// here and the stop marker of each channel (consumer) — its consumers' counts within those
// requests, every count a whole number within int64 (sums of sequence numbers within uint64),
// lists no longer than they can be. BadReply names the first that fails.
FarResult check_far_result(const nlohmann::json& r, Session& s, const Link& link) {
  const Record& rec = s.record();
  const bool roundtrip = std_params::is_roundtrip(s.params());
  const int64_t producers = std::max<int64_t>(1, s.params().i64_or("producers", 1)),
                consumers = std::max<int64_t>(1, s.params().i64_or("consumers", 1));
  const int64_t threads = roundtrip ? producers : consumers;  // its servers, or its consumers
  FarResult f;
  f.cpu = cpu_of(object(r, "cpu", "result"),
                 cpu_bound(rec.wall_s, int(std::min<int64_t>(threads, link.remote_cpus()))), "result.cpu");
  const uint64_t sent = rec.integrity.sent, markers = uint64_t(roundtrip ? producers : consumers);
  const uint64_t lo = roundtrip ? rec.integrity.received : 0, hi = sent + markers;
  f.requests = uint64_t(whole(r, "requests", 0, INT64_MAX, std::nullopt, "result"));
  if (f.requests < lo || f.requests > hi)
    throw BadReply(fmt::format(
        "result.requests is {}: want {} to {} — {} sent here{}, and a stop marker per {}", f.requests, lo, hi,
        sent, roundtrip ? fmt::format(", {} of them answered", rec.integrity.received) : "",
        roundtrip ? "channel" : "consumer"));
  f.path = path_of(r, "result");
  f.errors = errors_of(r, "result");
  if (roundtrip) return f;
  // Throughput: its consumers' counts, each within the messages they took.
  if (!r.contains("consumers")) throw BadReply("result.consumers is missing: want its consumers' counts");
  f.consumers = true;
  const nlohmann::json& c = object(r, "consumers", "result");
  const nlohmann::json& in = object(c, "integrity", "result.consumers");
  const int64_t took = int64_t(f.requests);
  const std::string wi = "result.consumers.integrity";
  f.integrity.received = uint64_t(whole(in, "received", 0, took, 0, wi));
  f.integrity.duplicated = uint64_t(whole(in, "duplicated", 0, took, 0, wi));
  f.integrity.reordered = uint64_t(whole(in, "reordered", 0, took, 0, wi));
  f.integrity.corrupt = uint64_t(whole(in, "corrupt", 0, took, 0, wi));
  f.ops = uint64_t(whole(c, "ops", 0, took, 0, "result.consumers"));
  f.bytes = uint64_t(whole(c, "bytes", 0, INT64_MAX, 0, "result.consumers"));
  f.seen_count = wholes(c, "seen_count", size_t(producers), uint64_t(took), "result.consumers");
  f.seen_seqsum = wholes(c, "seen_seqsum", size_t(producers), UINT64_MAX, "result.consumers");
  sum_at_most(f.seen_count, uint64_t(took), "result.consumers.seen_count");
  f.latency_values = wholes(c, "latency_values", size_t(Histogram::kBuckets), UINT64_MAX, "result.consumers");
  f.latency_counts = wholes(c, "latency_counts", size_t(Histogram::kBuckets), INT64_MAX, "result.consumers");
  if (f.latency_values.size() != f.latency_counts.size())
    throw BadReply("result.consumers.latency_values and latency_counts differ in length");
  sum_at_most(f.latency_counts, uint64_t(took), "result.consumers.latency_counts");
  if (c.contains("rate") && !c["rate"].is_null()) {
    const nlohmann::json& rate = object(c, "rate", "result.consumers");
    const std::string wr = "result.consumers.rate";
    f.rate = true;
    f.raw_values = wholes(rate, "raw_values", size_t(Histogram::kBuckets), UINT64_MAX, wr);
    f.raw_counts = wholes(rate, "raw_counts", size_t(Histogram::kBuckets), INT64_MAX, wr);
    if (f.raw_values.size() != f.raw_counts.size())
      throw BadReply(wr + ".raw_values and raw_counts differ in length");
    sum_at_most(f.raw_counts, uint64_t(took), wr + ".raw_counts");
    f.slice_sum = wholes(rate, "slice_sum", size_t(RateTrace::kSlices), UINT64_MAX, wr);
    f.slice_n = wholes(rate, "slice_n", size_t(RateTrace::kSlices), uint64_t(took), wr);
  }
  return f;
}

}  // namespace

FarSeen fold_far_side(Session& s, Link& link) {
  Record& rec = s.record();
  const bool failed = rec.status == Status::Failed;
  const nlohmann::json r = end_benchmark(s, link);
  if (r.is_null()) return {};
  FarResult f;
  try {
    f = check_far_result(r, s, link);
  } catch (const BadReply& e) {
    fail_too(rec, refused(link, e));
    rec.extra["cpu_by_role"].erase(
        far_role(s, link));  // the session's placeholder: nothing measured is taken
    return {};
  }
  FarSeen seen;
  if (f.consumers) {  // throughput: what its consumers counted, as a local run's consumers do
    rec.integrity.received += f.integrity.received;
    rec.integrity.duplicated += f.integrity.duplicated;
    rec.integrity.reordered += f.integrity.reordered;
    rec.integrity.corrupt += f.integrity.corrupt;
    rec.ops += f.ops;
    rec.bytes += f.bytes;
    seen.count = f.seen_count;
    seen.seqsum = f.seen_seqsum;
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
      h.add_sparse(f.latency_values, f.latency_counts);
      if (h.count()) rec.latency = Latency::from("one_way", h);
    }
    if (f.rate) {
      seen.rate = std::make_unique<RateTrace>();
      seen.rate->raw.add_sparse(f.raw_values, f.raw_counts);
      for (size_t k = 0; k < size_t(RateTrace::kSlices) && k < f.slice_sum.size() && k < f.slice_n.size();
           ++k)
        seen.rate->slice_sum[k] = f.slice_sum[k], seen.rate->slice_n[k] = f.slice_n[k];
    }
  }
  const std::string role = far_role(s, link);
  rec.cpu += f.cpu;
  auto& by_role = rec.extra["cpu_by_role"];
  by_role[role] = cpu_json(f.cpu);
  by_role[role]["measured_on"] = link.host();
  // Every role's CPU per op, the remote side's ops (throughput's) now counted.
  for (auto& [name, c] : by_role.items())
    c["per_op_ns"] = rec.ops ? (c.value("user_s", 0.0) + c.value("sys_s", 0.0)) * 1e9 / double(rec.ops) : 0.0;
  rec.extra["remote"]["requests"] = f.requests;
  rec.extra["network_path"]["remote"] = f.path;
  for (auto& e : f.errors)
    if (!failed) rec.fail(fmt::format("the remote side on {}: {}", link.host(), e));
  return seen;
}

// ---------------------------------------------------------------------------------------------
// --remote-role client: the clients there, the server here.

namespace {

// This host's address on the route to `remote` (a connected UDP socket's own address: the connect
// sends nothing): where clients on that host reach a server here.
std::string address_toward(const std::string& remote) {
  const int fd = transport::connected_ipv4(SOCK_DGRAM, remote, 9, "the remote host");
  sockaddr_in me{};
  socklen_t len = sizeof me;
  const int rc = ::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len);
  ::close(fd);
  char name[INET_ADDRSTRLEN] = {};
  if (rc != 0 || !inet_ntop(AF_INET, &me.sin_addr, name, sizeof name))
    throw std::system_error(errno, std::generic_category(), "getsockname");
  return name;
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
  rec.steal = far.steal;  // of the CPUs there, over its window
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

// The remote side's record (--remote-role client), checked before it becomes this run's: its
// window within the `elapsed_s` its run took as seen here, its CPU within that window on both
// hosts' `cpus`, every count a whole number within int64, every latency figure too. BadReply names
// the first that fails.
void check_far_record(const nlohmann::json& j, double elapsed_s, int cpus) {
  const std::string w = "record";
  if (!j.is_object()) throw BadReply("record is not an object");
  const std::string status = text(j, "status", 16, "ok", w);
  if (status != "ok" && status != "failed" && status != "skipped")
    throw BadReply(fmt::format("record.status is {}: want ok, failed or skipped", brief(status, 20)));
  if (j.contains("error") && !j["error"].is_null()) text(j, "error", 4096, std::nullopt, w);
  whole(j, "ops", 0, INT64_MAX, std::nullopt, w);
  whole(j, "bytes", 0, INT64_MAX, 0, w);
  const double wall = j.contains("wall_s") && j["wall_s"].is_null()
                          ? 0.0
                          : real(j, "wall_s", 0, elapsed_s * 1.1 + 1.0, std::nullopt, w);
  const double max_cpu = cpu_bound(wall, cpus);
  const nlohmann::json& cpu = object(j, "cpu", w);
  cpu_of(cpu, max_cpu, "record.cpu");
  whole(cpu, "faults", 0, INT64_MAX, 0, "record.cpu");
  const nlohmann::json& in = object(j, "integrity", w);
  for (const char* k : {"sent", "received", "lost", "duplicated", "reordered", "corrupt"})
    whole(in, k, 0, INT64_MAX, 0, "record.integrity");
  if (j.contains("latency_ns") && !j["latency_ns"].is_null()) {
    const nlohmann::json& l = object(j, "latency_ns", w);
    for (const char* k : {"count", "min", "max", "p50", "p90", "p95", "p99", "p999"})
      if (l.contains(k) && !l[k].is_null()) whole(l, k, 0, INT64_MAX, std::nullopt, "record.latency_ns");
    if (l.contains("mean") && !l["mean"].is_null())
      real(l, "mean", 0, 1e18, std::nullopt, "record.latency_ns");
    if (l.contains("histogram")) {
      const nlohmann::json& h = object(l, "histogram", "record.latency_ns");
      wholes(h, "values", size_t(Histogram::kBuckets), UINT64_MAX, "record.latency_ns.histogram");
      sum_at_most(wholes(h, "counts", size_t(Histogram::kBuckets), INT64_MAX, "record.latency_ns.histogram"),
                  INT64_MAX, "record.latency_ns.histogram.counts");
    }
  }
  if (j.contains("rates") && !j["rates"].is_null())
    for (auto& [k, v] : object(j, "rates", w).items())
      if (v.is_number() || v.is_string()) real(j["rates"], k.c_str(), 0, 1e18, std::nullopt, "record.rates");
  const nlohmann::json& extra = object(j, "extra", w);
  for (auto& [role, c] : object(extra, "cpu_by_role", "record.extra").items())
    cpu_of(c, max_cpu, "record.extra.cpu_by_role." + brief(role, 40));
}

}  // namespace

namespace {

// The remote side's record of its clients' run (--remote-role client), checked, as `s`'s record;
// `t0`: when the run was asked for. Throws what fails its check.
void take_far_record(Session& s, Link& link, const nlohmann::json& j, uint64_t t0,
                     const std::string& refusal) {
  Record far;
  try {
    check_far_record(j["record"], double(now_ns() - t0) * 1e-9,
                     link.remote_cpus() + int(std::max(1u, std::thread::hardware_concurrency())));
    far = record_from_json(j["record"]);
  } catch (const BadReply& e) {
    throw std::runtime_error(refused(link, e));
  } catch (const std::exception& e) {
    throw std::runtime_error(refused(link, BadReply(fmt::format("record: {}", e.what()))));
  }
  adopt(s.record(), far, link.host());
  if (!refusal.empty()) fail_too(s.record(), refusal);
}

// The remote clients' request `j` for their server, checked: its launch (nodelay, reactors), on
// the address the clients were given (`toward`). BadReply names what fails.
nlohmann::json far_server_launch(const nlohmann::json& j, const std::string& toward) {
  const std::string at = text(j, "address", 64, std::nullopt, "server request");
  if (at != toward)
    throw BadReply(
        fmt::format("server request.address is {}: the server here listens only on {}, the "
                    "address its clients were given",
                    brief(nlohmann::json(at).dump(), 60), toward));
  const nlohmann::json& l = object(j, "launch", "server request");
  if (l.contains("nodelay") && !l["nodelay"].is_boolean())
    throw BadReply(fmt::format("server request.launch.nodelay is {}: want true or false",
                               brief(l["nodelay"].dump(), 60)));
  return {{"nodelay", l.value("nodelay", false)},
          {"reactors", whole(l, "reactors", 0, kMaxWorkers, 1, "server request.launch")}};
}

// One server for the remote clients, here, as the remote side starts one for a local run's clients:
// on the address the clients were given (`toward`), with at most as many reactors as a run has
// workers; it follows their phases (each line within `quiet_s` of the one before) and answers its
// result. `refusal`: the first request that failed its check, which fails the record once it comes.
void serve_far_clients_server(Session& s, Link& link, const nlohmann::json& j, const std::string& toward,
                              double quiet_s, std::string& refusal) {
  const Mechanism& m = s.mechanism();
  nlohmann::json launch;
  try {
    launch = far_server_launch(j, toward);
  } catch (const BadReply& e) {
    if (refusal.empty()) refusal = refused(link, e);
    link.send({{"error", fmt::format("refused here: {}", e.what())}});
    return;
  }
  std::optional<ServerSide> side;
  try {
    side.emplace(m, s.params(), toward, launch);
  } catch (const std::exception& e) {
    link.send({{"error", fmt::format("{} server on {}: {}", m.full_name(), toward, e.what())}});
    return;
  }
  link.send({{"address", toward}, {"port", side->port()}, {"reactor_cpus", side->reactor_cpus()}});
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
  link.send({{"result", side->finish(toward)}});
}

}  // namespace

void run_far_clients(Session& s, Link& link) {
  const Mechanism& m = s.mechanism();
  const RunOptions& o = s.options();
  nlohmann::json params = nlohmann::json::object();
  for (auto& [k, v] : s.params().items()) params[k] = v;
  // Where the clients reach the server: this host's address on the route to the data path's
  // address there. The server starts there only, whatever the remote side asks.
  const std::string toward = address_toward(link.address());
  const uint64_t t0 = now_ns();
  link.send({{"op", "clients"},
             {"mechanism", m.full_name()},
             {"params", params},
             {"duration_s", o.duration_s},
             {"warmup_s", o.warmup_s},
             {"server_address", toward}});
  // Each line from there comes within a window's timeout of the one before: the request for a
  // server, the phases, the end, the record (a capacity search asks for a server per point).
  const double quiet_s = o.timeout_s();
  std::string refusal;  // a request that failed its check: the record fails on it once it comes
  for (;;) {
    const nlohmann::json j = link.receive(quiet_s, "its clients' run");
    if (j.contains("error")) {
      std::string why;
      try {
        why = text(j, "error", 4096, std::nullopt, "clients");
      } catch (const BadReply& e) {
        throw std::runtime_error(refused(link, e));
      }
      throw std::runtime_error(fmt::format("the remote side on {}: {}", link.host(), why));
    }
    if (j.contains("record")) return take_far_record(s, link, j, t0, refusal);
    if (j.contains("op") && j["op"] == "server")
      serve_far_clients_server(s, link, j, toward, quiet_s, refusal);
  }
}

}  // namespace ipclab::remote
