#pragma once
// The servers suite's shared parts: the reference protocol (reference 001: nine greetings, each
// answered `pong\n`, then `exit`), the server process shared with the echo suite (a core/process
// child that reports its port through the readiness handshake), and the load generator.
#include <netinet/in.h>
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/cpu.hpp"
#include "core/histogram.hpp"
#include "core/mechanism.hpp"
#include "core/process.hpp"

namespace ipclab::servers {

// ---- protocol ------------------------------------------------------------------------------

/// The client's lines in order; every one but the last ("exit") is answered kPong.
extern const std::vector<std::string> kMessages;
inline constexpr char kPong[] = "pong\n";
inline constexpr size_t kPongLen = 5;

/// Per-connection line parser of a server: feed received bytes, get the reply bytes to send.
class ProtocolConn {
 public:
  enum class State { Open, Exit, Bad };
  /// Appends the replies for every complete line in data[0..n) to `out`; returns the state:
  /// Exit after an `exit` line (close the connection), Bad on an unknown line or a too-long one.
  State feed(const char* data, size_t n, std::string& out);

 private:
  char line_[32];
  size_t len_ = 0;
};

/// Serves one connection with blocking reads until `exit`, EOF or an error; closes it.
void serve_blocking(int fd);
/// Reads a non-blocking connection (until EAGAIN when `drain`, else once) and answers;
/// false when the caller must close it.
bool serve_ready(int fd, ProtocolConn& pc, bool drain);

/// One epoll reactor thread over `lfd` and its connections, level- or edge-triggered; forever.
void epoll_reactor(int lfd, bool edge);

// ---- server processes ----------------------------------------------------------------------

/// Raises RLIMIT_NOFILE's soft limit to the hard one; UsageError when `need` fds do not fit.
void ensure_nofile(uint64_t need, const std::string& what);
/// net.core.somaxconn: the kernel silently caps every listen backlog to it.
int somaxconn();
/// A TCP listener on 127.0.0.1:port (0 = ephemeral), non-blocking when asked, SO_REUSEPORT when asked.
int listen_tcp(int port, int backlog, bool nonblocking, bool reuseport);
int local_port(int fd);

/// A server running as its own process (core/process): started by fork (a function) or exec (a
/// peer binary); readiness = the port it wrote as a decimal line on the readiness pipe (stdout
/// for exec).
class ServerProcess {
 public:
  /// Forks `serve` on `cpu` (-1 unpinned); it must write "<port>\n" to `ready_fd`, then serve forever.
  static ServerProcess fork_fn(int cpu, const std::function<void(int ready_fd)>& serve);
  /// Execs argv on `cpu`; the executable prints "<port>\n" on stdout when it listens.
  static ServerProcess exec(int cpu, const std::vector<std::string>& argv);

  int port() const { return port_; }
  pid_t pid() const { return proc_.pid(); }
  /// Seconds on CPU so far, every live thread (Process::cpu_seconds: schedstat).
  double cpu_seconds() const { return proc_.cpu_seconds(); }
  /// False once the process has exited; `death()` then says how.
  bool alive() { return proc_.alive(); }
  /// "server " + how it ended by itself (describe_exit); "" while it runs and after stop().
  std::string death() const;
  /// After a symptom (a reset, a closed connection): true if the process is gone within `s`
  /// seconds — its sockets are closed slightly before it can be reaped.
  bool dies_within(double s) { return proc_.wait(s); }
  /// Kills (SIGKILL: a forked server inherits the harness's handlers) and reaps; whole-life CPU.
  CpuUsage stop();

 private:
  explicit ServerProcess(Process p);
  Process proc_;
  int port_ = 0;
};

// ---- load generator --------------------------------------------------------------------------

struct LoadConfig {
  int port = 0;
  int clients = 100;
  double connect_timeout_s = 5;
  double session_timeout_s = 10;
  /// Called every scan (~20 ms): returns a reason to abort ("" to go on), e.g. the server died.
  std::function<std::string()> abort_check;
};

struct LoadResult {
  uint64_t processed = 0, rejected = 0, lost = 0, corrupt = 0;
  uint64_t rejected_refused = 0, rejected_reset = 0, rejected_timeout = 0, rejected_other = 0;
  uint64_t lost_timeout = 0, lost_closed = 0;
  uint64_t progress = 0;  // connects, replies and session ends so far: the stall watchdog's heartbeat
  Histogram session, connect;  // ns
  double wall_s = 0;
  std::string abort_reason;
};

/// One event-driven wave: `clients` sessions started at once, non-blocking connects, one epoll,
/// the calling thread. Every reply is checked byte by byte.
void run_load(const LoadConfig& cfg, LoadResult& out);

// ---- mechanism glue --------------------------------------------------------------------------

/// What a server model does inside its process: serve `listen_fd` forever.
struct ServerModel {
  std::string name, help;
  /// Event-driven models must serve every client (0 rejected, 0 lost) or the record fails.
  bool event_driven = true;
  bool reuseport = false;           // one listener per reactor thread
  size_t max_concurrency = 0;       // 0 = no own limit (select: FD_SETSIZE)
  std::string max_why;
  std::vector<ParamSpec> extra_params;
  std::function<void(int listen_fd, const Params& p, const std::vector<int>& cpus, int backlog)> serve;
};

/// Registers `servers/<model.name>` with the suite's parameters and workload.
Mechanism make_mechanism(ServerModel model);
/// The model behind `servers/<name>` (nullptr when not built), for tests.
const ServerModel* find_model(const std::string& name);
/// Starts `m` as its own process: pinned to `cpu` (reactor models: one thread per `cpus` entry).
ServerProcess start_model(const ServerModel& m, const Params& p, int cpu, const std::vector<int>& cpus,
                          int backlog);

}  // namespace ipclab::servers
