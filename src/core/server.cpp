#include "core/server.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "core/error.hpp"
#include "core/listener.hpp"

namespace ipclab {

ServerProcess ServerProcess::start(const ServerLaunch& launch, int cpu) {
  if (!launch.argv.empty()) {
    if (access(launch.argv[0].c_str(), X_OK) != 0)
      throw Skip(fmt::format("server executable {} is not built", launch.argv[0]));
    return ServerProcess(Process::exec(Spawn{.cpu = cpu, .ready_pipe = true}, launch.argv));
  }
  if (!launch.serve) throw std::logic_error("a ServerLaunch gives either serve or argv");
  // The child opens the listener, reports its port and serves; it only ends when killed.
  return ServerProcess(Process::fork(Spawn{.cpu = cpu, .ready_pipe = true}, [&](int ready) -> int {
    signal(SIGPIPE, SIG_IGN);
    try {
      const int lfd = listen_tcp(0, launch.backlog, launch.nonblocking, launch.reuseport);
      if (const int one = 1; launch.nodelay) setsockopt(lfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      const std::string line = fmt::format("{}\n", local_port(lfd));
      if (write(ready, line.data(), line.size()) != ssize_t(line.size())) return 1;
      ::close(ready);
      launch.serve(lfd);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "server: %s\n", e.what());
      return 1;
    }
    return 0;
  }));
}

ServerProcess::ServerProcess(Process p) : proc_(std::move(p)) {
  port_ = std::atoi(proc_.await_ready(10).c_str());
  if (port_ > 0) return;
  proc_.wait(0.2);  // a closed pipe: the child is ending; let it be reaped
  const std::string how = proc_.death();
  proc_.stop();
  throw std::runtime_error("server process: " +
                           (how.empty() ? "did not report its port within 10 s" : "server " + how));
}

CpuUsage ServerProcess::stop() {
  proc_.stop();  // killed by us: not a death
  return proc_.usage();
}

}  // namespace ipclab
