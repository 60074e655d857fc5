#pragma once
// Shared by the library transports (ZeroMQ, nng, D-Bus): one parameter set, the refusals, and the base
// of their transports — the address, and the rendezvous through which the side that listens
// tells the side that connects where it listens (a TCP port the kernel chose), in memory a
// forked side shares.
#include <atomic>
#include <string>
#include <vector>

#include "core/mechanism.hpp"
#include "core/params.hpp"
#include "mechanisms/messaging/shm_transport.hpp"

namespace ipclab::libs {

/// pattern, size, mode, placement, endpoint (those of `endpoints`, the first the default: ipc | tcp |
/// inproc; none for a library that has one way only), then `extra`.
std::vector<ParamSpec> suite_params(const std::vector<std::string>& endpoints, std::vector<ParamSpec> extra = {});
/// Why `p` cannot run ("" when it can): inproc crosses no process.
std::string check(const Params& p);
/// A fresh path for a Unix socket in the run's private folder ("<run folder>/<tag><n>"), journaled
/// for the library that creates the socket; throws when it would not fit sun_path.
std::string socket_path(const std::string& tag);
/// One channel's meeting point: the listener publishes its address, the dialer waits for it.
struct Rendezvous {
  std::atomic<int> ready{0};
  char address[240] = {};
  void publish(const std::string& a);
  /// Waits (yielding, and ending with the run) until published; returns the address.
  std::string wait() const;
};

/// What every library transport holds: the address its listening side listens on (ipc:// a
/// socket in the run's private folder, removed with the transport; tcp:// 127.0.0.1 with the port
/// left to the kernel; inproc:// a name), the rendezvous in memory a forked side shares, and
/// what the record says of it (extra.library, extra.kernel_transport).
class LibraryTransport : public Transport {
 public:
  /// `tag` names its ipc socket; `library` is its name and version, e.g. "libzmq 4.3.4";
  /// `kernel_transport` what it rides on when the endpoint does not say (no endpoint parameter).
  LibraryTransport(const Params& p, const std::string& tag, std::string library, std::string kernel_transport = "");
  ~LibraryTransport() override;
  void describe(nlohmann::json& extra) const override;

 protected:
  const std::string endpoint_;
  std::string address_;  // a tcp:// address before the port: the library adds the syntax it wants
  Rendezvous& rendezvous() { return *static_cast<Rendezvous*>(rv_.get()); }

 private:
  std::string library_, kernel_transport_;
  messaging::SharedMapping rv_;
};

}  // namespace ipclab::libs
