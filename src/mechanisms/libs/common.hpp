#pragma once
// Shared by the library transports (ZeroMQ, nng): one parameter set, the refusals, and the
// rendezvous through which the side that listens tells the side that connects where it listens
// (a TCP port the kernel chose), in memory a forked side shares.
#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

#include "core/params.hpp"

namespace ipclab::libs {

/// pattern, size, mode, placement, endpoint (ipc | tcp | inproc), then `extra`.
std::vector<ParamSpec> suite_params(std::vector<ParamSpec> extra = {});
/// Why `p` cannot run ("" when it can): inproc crosses no process.
std::string check(const Params& p);
/// The kernel transport an endpoint kind rides on, for the record and the report's baseline.
const char* kernel_transport(const std::string& endpoint);

/// One channel's meeting point: the listener publishes its address, the dialer waits for it.
struct Rendezvous {
  std::atomic<int> ready{0};
  char address[240] = {};
  void publish(const std::string& a);
  /// Waits (yielding, and ending with the run) until published; returns the address.
  std::string wait() const;
};

/// Rendezvous in MAP_SHARED memory, one per channel, made before any worker forks.
class RendezvousSet {
 public:
  explicit RendezvousSet(size_t n);
  ~RendezvousSet();
  RendezvousSet(const RendezvousSet&) = delete;
  RendezvousSet& operator=(const RendezvousSet&) = delete;
  Rendezvous& operator[](size_t i) { return at_[i]; }

 private:
  Rendezvous* at_;
  size_t n_;
};

/// The address a channel listens on before the port is known: ipc:// a socket in the run's
/// private folder (removed with the run), tcp:// 127.0.0.1 port 0 (chosen by the kernel), or
/// inproc:// a name.
std::string listen_address(const std::string& endpoint, const std::string& tag);
/// Removes what listen_address() made a place for (an ipc socket the library left behind), once
/// the sides have closed.
void release_address(const std::string& address);

}  // namespace ipclab::libs
