#pragma once
// What a mechanism is: one file fills in a `Mechanism` and registers it with IPCLAB_REGISTER.
// It provides exactly one of three things, and the harness does the rest (loop, clock, warm-up,
// placement, CPU accounting, integrity, output):
//   transport  moves messages; the harness drives it with the throughput and roundtrip patterns;
//   loop       one operation, repeated by the harness for the duration (null, syscall);
//   workload   a run with its own shape (servers, file IO, runtimes), built on `Session`.
// A mechanism that is a server (echo, servers) also says how to start it (`server`): its suite's
// workload starts it as a process (core/peers/server) and drives it with the suite's client.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/base/params.hpp"

namespace ipclab {

class Session;
struct Record;

/// Producer/consumer in the throughput pattern; client (producer) and server (consumer) in roundtrip.
enum class Role { Producer, Consumer };
/// The name a side of `role` goes by in records and in IPCLAB_FAULT: a round trip's client and
/// server, throughput's producer and consumer.
inline const char* role_name(Role role, bool roundtrip) {
  if (role == Role::Producer) return roundtrip ? "client" : "producer";
  return roundtrip ? "server" : "consumer";
}

/// One side's handle on a transport, opened inside the worker (thread or child process).
class Endpoint {
 public:
  virtual ~Endpoint() = default;
  /// Sends one message of `len` bytes; blocks until the transport has taken it.
  virtual void send(const std::byte* data, size_t len) = 0;
  /// Receives one message into `buf` (room for `len` bytes: every message of a run has that size);
  /// returns its length.
  virtual size_t recv(std::byte* buf, size_t len) = 0;

  // Zero copy (the bulk transports): a transport whose memory the two sides share can let the
  // sender write a message where the receiver will read it. The harness asks for both; the
  // defaults copy through the caller's buffer.
  /// Where the next message is to be written before send(), which then takes that place as
  /// `data`: the caller's own buffer `own` (the default), or the transport's own memory.
  virtual std::byte* send_buffer(std::byte* own, size_t len) {
    (void)len;
    return own;
  }
  /// Receives one message of `len` bytes and returns where it lies: in `buf` (the default), or in
  /// the transport's own memory, valid until this endpoint's next receive.
  virtual std::byte* recv_in_place(std::byte* buf, size_t len) {
    recv(buf, len);
    return buf;
  }
};

/// An endpoint that receives in place (it implements recv_in_place): a plain recv() is the same
/// receive with the message copied out to the caller's buffer.
class InPlaceEndpoint : public Endpoint {
 public:
  size_t recv(std::byte* buf, size_t len) final {
    const std::byte* at = recv_in_place(buf, len);
    if (at != buf) std::memcpy(buf, at, len);
    return len;
  }
  std::byte* recv_in_place(std::byte* buf, size_t len) override = 0;
};

/// Kernel or shared-memory objects of one run: created in the coordinating process before any
/// worker starts (so forked workers inherit them), destroyed (and unlinked) after all have ended.
class Transport {
 public:
  virtual ~Transport() = default;
  /// Opens the endpoint of worker `index` of `role`; called in that worker.
  virtual std::unique_ptr<Endpoint> open(Role role, int index) = 0;
  /// The kernel object's name, for the record (e.g. an mq name); "-" when it has none.
  virtual std::string object_name() const { return "-"; }
  /// Adds what the transport actually used to the record's `extra` (e.g. a queue depth capped
  /// to a kernel limit), so that results state the real configuration.
  virtual void describe(nlohmann::json& extra) const { (void)extra; }
  /// Called in the coordinating process once the transport exists, before any worker starts: a
  /// transport that rides on a process of its own (a library's daemon, core/peers/daemon.hpp) makes it
  /// a peer of the session there (Session::add_peer), so that its death fails the run and its CPU
  /// over the window is charged to the record under its role; one whose sides share memory makes
  /// that memory here, where the session knows the sides' CPUs, placed as -p memory= asks
  /// (Session::memory_policy).
  virtual void attach(Session& s) { (void)s; }
  /// Called in the coordinating process once the workers have ended (the run over, failed or not),
  /// before the transport goes: adds to the record what only the end of the run shows — where the
  /// kernel holds the pages the sides shared (numa::SharedMemory::describe).
  virtual void ended(Record& rec) const { (void)rec; }
  /// The receivers' half of a transport in halves (Half, Mechanism::half): the TCP port it listens
  /// on, once it does; 0 until then (a library listens as its receiver's endpoint opens).
  virtual int listening_port() const { return 0; }
};

/// One host's half of a transport whose two sides run on two hosts (--remote, core/remote/remote.hpp):
/// Consumer, the receivers' half (consumers, round-trip servers), listening on a TCP port the kernel
/// picks on `address`, an IPv4 address of its host (Transport::listening_port); Producer, the
/// senders' half, reaching the receivers at `address`:`port` on the other host. Each half opens
/// only its own role's endpoints. A half meets at one port: a transport of one connection.
struct Half {
  Role role;
  std::string address;
  int port = 0;
};

/// How a server mechanism starts, as its own process (core/peers/server.hpp): a function forked to serve
/// a listener the harness opened, or an executable that opens its own. Either way the process is
/// ready once it has reported its port, and it serves until it is killed.
struct ServerLaunch {
  /// Forked: serves `listen_fd` (TCP on 127.0.0.1, port chosen by the kernel), opened with the
  /// options below, until killed. With reactor_cpus, one reactor's loop: it runs on each of them.
  std::function<void(int listen_fd)> serve;
  int backlog = 1024;
  bool nonblocking = true;
  /// A server of several reactors (empty: one, the process's only thread, pinned as the process
  /// is): reactor i is a thread of the server's process pinned to reactor_cpus[i] (-1: unpinned),
  /// running `serve` on a listener of its own — SO_REUSEPORT listeners on the one port, all open
  /// before the port is reported, so that the kernel spreads every connection over all of them.
  std::vector<int> reactor_cpus;
  /// TCP_NODELAY on the listener, which accepted sockets inherit: for a client with several
  /// requests in flight per connection (echo pattern=rate), whose echoes Nagle would otherwise
  /// hold until the client's delayed ACK (40 ms).
  bool nodelay = false;
  /// Exec'd instead (argv[0] an absolute path): it listens on 127.0.0.1 port 0 itself and prints
  /// the port as one decimal line on stdout (docs/echo.md, peer server contract).
  std::vector<std::string> argv;
};

/// One operation of a loop benchmark.
class Loop {
 public:
  virtual ~Loop() = default;
  virtual void op() = 0;
  /// Bytes one op moves (counted into the record's bytes), 0 for none.
  virtual uint64_t bytes_per_op() const { return 0; }
  /// Ops timed together by one pair of clock reads: many for a cheap op, one for a long one.
  virtual uint64_t batch() const { return 1000; }
};

struct Mechanism {
  std::string suite, name, help;
  std::vector<ParamSpec> params;
  std::function<std::unique_ptr<Transport>(const Params&)> transport;
  std::function<std::unique_ptr<Loop>(const Params&)> loop;
  std::function<void(Session&)> workload;
  /// A server mechanism: how to start its server for a session (its parameters, CPUs and
  /// placement). Its suite's workload calls it; a Skip thrown here skips the benchmark.
  std::function<ServerLaunch(const Session&)> server;
  /// Why this combination of values cannot run ("" when it can): impossible combinations are
  /// left out of preset grids and rejected when asked for explicitly.
  std::function<std::string(const Params&)> check;
  /// A transport mechanism whose two sides can run on two hosts (--remote): builds one host's half
  /// of its transport (Half) — the same transport as a local run's, its endpoints opened there on
  /// the address given, with the same messages and checks. `half_check`: why these values cannot
  /// cross hosts ("" when they can), as the rest of a line "--remote: MECHANISM ..." that names the
  /// fix (e.g. a Unix socket endpoint: "endpoint=ipc ...; use -p endpoint=tcp").
  std::function<std::unique_ptr<Transport>(const Params&, const Half&)> half;
  std::function<std::string(const Params&)> half_check;

  std::string full_name() const { return suite + "/" + name; }
};

/// Suite-level declarations: help, the plots and scaling its report shows, and the leading CSV
/// columns a suite's reference used.
struct Suite {
  std::string name, help;
  /// The plots its readers expect, by name, in order (the report's builders are keyed by these:
  /// report/ipclab_report/suites.py `PLOTS`); none: the report's generic chart.
  std::vector<std::string> plots;
  /// The parameters it scales over: the report plots the rate and CPU per operation against each
  /// one that takes two values or more.
  std::vector<std::string> scaling;
  /// A table of its page (`ipclab report --pages`): the suite's records `where` accepts, one row
  /// each, a column per figure. `where` and the figures are names from the report's catalogs
  /// (report/ipclab_report/figures.py `WHERE`, `FIGURES`): "pattern=roundtrip" (a parameter's
  /// value), "pairs>1", "closed_loop", "open_loop", "capacity", "prefix=switch" (mechanisms named
  /// switch_*, under their rest), "" every record; a figure "latency:p50", "rate", "cpu", ...
  struct Table {
    std::string id;  // the notes' section that goes under it
    std::string title;
    std::string where;
    std::vector<std::pair<std::string, std::string>> figures;  // column header, figure
    std::string label = "mechanism";                           // the first column's header
    std::string across;             // a parameter whose values become column groups
    std::vector<std::string> hide;  // parameters a figure column shows already
  };
  /// Its page's tables, in order (records no table takes go under "Other benchmarks").
  std::vector<Table> tables;
  /// The questions its records answer on the report's first screen, by name (the report's
  /// builders are keyed by these: report/ipclab_report/answers.py `ANSWERS`).
  std::vector<std::string> answers;
  /// The suite whose records this one's are set beside (a library beside the transport it rides
  /// on: the figures "beside..." of its tables).
  std::string beside;
  /// The README's headline table (`ipclab report --readme`) is drawn from this suite's records.
  bool headline = false;
  /// Its benchmarks are the machine's floors: `ipclab compare` reads their drift as the run's noise.
  bool floors = false;
  std::vector<std::string> csv_columns;
  std::function<std::vector<std::string>(const Record&)> csv_row;
  /// The default preset's first answer: these of its mechanisms over this grid (the other
  /// parameters at their defaults) run before any other point of a run that selects the whole
  /// suite with nothing asked (`ipclab run`, `make bench`), and the console prints them as a table
  /// of their own under `title`. Points the CPUs or a mechanism cannot hold are left out.
  struct FirstAnswer {
    std::string title;
    std::vector<std::string> mechanisms;
    Overrides grid;
  };
  std::optional<FirstAnswer> first;
  /// Called after each repetition of the suite's benchmarks that completed (status ok), with its
  /// session: figures every record of the suite states (the bulk suite's bandwidth, CPU per MiB
  /// and fraction of memcpy), added to the record's `extra`.
  std::function<void(Session&)> finish;
};

/// An open-loop suite's two tables (a point at a requested rate; a capacity search) after its
/// `closed` ones: latency from each `op`'s intended send time, rows under `label`.
std::vector<Suite::Table> with_open_loop_tables(std::vector<Suite::Table> closed, const std::string& op,
                                                const std::string& what,
                                                const std::string& label = "mechanism");

class Registry {
 public:
  static Registry& get();
  void add(Mechanism m);
  void add(Suite s);
  const std::vector<Mechanism>& mechanisms() const { return mechanisms_; }
  const std::vector<Suite>& suites() const { return suites_; }
  /// Every suite that has a mechanism, in the registry's order (that of `list` and of runs).
  std::vector<std::string> suite_names() const;
  const Suite* suite(const std::string& name) const;

 private:
  std::vector<Mechanism> mechanisms_;
  std::vector<Suite> suites_;
};

struct Registrar {
  template <class T>
  explicit Registrar(T item) {
    Registry::get().add(std::move(item));
  }
};

#define IPCLAB_CONCAT2(a, b) a##b
#define IPCLAB_CONCAT(a, b) IPCLAB_CONCAT2(a, b)
/// Registers a Mechanism or a Suite at start-up: `IPCLAB_REGISTER(Mechanism{...});`
#define IPCLAB_REGISTER(...) \
  static const ::ipclab::Registrar IPCLAB_CONCAT(ipclab_registrar_, __COUNTER__) { __VA_ARGS__ }

}  // namespace ipclab
