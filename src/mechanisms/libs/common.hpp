#pragma once
// Shared by the library transports (ZeroMQ, nng, gRPC, iceoryx, D-Bus): one parameter set, the
// refusals, and the base of their transports — the address, and the rendezvous through which the
// side that listens tells the side that connects where it listens (a TCP port the kernel chose),
// in memory a forked side shares.
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/params.hpp"
#include "core/model/mechanism.hpp"
#include "mechanisms/messaging/shm_transport.hpp"

namespace ipclab::libs {

/// The suite's largest message (the size parameter's maximum).
constexpr int64_t kMaxSize = 1 << 20;

/// pattern, size, mode, placement, endpoint (those of `endpoints`, the first the default: ipc | tcp |
/// inproc; none for a library that has one way only), then `extra`.
std::vector<ParamSpec> suite_params(const std::vector<std::string>& endpoints,
                                    std::vector<ParamSpec> extra = {});
/// The longest name socket_path() gives a socket in the run's folder (its tag and a count).
constexpr size_t kSocketNameMax = 12;
/// Why `p` cannot run ("" when it can): inproc crosses no process; a Unix socket in the run's folder
/// (endpoint=ipc, or always with `unix_socket`) whose path cannot fit sun_path with this TMPDIR.
std::string check(const Params& p, bool unix_socket = false);
/// For a library whose threads are process-wide and do not survive fork (nng, gRPC): once a run of
/// threads has started it in this process, a forked side could not start it again, so a
/// mode=processes point is then skipped with the reason (an ipclab run of its own never starts the
/// library in the parent). Asked in the transport's constructor, in the coordinating process.
class ForkRule {
 public:
  /// `why`: what a forked side cannot do once the library ran in its parent.
  explicit ForkRule(const char* library, const char* why = "its threads do not survive fork")
      : library_(library), why_(why) {}
  /// Throws Skip for mode=processes once mode=threads has run; notes a run of threads.
  void admit(const Params& p);

 private:
  const char* library_;
  const char* why_;
  std::atomic<bool> started_here_{false};
};

/// A fresh path for a Unix socket in the run's private folder ("<run folder>/<tag><n>"), journaled
/// for the library that creates the socket; throws when it would not fit sun_path.
std::string socket_path(const std::string& tag);

/// Why `p` cannot run across two hosts ("" when it can): only endpoint=tcp leaves the host.
std::string half_check(const Params& p);

/// One channel's meeting point: the listener publishes its address, the dialer waits for it. It
/// also carries the receiver's word that it has the stop marker, for a library whose sockets
/// cannot carry an acknowledgement back (ZeroMQ's PUSH/PULL are one-way). Across hosts (the
/// senders' half, Half) the address is the remote receiver's, published before any side opens,
/// and the receiver's word cannot come through this memory (`far`).
struct Rendezvous {
  std::atomic<int> ready{0};
  std::atomic<int> stop_taken{0};
  bool far = false;
  char address[240] = {};
  void publish(const std::string& a);
  /// Waits (yielding, and ending with the run) until published; returns the address.
  std::string wait() const;
  /// The receiver has the stop marker, so every message sent before it too.
  void take_stop() { stop_taken.store(1, std::memory_order_release); }
  /// Waits up to `timeout_s` (less once the run aborts) for take_stop(); true when it came; false at
  /// once when the receiver is `far`. Never throws: a sender's destructor calls it before closing
  /// its socket.
  bool wait_stop_taken(double timeout_s) const;
};

/// What every library transport holds: the address its listening side listens on (ipc:// a
/// socket in the run's private folder, removed with the transport; tcp:// 127.0.0.1 with the port
/// left to the kernel; inproc:// a name), the rendezvous in memory a forked side shares, and
/// what the record says of it (extra.library, extra.kernel_transport).
///
/// Across two hosts (--remote, endpoint=tcp) it is built in halves (Mechanism::half): the
/// receivers' half listens on the address the half names, and its listening port is what its
/// receiver published; the senders' half finds the remote receiver's address already published.
/// A tcp address in the rendezvous is "tcp://HOST:PORT" whatever the library (gRPC writes its own).
class LibraryTransport : public Transport {
 public:
  /// `tag` names its ipc socket; `library` is its name and version, e.g. "libzmq 4.3.4";
  /// `kernel_transport` what it rides on when the endpoint does not say (no endpoint parameter);
  /// `half`: this host's half across two hosts (nullptr: both sides here).
  LibraryTransport(const Params& p, const std::string& tag, std::string library,
                   std::string kernel_transport = "", const Half* half = nullptr);
  ~LibraryTransport() override;
  void describe(nlohmann::json& extra) const override;
  int listening_port() const override;

 protected:
  /// The messaging mechanism the report sets beside this one (extra.baseline), with the values of
  /// its own parameters that make it the fair comparison (e.g. shm_spsc wait=futex); by default
  /// the kernel transport of the endpoint (unix_stream, tcp; none in-process).
  void set_baseline(std::string mechanism, nlohmann::json params = nlohmann::json::object()) {
    baseline_ = {{"mechanism", std::move(mechanism)}, {"params", std::move(params)}};
  }
  const std::string endpoint_;
  std::string address_;  // a tcp:// address before the port: the library adds the syntax it wants
  Rendezvous& rendezvous() { return *static_cast<Rendezvous*>(rv_.get()); }
  const Rendezvous& rendezvous() const { return *static_cast<const Rendezvous*>(rv_.get()); }

 private:
  std::string library_, kernel_transport_;
  nlohmann::json baseline_;
  messaging::SharedMapping rv_;
};

}  // namespace ipclab::libs
