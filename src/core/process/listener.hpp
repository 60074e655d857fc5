#pragma once
// TCP on the loopback interface, for the suites whose servers and clients meet there (echo,
// servers): a listener, its port, and the kernel limits that bound how many connections a run can
// hold (RLIMIT_NOFILE, net.core.somaxconn). Nothing here leaves the machine: 127.0.0.1 only.
#include <cstdint>
#include <string>

namespace ipclab {

/// A TCP listener on 127.0.0.1:`port` (0: the kernel picks), close-on-exec, non-blocking when
/// asked, SO_REUSEPORT when asked (more listeners on the same port). Throws std::system_error.
/// `address`: another IPv4 address of this host instead — only the remote side of `--remote`
/// (core/remote/remote.hpp) listens off loopback, on the address its local side reaches it at.
int listen_tcp(int port, int backlog, bool nonblocking, bool reuseport, const std::string& address = "");
/// The local port of a bound socket.
int local_port(int fd);
/// net.core.somaxconn: the kernel silently caps every listen backlog to it (4096 when unreadable).
int somaxconn();
/// Raises RLIMIT_NOFILE's soft limit to the hard one; UsageError naming `what` and the limit when
/// `need` descriptors do not fit.
void ensure_nofile(uint64_t need, const std::string& what);

}  // namespace ipclab
