#include "core/remote/remote.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "core/base/affinity.hpp"
#include "core/base/cancel.hpp"
#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/base/fs.hpp"
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

// A field of SSH_CONNECTION ("CLIENT_IP CLIENT_PORT SERVER_IP SERVER_PORT"), "" without it.
std::string ssh_connection(size_t field) {
  const char* c = getenv("SSH_CONNECTION");
  if (!c) return "";
  auto w = words(c);
  return w.size() > field ? w[field] : "";
}
// The address ssh reached this host at: the data path's default.
std::string ssh_server_address() { return ssh_connection(2); }
// The address ssh came from: the local side's, where its server is by default (--remote-role client).
std::string ssh_client_address() { return ssh_connection(0); }

// The data path of a transport in halves (Mechanism::half) in place of a socket type.
constexpr int kHalves = -2;

// One benchmark of a crossing transport, this host's end: the servers of its round-trip channels,
// or the consumers of its throughput channel, as threads of a worker block of their own (in the
// slots a local run gives them), following the phases the local side sends. Its destructor closes
// what it opened; a thread that cannot be stopped is left to the process's end.
class Bench {
 public:
  // Opens the channels (tcp: one listener; udp: a bound socket each; kHalves: `mech`'s receivers'
  // half, whose endpoints open in the threads); throws the reason. Round trips: a server per
  // channel; throughput (`p`'s pattern): one channel, `consumers` consumers.
  Bench(const Mechanism& mech, int type, std::string address, int channels, const Params& p, int consumers);
  ~Bench();
  Bench(const Bench&) = delete;
  Bench& operator=(const Bench&) = delete;

  std::vector<int> ports() const;
  // Once start()ed, in halves: waits (at most `timeout_s`) until its receivers listen — a library
  // listens as its receiver's endpoint opens — and returns "", or why they do not.
  std::string listening(double timeout_s) const;
  // UDP throughput's credit window (0: none), from this end's receive buffer.
  uint64_t credit_window() const { return credits_ ? credits_->window : 0; }
  // Starts a server (consumer) thread per channel (consumer), in the warm-up phase (the local
  // side sends only once its own warm-up has begun). `clock_offset_ns`: throughput's, this host's
  // CLOCK_MONOTONIC minus the senders'; `window_ns`: the run's --duration.
  void start(const Mechanism& mech, const Params& p, int64_t clock_offset_ns, uint64_t window_ns);
  // Follows the local side's phases until it ends the benchmark (end or abort, which it always
  // sends for its results) and the servers are done, or the stop's grace runs out. Reads all
  // that the local side sends for this benchmark, so none is taken for a request of the next.
  // False when the local side is gone.
  bool follow(const std::function<nlohmann::json(double, bool&)>& next, double timeout_s);
  // Stops the threads that did not end (named in the result's errors), then the result: their
  // CPU, the requests they served, this end's network path; of throughput, also what its consumers
  // counted — their integrity, ops, bytes, seen counts per producer and one-way latencies.
  nlohmann::json finish(bool local_side_lost);
  bool all_done() const { return done_.load() == n_; }

 private:
  void server_body(const Mechanism& mech, const Params& p, int i, int64_t clock_offset_ns,
                   uint64_t window_ns);
  void shutdown_all();
  nlohmann::json consumers_result() const;

  int type_, n_;
  bool throughput_, rate_;  // rate_: throughput's open loop (pattern=rate)
  int producers_;           // throughput: the senders there, whose slots come first (a local run's order)
  std::unique_ptr<transport::Credits> credits_;  // UDP throughput: returned on the socket
  std::string address_;
  int listener_ = -1;
  std::vector<int> fds_;             // one per channel (udp: bound; tcp: accepted as they come)
  std::unique_ptr<Transport> half_;  // kHalves: the receivers' half
  std::vector<std::thread> threads_;
  ControlBlock ctl_;  // a slot per sender there and per receiver here
  std::atomic<int> done_{0};
};

Bench::Bench(const Mechanism& mech, int type, std::string address, int channels, const Params& p,
             int consumers)
    : type_(type),
      throughput_(!std_params::is_roundtrip(p)),
      rate_(std_params::is_rate(p)),
      producers_(throughput_ ? int(p.i64_or("producers", 1)) : 0),
      address_(std::move(address)) {
  if (throughput_) channels = 1;
  n_ = throughput_ ? consumers : channels;
  fds_.assign(size_t(channels), -1);
  try {
    if (address_.empty())
      throw std::runtime_error("no address to listen on (no SSH_CONNECTION); give --remote-address");
    if (producers_ + n_ > kMaxWorkers)
      throw std::runtime_error(fmt::format("at most {} producers and consumers together", kMaxWorkers));
    ctl_ = make_control(producers_ + n_);
    if (type_ == kHalves) {
      half_ = mech.half(p, Half{.role = Role::Consumer, .address = address_});
    } else if (type_ == SOCK_STREAM) {
      listener_ = transport::bound_ipv4(SOCK_STREAM, address_);
      transport::check_rc(::listen(listener_, channels), "listen");
    } else {
      for (int& fd : fds_) fd = transport::bound_ipv4(SOCK_DGRAM, address_);
    }
    if (throughput_ && type_ == SOCK_DGRAM) {
      // UDP drops what its receive buffer cannot hold: the senders there keep the messages in
      // flight within what fits here, on credits this end returns on the socket.
      int buf = transport::kUdpRcvBuf, rcvbuf = 0;
      socklen_t len = sizeof rcvbuf;
      ::setsockopt(fds_[0], SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
      ::getsockopt(fds_[0], SOL_SOCKET, SO_RCVBUF, &rcvbuf, &len);
      credits_ = std::make_unique<transport::Credits>();
      credits_->window =
          transport::credit_window(uint64_t(p.i64_or("queue_depth", 256)), uint64_t(p.i64("size")), rcvbuf);
      credits_->ack_every = std::max<uint64_t>(1, credits_->window / 4);
      credits_->fd = fds_[0];
    }
  } catch (...) {
    for (int fd : fds_)
      if (fd >= 0) close(fd);
    if (listener_ >= 0) close(listener_);
    throw;
  }
}

Bench::~Bench() {
  for (auto& t : threads_)
    if (all_done())
      t.join();
    else
      t.detach();  // blocked for good: the process's end takes it (serve returns 1 first)
  if (!all_done()) {
    (void)ctl_.release();      // a detached server thread may still use its slot
    (void)credits_.release();  // and its credits
    (void)half_.release();     // and its transport
    return;
  }
  set_abort_flag(nullptr);
  for (int fd : fds_)
    if (fd >= 0) close(fd);
  if (listener_ >= 0) close(listener_);
}

std::vector<int> Bench::ports() const {
  if (half_) return {half_->listening_port()};
  if (type_ == SOCK_STREAM) return {local_port(listener_)};
  std::vector<int> out;
  for (int fd : fds_) out.push_back(local_port(fd));
  return out;
}

std::string Bench::listening(double timeout_s) const {
  const uint64_t deadline = now_ns() + uint64_t(timeout_s * 1e9);
  while (half_ && half_->listening_port() == 0) {
    if (done_.load() > 0) {  // a receiver ended before it listened: its error says why
      for (int i = producers_; i < producers_ + n_; ++i)
        if (ctl_->slot(i).error[0]) return ctl_->slot(i).error;
      return "a receiver ended before it listened";
    }
    if (now_ns() >= deadline) return fmt::format("its receivers did not listen within {:.0f} s", timeout_s);
    sleep_ns(1'000'000);
  }
  return "";
}

void Bench::start(const Mechanism& mech, const Params& p, int64_t clock_offset_ns, uint64_t window_ns) {
  set_abort_flag(&ctl_->abort);
  if (throughput_) ctl_->consumers_left.store(n_);  // the last to leave drains (patterns.cpp)
  ctl_->phase.store(kWarmup);
  for (int i = 0; i < n_; ++i)
    threads_.emplace_back([this, &mech, p, i, clock_offset_ns, window_ns] {
      server_body(mech, p, i, clock_offset_ns, window_ns);
    });
}

bool Bench::follow(const std::function<nlohmann::json(double, bool&)>& next, double timeout_s) {
  bool stopping = false, ended = false;
  uint64_t stop_deadline = 0;
  while (!(ended && all_done())) {
    bool eof = false;
    const nlohmann::json c = next(stopping ? 0.05 : -1, eof);
    if (eof) return false;
    const std::string o = c.is_object() ? c.value("op", "") : "";
    if (o == "quit") return false;
    if (o == "measure") ctl_->phase.store(kMeasure);
    if (o == "stop" || o == "end" || o == "abort") {
      if (!stopping) stop_deadline = now_ns() + uint64_t((o == "abort" ? 0.2 : timeout_s) * 1e9);
      stopping = true;
      ended = ended || o != "stop";
      ctl_->phase.store(kStop);
      if (o == "abort") ctl_->abort.store(1);
    }
    if (stopping && now_ns() >= stop_deadline) break;
  }
  return true;
}

void Bench::shutdown_all() {
  if (listener_ >= 0) ::shutdown(listener_, SHUT_RDWR);
  for (int fd : fds_)
    if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
}

nlohmann::json Bench::finish(bool local_side_lost) {
  std::vector<std::string> errors;
  if (!all_done()) {
    if (!local_side_lost && !ctl_->abort.load())
      errors.push_back(fmt::format("{} of {} {} got no stop marker from their {}", n_ - done_.load(), n_,
                                   throughput_ ? "consumers" : "servers",
                                   throughput_ ? "producers" : "clients"));
    ctl_->abort.store(1);
    shutdown_all();
    const uint64_t grace = now_ns() + 1'000'000'000ull;
    while (!all_done() && now_ns() < grace) sleep_ns(1'000'000);
  }
  CpuUsage cpu;
  uint64_t requests = 0;
  for (int i = producers_; i < producers_ + n_; ++i) {
    cpu += ctl_->slot(i).cpu;
    requests += ctl_->slot(i).progress.load();
    if (ctl_->slot(i).error[0]) errors.push_back(ctl_->slot(i).error);
  }
  const nlohmann::json path = fds_[0] >= 0 ? network_path(fds_[0]) : network_path_at(address_);
  nlohmann::json result = {
      {"cpu", cpu_json(cpu)}, {"requests", requests}, {"path", path}, {"errors", errors}};
  if (throughput_) result["consumers"] = consumers_result();
  return result;
}

// What the consumers counted, as the local side folds a local run's consumers' slots: the seen
// counts per producer are for its check of every message sent.
nlohmann::json Bench::consumers_result() const {
  Integrity in;
  uint64_t ops = 0, bytes = 0;
  std::vector<uint64_t> count(size_t(std::min(producers_, kMaxPeersTracked)), 0), seqsum(count.size(), 0);
  auto hist = std::make_unique<Histogram>();  // tens of KiB: on the heap
  for (int i = producers_; i < producers_ + n_; ++i) {
    const WorkerResult& s = ctl_->slot(i);
    in += s.integrity;
    ops += s.ops;
    bytes += s.bytes;
    hist->merge(s.hist);
    for (size_t p = 0; p < count.size(); ++p) {
      count[p] += s.seen_count[p];
      seqsum[p] += s.seen_seqsum[p];
    }
  }
  std::vector<uint64_t> values, counts;
  hist->sparse(values, counts);
  nlohmann::json rate;  // pattern=rate: the receivers' half of the trace, summed as fold_rate sums it
  if (rate_) {
    auto all = std::make_unique<RateTrace>();  // large: on the heap
    for (int i = producers_; i < producers_ + n_; ++i) all->merge(ctl_->slot(i).rate);
    std::vector<uint64_t> raw_values, raw_counts;
    all->raw.sparse(raw_values, raw_counts);
    rate = {{"raw_values", raw_values},
            {"raw_counts", raw_counts},
            {"slice_sum", std::vector<uint64_t>(std::begin(all->slice_sum), std::end(all->slice_sum))},
            {"slice_n", std::vector<uint64_t>(std::begin(all->slice_n), std::end(all->slice_n))}};
  }
  return {{"rate", rate},
          {"integrity",
           {{"received", in.received},
            {"duplicated", in.duplicated},
            {"reordered", in.reordered},
            {"corrupt", in.corrupt}}},
          {"ops", ops},
          {"bytes", bytes},
          {"seen_count", count},
          {"seen_seqsum", seqsum},
          {"latency_values", values},
          {"latency_counts", counts}};
}

// Round trips: channel i's server; throughput: consumer i of the one channel. Takes its connection
// (tcp: the next accepted; udp: connected to the sender of the first datagram, which stays queued:
// the consumers of one socket each connect it to the same sender), then echoes as every round-trip
// server does, or consumes as every throughput consumer does.
void Bench::server_body(const Mechanism& mech, const Params& p, int i, int64_t clock_offset_ns,
                        uint64_t window_ns) {
  WorkerResult& slot = ctl_->slot(producers_ + i);
  Worker w(*ctl_, slot, false);
  const size_t channel = throughput_ ? 0 : size_t(i);
  try {
    std::unique_ptr<Endpoint> ep;
    int fd = -1;
    if (half_) {
      ep = half_->open(Role::Consumer, i);
    } else if (type_ == SOCK_STREAM) {
      fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) throw std::system_error(errno, std::generic_category(), "accept");
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      fds_[channel] = fd;
      if (ctl_->abort.load()) ::shutdown(fd, SHUT_RDWR);
    } else {
      fd = fds_[channel];
      sockaddr_in from{};
      socklen_t len = sizeof from;
      char c;
      if (::recvfrom(fd, &c, 1, MSG_PEEK, reinterpret_cast<sockaddr*>(&from), &len) < 0 ||
          ::connect(fd, reinterpret_cast<sockaddr*>(&from), len) != 0)
        throw std::system_error(errno, std::generic_category(), "udp peer");
    }
    if (!ep)
      ep = std::make_unique<transport::FdEndpoint>(
          fd, fd, type_ == SOCK_STREAM ? transport::Framing::Stream : transport::Framing::Message, true,
          p.flag("nonblocking"), credits_.get());
    if (throughput_)
      serve_throughput(w, *ep, mech, p, i, clock_offset_ns, window_ns);
    else
      serve_roundtrip(w, *ep, mech, p);
  } catch (const std::exception& e) {
    if (!ctl_->abort.load())
      std::snprintf(slot.error, sizeof slot.error, "%s %d: %s", throughput_ ? "consumer" : "server", i,
                    e.what());
  }
  w.finish();
  slot.finished.store(1);
  done_.fetch_add(1);
}

}  // namespace

namespace {

// The context switches of process `pid`'s main thread so far (its /proc status).
CpuUsage switches_of(pid_t pid) {
  CpuUsage u;
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  std::string key;
  int64_t v;
  while (in >> key) {
    if (key == "voluntary_ctxt_switches:" && in >> v) u.ctx_vol = v;
    if (key == "nonvoluntary_ctxt_switches:" && in >> v) u.ctx_invol = v;
  }
  return u;
}

// What the local side asks a benchmark of: its mechanism (nullptr when there is none of that name,
// or `server` is asked and it has none), its parameters, and the address to listen on (its own
// --remote-address, or ssh's).
struct Request {
  std::string name;
  const Mechanism* mech = nullptr;
  Params params;
  std::string address;
};
Request request_of(const nlohmann::json& cmd, bool server) {
  Request r;
  r.name = cmd.value("mechanism", "");
  for (auto& m : Registry::get().mechanisms())
    if (m.full_name() == r.name && (!server || m.server)) r.mech = &m;
  for (auto& [k, v] : cmd["params"].items()) r.params.set(k, v.get<std::string>());
  r.address = cmd.value("address", "");
  if (r.address.empty()) r.address = ssh_server_address();
  return r;
}

}  // namespace

ServerSide::ServerSide(const Mechanism& mech, const Params& p, const std::string& address,
                       const nlohmann::json& launch)
    : mech_(mech) {
  if (address.empty())
    throw std::runtime_error("no address to listen on (no SSH_CONNECTION); give --remote-address");
  // As a local run does for its servers: RLIMIT_NOFILE's soft limit up to the hard one, which the
  // server inherits (10,000 clients need as many descriptors).
  ensure_nofile(0, "the remote server");
  RunOptions opts;
  Record rec;
  Session session(mech, p, opts, rec);
  ServerLaunch l = mech.server(session);
  l.nodelay = launch.value("nodelay", false);
  if (const size_t k = launch.value("reactors", size_t(1)); k > 1)
    l.reactor_cpus = round_robin(allowed_cpus(), 0, k);
  reactor_cpus_ = l.reactor_cpus;
  server_.emplace(ServerProcess::start(l, -1, address));
}

// Its CPU as a local server's is read (schedstat: one figure, charged as system time), and its
// context switches.
CpuUsage ServerSide::usage() {
  CpuUsage u = switches_of(server_->pid());
  u.sys_s = server_->process().cpu_seconds();
  return u;
}

bool ServerSide::follow(const std::function<nlohmann::json(double, bool&)>& next) {
  auto ends = [](const std::string& o) { return o == "end" || o == "abort" || o == "quit"; };
  for (;;) {
    bool eof = false;
    const nlohmann::json c = next(0.05, eof);
    if (eof) return false;
    const std::string o = c.is_object() ? c.value("op", "") : "";
    if (o == "measure" && !opened_) at_open_ = usage(), opened_ = true;
    if ((o == "stop" || ends(o)) && opened_ && !closed_) at_close_ = usage(), closed_ = true;
    if (ends(o)) return o != "quit";
    if (!server_->process().alive()) {
      errors_.push_back(fmt::format("its {} server {}", mech_.full_name(), server_->process().death()));
      break;
    }
  }
  for (;;) {  // it died: wait for the end to answer it
    bool eof = false;
    const nlohmann::json c = next(-1, eof);
    if (eof) return false;
    const std::string o = c.is_object() ? c.value("op", "") : "";
    if (ends(o)) return o != "quit";
  }
}

nlohmann::json ServerSide::finish(const std::string& address) {
  const CpuUsage life = server_->stop();
  const CpuUsage window = opened_ && closed_ ? at_close_ - at_open_ : CpuUsage{};
  CpuUsage whole;
  whole.sys_s = life.total_s();
  // This end of the path: the interface of the address it listened on.
  return {{"cpu", cpu_json(window)},
          {"cpu_whole_life", cpu_json(whole)},
          {"path", network_path_at(address)},
          {"errors", errors_}};
}

namespace {

// A server benchmark (echo, servers): its server here, then its phases as the local side sends
// them, then its result. False when the local side is gone.
bool serve_server(const nlohmann::json& cmd, const std::function<void(const nlohmann::json&)>& reply,
                  const std::function<nlohmann::json(double, bool&)>& next) {
  const Request r = request_of(cmd, true);
  if (!r.mech) {
    reply({{"error", fmt::format("{} has no server here", brief(r.name))}});
    return true;
  }
  std::optional<ServerSide> side;
  try {
    side.emplace(*r.mech, r.params, r.address, cmd.value("launch", nlohmann::json::object()));
  } catch (const std::exception& e) {
    reply({{"error", fmt::format("{} server: {}", r.mech->full_name(), e.what())}});
    return true;
  }
  reply({{"address", r.address}, {"port", side->port()}, {"reactor_cpus", side->reactor_cpus()}});
  const bool here = side->follow(next);
  const nlohmann::json result = side->finish(r.address);
  if (!here) return false;
  reply({{"result", result}});
  return true;
}

// --remote-role client: a server benchmark's clients here, its server on the local side's host. The
// benchmark runs here as a local run runs it (Mechanism::workload, in a Session of its own), its
// options carrying a link back to the local side (Link::back) as a local run's carry --remote's: its
// server is asked of the local side, the phases and the end go there. Its record goes back as the
// answer.
void serve_clients(const nlohmann::json& cmd, const std::function<void(const nlohmann::json&)>& reply,
                   Channel& channel) {
  const Request r = request_of(cmd, true);
  if (!r.mech) {
    reply({{"error", fmt::format("{} has no server to run clients against", brief(r.name))}});
    return;
  }
  std::string at = cmd.value("server_address", "");
  if (at.empty()) at = ssh_client_address();
  if (at.empty()) {
    reply({{"error", "no address of the local host (no SSH_CONNECTION here); give --remote-address"}});
    return;
  }
  RunOptions opts;
  opts.duration_s = cmd.value("duration_s", opts.duration_s);
  opts.warmup_s = cmd.value("warmup_s", opts.warmup_s);
  opts.cpus = allowed_cpus();  // this host's, as a run here without --cpus has them
  Record rec;
  rec.name = r.name;
  rec.suite = r.mech->suite;
  rec.mechanism = r.mech->name;
  rec.params = r.params;
  {
    const std::unique_ptr<Link> back = Link::back(at, at, channel);
    opts.remote = back.get();  // the run's link, as a local run's is --remote's
    try {
      Session s(*r.mech, r.params, opts, rec);
      s.run_workload([&] { r.mech->workload(s); });
    } catch (const std::exception& e) {  // bad input, which the local side checked already
      rec.fail(e.what());
    }
  }
  reply({{"record", to_json(rec)}});
}

// One benchmark of a crossing transport: its end of the channels, then its phases as the local
// side sends them, then its result. Returns what serve() returns when it must end: 0 to go on, 3
// when the local side is gone, 1 when a server thread cannot be stopped (this process ends instead).
int serve_bench(const nlohmann::json& cmd, const std::function<void(const nlohmann::json&)>& reply,
                const std::function<nlohmann::json(double, bool&)>& next) {
  const Request r = request_of(cmd, false);
  const auto type = crossing().find(r.name);
  const bool halves = r.mech && r.mech->half;
  if (!r.mech || (!halves && (type == crossing().end() || type->second == kServer))) {
    reply({{"error", fmt::format("{} cannot run here", brief(r.name))}});
    return 0;
  }
  std::optional<Bench> bench;
  try {
    bench.emplace(*r.mech, halves ? kHalves : type->second, r.address, std::max(1, cmd.value("channels", 1)),
                  r.params, std::max(1, cmd.value("consumers", 1)));
  } catch (const Skip& e) {  // this host lacks what it needs: the point is skipped there
    reply({{"error", e.what()}, {"skip", true}});
    return 0;
  } catch (const std::exception& e) {
    reply({{"error", e.what()}});
    return 0;
  }
  bench->start(*r.mech, r.params, cmd.value("clock_offset_ns", int64_t(0)),
               uint64_t(cmd.value("duration_s", 0.0) * 1e9));
  const double timeout_s = cmd.value("timeout_s", 30.0);
  if (const std::string why = bench->listening(timeout_s); !why.empty()) {
    (void)bench->finish(true);  // called off: its other receivers stop, none waits for a stop marker
    reply({{"error", why}});
    return bench->all_done() ? 0 : 1;
  }
  reply({{"address", r.address}, {"ports", bench->ports()}, {"credit_window", bench->credit_window()}});
  const bool here = bench->follow(next, timeout_s);
  const nlohmann::json result = bench->finish(!here);
  if (!here) return 3;
  reply({{"result", result}});
  return bench->all_done() ? 0 : 1;
}

}  // namespace

namespace {

// What ends this process when its clean-up after a silent channel does not: `grace_s` later, the
// clean-up a SIGTERM runs (core/ownership/cleanup.hpp: its run's objects, journal and folder
// removed; its children, which die with it, ended).
std::function<void()> end_after(double grace_s) {
  return [grace_s] {
    std::thread([grace_s] {
      sleep_ns(uint64_t(grace_s * 1e9));
      kill(getpid(), SIGTERM);
    }).detach();
  };
}

}  // namespace

int serve(const std::vector<std::string>& swept) {
  // A reply to a local side that is gone is an error (EPIPE): the caller's clean-up runs, where
  // SIGPIPE would end the process with its run folder left behind.
  signal(SIGPIPE, SIG_IGN);
  // The clock probe is answered as it is read, on the channel's thread (Link::estimate_clocks).
  Channel channel(STDIN_FILENO, STDOUT_FILENO, [](const std::string& line) -> std::optional<nlohmann::json> {
    if (line != R"({"op":"clock"})") return std::nullopt;
    return nlohmann::json{{"t", realtime_ns()}, {"m", now_ns()}};
  });
  auto reply = [&channel](const nlohmann::json& j) { channel.send(j); };
  nlohmann::json hello = identity();
  hello["ipclab_remote"] = 1;
  hello["environment"] = collect_environment("ipclab remote-side");
  hello["swept"] = swept;
  reply(hello);
  // Its own deadline on the channel from the start, at the default interval until the local side
  // names its own: a local side that never speaks, or whose link goes down, ends this one.
  channel.beat(Heartbeat{}, end_after(Heartbeat{}.grace_s()));
  bool eof = false;
  auto next = [&](double timeout_s) {
    const uint64_t deadline = timeout_s < 0 ? UINT64_MAX : now_ns() + uint64_t(timeout_s * 1e9);
    std::string line;
    if (!channel.next(line, deadline)) {
      eof = channel.end() != Channel::End::Open;
      return nlohmann::json(nullptr);
    }
    try {
      nlohmann::json j = nlohmann::json::parse(line);
      if (j.is_object()) return j;
    } catch (const std::exception&) {
    }
    return nlohmann::json({{"op", "?"}});
  };
  auto next_or_eof = [&](double timeout_s, bool& ended) {
    nlohmann::json j = next(timeout_s);
    ended = eof;
    return j;
  };
  for (;;) {
    nlohmann::json cmd = next(-1);
    if (eof) return 3;  // the connection is lost or silent: the caller sweeps the run folder
    const std::string op = cmd.contains("op") && cmd["op"].is_string() ? cmd["op"].get<std::string>() : "";
    if (op == "quit") return 0;
    if (op == "heartbeat") {
      Heartbeat h;  // one out of range (the local side checks the same) keeps the default: it is not answered
      try {
        h.interval_s = real(cmd, "interval_s", Heartbeat::kMin, Heartbeat::kMax, std::nullopt, "heartbeat");
      } catch (const BadReply&) {
        continue;
      }
      channel.beat(h, end_after(h.grace_s()));
      continue;
    }
    if (op == "clock") {  // spelled otherwise than the channel's thread answers it
      reply({{"t", realtime_ns()}, {"m", now_ns()}});
      continue;
    }
    if (op == "clients") {
      serve_clients(cmd, reply, channel);
      continue;
    }
    if (op == "server") {
      if (!serve_server(cmd, reply, next_or_eof)) return 3;
      continue;
    }
    if (op == "stop" || op == "end" || op == "abort" || op == "measure") {
      reply({{"result", {{"errors", {"no benchmark is running"}}}}});
      continue;
    }
    if (op != "bench") {
      reply({{"error", fmt::format("unknown request '{}'", brief(op))}});
      continue;
    }
    if (const int rc = serve_bench(cmd, reply, next_or_eof); rc != 0) return rc;
  }
}

}  // namespace ipclab::remote
