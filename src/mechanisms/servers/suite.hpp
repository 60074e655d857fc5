#pragma once
// The servers suite (reference 001): each server model runs as its own process, started from the
// mechanism's `server` hook (core/peers/server), and serves clients of the protocol (protocol.hpp) from
// the load generator (loadgen.hpp), a Session worker: one wave of `concurrency` sessions
// (pattern=closed), or sessions arriving at a rate (pattern=rate, core/run/openloop). A model file
// fills in a ServerModel and registers make_mechanism(model).
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/model/mechanism.hpp"

namespace ipclab::servers {

/// What a server model does inside its process: serve its listener forever.
struct ServerModel {
  std::string name, help;
  /// Event-driven models must serve every client (0 rejected, 0 lost) or the record fails.
  bool event_driven = true;
  /// Runs `reactors` reactors (the suite's parameter): `serve` on each of that many threads, each
  /// pinned with a SO_REUSEPORT listener of its own (ServerLaunch::reactor_cpus). Other models
  /// refuse reactors > 1.
  bool multi_reactor = false;
  size_t max_concurrency = 0;  // 0 = no own limit (select: FD_SETSIZE)
  std::string max_why;
  std::vector<ParamSpec> extra_params;
  /// An external server executable instead of `serve` (servers/peer): its command line from the
  /// parameters, started under core/peers/server's exec contract (docs/servers.md).
  std::function<std::vector<std::string>(const Params& p)> argv;
  /// Serves `listen_fd` forever: the whole server, or with multi_reactor one reactor of it.
  std::function<void(int listen_fd, const Params& p)> serve;
};

/// `servers/<model.name>`: the suite's parameters and workload, and the model as its server.
Mechanism make_mechanism(ServerModel model);

}  // namespace ipclab::servers
