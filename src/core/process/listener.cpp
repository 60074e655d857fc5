#include "core/process/listener.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdlib>
#include <system_error>

#include "core/base/error.hpp"
#include "core/base/fs.hpp"

namespace ipclab {

int listen_tcp(int port, int backlog, bool nonblocking, bool reuseport, const std::string& address) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (nonblocking ? SOCK_NONBLOCK : 0), 0);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), "socket");
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (reuseport) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);  // loopback only (SPEC §1.6), but for --remote's far side
  if (!address.empty() && inet_pton(AF_INET, address.c_str(), &a.sin_addr) != 1) {
    ::close(fd);
    throw std::system_error(EINVAL, std::generic_category(), "listen address " + address);
  }
  a.sin_port = htons(uint16_t(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, backlog) != 0) {
    int e = errno;
    ::close(fd);
    throw std::system_error(e, std::generic_category(),
                            "bind/listen " + (address.empty() ? "127.0.0.1" : address));
  }
  return fd;
}

int local_port(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

int somaxconn() {
  const std::string line = read_first_line("/proc/sys/net/core/somaxconn");
  const int v = std::atoi(line.c_str());
  return v > 0 ? v : 4096;
}

void ensure_nofile(uint64_t need, const std::string& what) {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  if (rl.rlim_cur != RLIM_INFINITY && need > rl.rlim_cur)
    throw UsageError(
        fmt::format("{} needs {} open files but RLIMIT_NOFILE (hard) is {}: lower it, "
                    "or raise the limit (ulimit -Hn, limits.conf)",
                    what, need, rl.rlim_cur));
}

}  // namespace ipclab
