#pragma once
// A server mechanism's process (Mechanism::server): started from its ServerLaunch on core/process
// — forked with the listener opened in the child, or exec'd — and ready once it reported its port
// through the readiness handshake. The suites that drive servers (echo, servers) make it a peer of
// their Session (Session::add_peer), which watches its death and stalls and charges its CPU.
#include <sys/types.h>

#include <string>

#include "core/base/cpu.hpp"
#include "core/model/mechanism.hpp"
#include "core/process/process.hpp"
#include "core/stats/record.hpp"

namespace ipclab {

class ServerProcess {
 public:
  /// Starts `launch` pinned to `cpu` (-1: unpinned; a server of several reactors pins each of its
  /// threads itself, ServerLaunch::reactor_cpus, and is given -1) and waits for its port (10 s at
  /// most). A forked server gets its listeners on 127.0.0.1:0 as the launch asks; an exec'd one
  /// prints its port on stdout. Skip when an executable is missing (not built);
  /// std::runtime_error when the server ends or reports no port in time (naming how it ended).
  /// `address`: listen there instead of 127.0.0.1 (listen_tcp; forked servers only).
  static ServerProcess start(const ServerLaunch& launch, int cpu, const std::string& address = "");

  int port() const { return port_; }
  pid_t pid() const { return proc_.pid(); }
  /// The process, for Session::add_peer (watching, CPU) and Process::alive()/death().
  Process& process() { return proc_; }
  /// Kills (SIGKILL: a forked server inherits the harness's handlers) and reaps it; its whole
  /// life's CPU (wait4). Killed by us is not a death: death() stays "".
  CpuUsage stop();

 private:
  explicit ServerProcess(Process p);
  Process proc_;
  int port_ = 0;
};

/// The sides of a server of several reactors (ServerLaunch::reactor_cpus): one per reactor thread,
/// role "reactor", pinned where it was (nothing for a server of one reactor: an empty list).
void add_reactor_sides(Placement& placement, const std::vector<int>& reactor_cpus);

}  // namespace ipclab
