#pragma once
// Two hosts (--remote, docs/remote.md): the benchmark's other side runs on another machine, as the
// same ipclab, started through OpenSSH — ssh does the authentication, the host keys and the
// encrypted control; ipclab adds no agent and no scheme of its own.
//
// The control channel is the ssh session: `ipclab remote-side` on the remote host reads one JSON
// object per line on its stdin and answers one per line on its stdout. The data path is a direct
// connection between the two ipclab processes, to the address this side chose (where ssh reached
// the host, or --remote-address) and a port the remote side reported over that channel. Both ends
// send a beat every heartbeat interval (detail::Heartbeat) and take the other for gone after five
// of them in silence. The remote side ends, and its run folder is swept (ipc::end_run), when its
// stdin ends or falls silent: a lost ssh connection, or a link that is down, stops it. Nothing it
// answers is taken unchecked: every figure is range-checked against what this side saw, and one
// that fails fails the record, naming the field.
//
//   remote → {"ipclab_remote":1, "version", "build_type", "build_flags", "environment", "swept"}   (hello)
//   local  → {"op":"heartbeat", "interval_s"}    (at once after the hello)
//   either → {"op":"beat"}                       (every interval; dropped by the channel)
//   local  → {"op":"clock"}                      remote → {"t": CLOCK_REALTIME ns, "m": CLOCK_MONOTONIC ns}
//   local  → {"op":"bench", "mechanism", "params", "channels", "consumers", "clock_offset_ns",
//             "address", "timeout_s"}            remote → {"address", "ports", "credit_window"} or {"error"}
//                                                ({"error", "skip": true}: that host lacks what it needs)
//             (a socket mechanism: its channels' ports; a transport in halves, Mechanism::half: the
//             port its receivers' half listens on, once its receivers' endpoints are open)
//   local  → {"op":"server", "mechanism", "params", "address"}   remote → {"address", "port"} or {"error"}
//   local  → {"op":"measure"} / {"op":"stop"}    (the measured window opens / closes)
//   local  → {"op":"end"} / {"op":"abort"}       remote → {"result": {cpu, requests, path, errors}}
//                                                (throughput: and its consumers' integrity, ops,
//                                                bytes, seen counts and one-way latencies)
//   local  → {"op":"quit"} (or the end of its stdin)
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/mechanism.hpp"
#include "core/peers/server.hpp"
#include "core/process/process.hpp"
#include "core/run/patterns.hpp"

namespace ipclab {

class Session;

namespace remote {

namespace detail {
class Channel;
struct Heartbeat;
}  // namespace detail

/// What --remote and its companions asked for.
struct Options {
  std::string host;                      // [USER@]HOST, as ssh takes it
  std::vector<std::string> ssh_options;  // --ssh-option, each passed to ssh as it was given (split at blanks)
  std::string ipclab = "ipclab";         // --remote-ipclab: its path there (default: on the remote PATH)
  std::string address;                   // --remote-address: where the data path goes ("": ssh's own address)
  bool far_clients = false;  // --remote-role client: a server benchmark's clients there, its server here
};

/// Why `address` cannot be the data path's address on `host` (--remote-address), as one line naming
/// the fix; "" when it can: an unspecified, loopback, multicast or broadcast address cannot, unless
/// the host itself is this machine's loopback.
std::string address_problem(const std::string& address, const std::string& host);

/// Why `m` with `p` cannot run across two hosts ("" when it can), as one line naming the fix;
/// `far_clients`: with its clients there and its server here (--remote-role client).
std::string crossing_problem(const Mechanism& m, const Params& p, bool far_clients = false);

/// An NTP-style estimate of how far one of the remote host's clocks is from the same clock here.
struct ClockOffset {
  int64_t offset_ns = 0;        // the remote clock minus this host's
  int64_t uncertainty_ns = -1;  // the true offset lies within ± this (half the best round trip); < 0: none
  int64_t rtt_ns = 0;           // the round trip of the probe it comes from
  bool known() const { return uncertainty_ns >= 0; }
};

/// The ssh session to the remote side, for the whole run.
class Link {
 public:
  /// Starts `ssh -o BatchMode=yes [--ssh-option...] HOST -- IPCLAB remote-side`, reads the remote
  /// side's hello, checks that both are the same version and build, starts the heartbeat
  /// (IPCLAB_REMOTE_HEARTBEAT_S), takes the data path's address (--remote-address, or the one ssh's
  /// own connection reached) and estimates the offset between the two hosts' clocks over the
  /// channel. Every failure (host unreachable, key refused or unknown, ipclab missing or different
  /// there, a login shell that prints too much, a malformed answer) is a UsageError of one line:
  /// nothing has run yet.
  static std::unique_ptr<Link> connect(const Options& o);
  /// The other way round, on the remote host (--remote-role client): the remote side's channel
  /// back to the local one (`channel`, its stdin and stdout), for a server benchmark whose server
  /// is on the local host, at `server_address` (whose name is `host` in the record). It quits
  /// nothing at its end: the channel is the remote side's.
  static std::unique_ptr<Link> back(const std::string& host, const std::string& server_address,
                                    detail::Channel& channel);
  ~Link();  // quits the remote side (it sweeps its run folder) and reaps ssh; kills it if it hangs

  const Options& options() const { return o_; }
  const std::string& host() const { return o_.host; }
  /// The data path's address on the remote host: --remote-address, or the one ssh reached it at.
  /// Every request names it and every answer must: the data path goes nowhere else.
  const std::string& address() const { return address_; }
  /// The remote host's CPUs (its hello), which bound the CPU time it may report.
  int remote_cpus() const { return remote_cpus_; }
  /// "" while the remote side is heard from; else why it is taken for gone (silent past the
  /// heartbeat's deadline, or a line past the channel's limit), for the session's peer watch.
  std::string lost() const;
  /// What the run's context records: the host, the remote's environment block, the clock estimate.
  nlohmann::json context() const;
  /// Sends one control line.
  void send(const nlohmann::json& j);
  /// The next control line, waiting at most `timeout_s`; std::runtime_error naming the host and
  /// `waiting_for` when none came (the connection lost, ssh ended, the remote side frozen).
  nlohmann::json receive(double timeout_s, const std::string& waiting_for);
  /// The next control line if one comes within `timeout_s` (null otherwise); throws what receive()
  /// throws when the remote side ended.
  nlohmann::json try_receive(double timeout_s, const std::string& waiting_for);
  Process& process() { return ssh_; }
  /// Estimates both clocks' offsets now (16 probes over the channel; the shortest round trip's):
  /// CLOCK_REALTIME (the context's) and CLOCK_MONOTONIC (the harness's, now_ns: the one-way
  /// latency's). Throws what receive() throws.
  std::pair<ClockOffset, ClockOffset> estimate_clocks();

 private:
  explicit Link(Options o);
  std::string ssh_said() const;  // ssh's last stderr line, for messages
  void read_some(int ms);        // one poll over ssh's stderr
  // Link::connect's steps, in order (connect says what each checks).
  void start_ssh(const std::vector<std::string>& argv);
  nlohmann::json await_hello(double hello_s, const std::string& where);
  [[noreturn]] void explain_no_hello(double hello_s, const std::string& where);
  void check_hello(const nlohmann::json& hello, const std::string& where);
  void start_heartbeat(const detail::Heartbeat& beat, const std::string& source);
  void take_data_address(const std::string& where);
  void estimate_context_clocks(const std::string& where);
  Options o_;
  Process ssh_;
  int in_ = -1, out_ = -1, err_ = -1;
  std::string err_buf_;
  std::unique_ptr<detail::Channel> own_;  // Link::connect's channel over ssh
  detail::Channel* channel_ = nullptr;    // own_, or the remote side's own (Link::back)
  std::string address_;
  int remote_cpus_ = 1;
  uint64_t arrived_ns_ = 0;  // when the line receive() returned last was read (now_ns)
  nlohmann::json hello_, clock_, monotonic_, heartbeat_;
  bool unresponsive_ = false;  // a receive() timed out: the remote side is frozen or unreachable
  bool back_ = false;          // Link::back: the remote side's own channel, no ssh of its own
};

/// The local end of a benchmark whose other side is remote (transport_point): asks the remote side
/// to open its end, connects to it (a transport in halves: builds its senders' half, to the port
/// the receivers' half there listens on), and makes the remote side a peer of the session — its
/// death (ssh ended) fails the run, and the phases go to it as they change.
std::unique_ptr<Transport> open_crossing_transport(Session& s, Link& link);
/// After the run: the remote side's results (its CPU and context switches over the window, as a
/// role of its own; its errors; its end of the network path) into the record; of throughput, also
/// its consumers' integrity, ops, bytes and one-way latencies (extra.one_way: the clock offset they
/// are corrected by, and its uncertainty), and what they saw of each producer's messages.
FarSeen fold_far_side(Session& s, Link& link);

/// The transport pattern's receivers on the link's host (run_transport's `far`): open_crossing_transport
/// and fold_far_side over `link`, which must outlive it.
class LinkReceivers final : public FarReceivers {
 public:
  explicit LinkReceivers(Link& link) : link_(link) {}
  std::unique_ptr<Transport> open_transport(Session& s) override { return open_crossing_transport(s, link_); }
  FarSeen fold_far_side(Session& s) override { return remote::fold_far_side(s, link_); }

 private:
  Link& link_;
};

/// Where a server on the remote host listens.
struct ServerAddress {
  std::string address;
  int port = 0;
  std::vector<int> reactor_cpus;  // that host's CPUs its reactors are pinned to (one reactor: none)
  uint64_t asked_ns = 0;          // when it was asked for (now_ns): its whole life's CPU is bounded by it
};
/// A server mechanism's server (echo) on the remote host: its ipclab starts it there as a local
/// run would (Mechanism::server, core/peers/server), listening on the data path's address, with what
/// `launch` asks beyond the mechanism's own (TCP_NODELAY; as many reactors, pinned round-robin
/// over that host's CPUs).
ServerAddress start_far_server(Session& s, Link& link, const ServerLaunch& launch);
/// Makes the remote server a peer of the session (its death — ssh's end — fails the run; its
/// heartbeat is `progress`, its clients' echoes) and sends it the phases as they change.
/// `role`: the remote side's role in the record (server@HOST, or consumer@HOST for throughput).
void watch_far_server(Session& s, Link& link, std::function<uint64_t()> progress, const std::string& role);
/// Stops the remote server `at`: its CPU over the measured window and over its whole life, measured
/// there (schedstat, as a local server's: charged as system time); a failed record on its errors,
/// or on a figure that fails its check (named).
std::pair<CpuUsage, CpuUsage> stop_far_server(Session& s, Link& link, const ServerAddress& at);

/// The server of a server benchmark (echo, servers), wherever it runs: here, a ServerProcess the
/// session watches as its peer; with the run's link (--remote: the session's RunOptions::remote), on
/// the other host, started, watched and stopped through the link (start_far_server,
/// watch_far_server, stop_far_server). The one way both suites start, watch and stop their server.
class BenchServer {
 public:
  /// Starts it: here, `launch` pinned to `cpu`; there, as the remote side launches it.
  BenchServer(Session& s, const ServerLaunch& launch, int cpu);
  int port() const { return link_ ? far_.port : local_->port(); }
  /// Where the clients connect: "" (loopback) here, the remote side's address there.
  const std::string& address() const { return far_.address; }
  /// Watches it as the session's peer, `progress` its clients' count.
  void watch(Session& s, std::function<uint64_t()> progress);
  /// Stops it once the session's workers are done: its CPU over the measured window and over its
  /// whole life.
  std::pair<CpuUsage, CpuUsage> stop(Session& s);
  /// Its reactors as sides of the placement (core/peers/server.hpp): here, on `launch`'s CPUs; there,
  /// as reactor@HOST on that host's.
  void add_reactor_sides(Placement& placement, const ServerLaunch& launch) const;
  /// The host it ran on, when not this one ("").
  std::string measured_on() const { return link_ ? link_->host() : ""; }

 private:
  Link* link_;
  int cpu_;
  std::optional<ServerProcess> local_;
  ServerAddress far_;
};

/// --remote-role client: runs `s`'s benchmark with its server here and its clients there. The
/// remote side runs the benchmark as a local run would, its server being this host's: it asks for
/// it (this side starts it as the remote side starts one, ServerSide), sends the phases, and at the
/// end its record, which becomes `s`'s — its clients' roles named after the host, the server's CPU
/// measured here.
void run_far_clients(Session& s, Link& link);

/// One server mechanism's server (echo, servers) on the host it is asked of — the remote one, or
/// with --remote-role client this one — started as a local run starts it (Mechanism::server),
/// listening on `address`, with what the asking side's launch needs beyond the mechanism's own
/// (`launch`: TCP_NODELAY; its number of reactors, pinned round-robin over this host's CPUs);
/// measured over the window the asking side's phases set, and stopped at the benchmark's end. Its
/// destructor stops it whatever happened.
class ServerSide {
 public:
  /// Starts it; throws the reason it cannot.
  ServerSide(const Mechanism& mech, const Params& p, const std::string& address,
             const nlohmann::json& launch);
  int port() const { return server_->port(); }
  /// This host's CPUs its reactors were pinned to (none with one reactor: the process is unpinned).
  const std::vector<int>& reactor_cpus() const { return reactor_cpus_; }
  /// Follows the asking side until it ends the benchmark (end or abort; quit or the end of input:
  /// it is gone): `measure` opens the window, the first stop, end or abort closes it. A server that
  /// dies is named in the errors, and the end is then awaited to answer it. False when the asking
  /// side is gone. `next(timeout_s, eof)`: its next control line, null when none came in time.
  bool follow(const std::function<nlohmann::json(double, bool&)>& next);
  /// Stops the server; the result: its CPU over the window and its whole life, this end's path.
  nlohmann::json finish(const std::string& address);

 private:
  CpuUsage usage();
  const Mechanism& mech_;
  std::optional<ServerProcess> server_;
  std::vector<int> reactor_cpus_;
  CpuUsage at_open_, at_close_;
  bool opened_ = false, closed_ = false;
  std::vector<std::string> errors_;
};

/// `ipclab remote-side`: the remote end, over its stdin and stdout; `swept`: what its run's sweep
/// removed of runs there that died, which the hello carries to the local side (its stderr is
/// ssh's, whose last line names a failure). Returns the exit code.
int serve(const std::vector<std::string>& swept);

/// The network path of a connected socket, as this host sees it: the interface its local address
/// is on, its MTU, driver, link speed (where known) and queueing discipline.
nlohmann::json network_path(int fd);

}  // namespace remote
}  // namespace ipclab
