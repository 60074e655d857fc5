#include "core/peers/server.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/fs.hpp"
#include "core/machine/placement.hpp"
#include "core/process/listener.hpp"

namespace ipclab {

ServerProcess ServerProcess::start(const ServerLaunch& launch, int cpu, const std::string& address) {
  if (!launch.argv.empty()) {
    if (!address.empty())
      throw std::runtime_error("an exec'd server listens on 127.0.0.1 itself: it cannot serve another host");
    if (!launch.reactor_cpus.empty())
      throw std::logic_error(
          "an exec'd server runs its own threads: it has no reactor_cpus (refuse it in check)");
    if (access(launch.argv[0].c_str(), X_OK) != 0)
      throw Skip(fmt::format("server executable {} is not built", launch.argv[0]));
    if (auto missing = missing_interpreter(launch.argv[0]); !missing.empty())
      throw Skip(fmt::format("server {} cannot run here: {}; install it, or give another server",
                             launch.argv[0], missing));
    return ServerProcess(Process::exec(Spawn{.cpu = cpu, .ready_pipe = true}, launch.argv));
  }
  if (!launch.serve) throw std::logic_error("a ServerLaunch gives either serve or argv");
  const std::vector<int>& reactors = launch.reactor_cpus;
  if (!reactors.empty() && cpu >= 0) throw std::logic_error("a server of several reactors pins its threads");
  // The child opens its listeners (one per reactor, on one port), reports the port and serves; it
  // only ends when killed.
  return ServerProcess(Process::fork(Spawn{.cpu = cpu, .ready_pipe = true}, [&](int ready) -> int {
    signal(SIGPIPE, SIG_IGN);
    try {
      std::vector<int> lfds;
      const bool reuseport = !reactors.empty();
      for (size_t i = 0; i < std::max<size_t>(reactors.size(), 1); ++i) {
        lfds.push_back(
            listen_tcp(i ? local_port(lfds[0]) : 0, launch.backlog, launch.nonblocking, reuseport, address));
        if (const int one = 1; launch.nodelay)
          setsockopt(lfds.back(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      }
      const std::string line = fmt::format("{}\n", local_port(lfds[0]));
      if (write(ready, line.data(), line.size()) != ssize_t(line.size())) return 1;
      ::close(ready);
      // Reactor i > 0 on a thread of its own; reactor 0 (or the only one) on this thread. A reactor
      // that fails ends the process, which the session reports as the server's death.
      for (size_t i = 1; i < reactors.size(); ++i)
        std::thread([&launch, cpu = reactors[i], lfd = lfds[i], i] {
          try {
            pin_current_thread(cpu);
            launch.serve(lfd);
          } catch (const std::exception& e) {
            std::fprintf(stderr, "server: reactor %zu: %s\n", i, e.what());
          }
          _exit(1);
        }).detach();
      if (!reactors.empty()) pin_current_thread(reactors[0]);
      launch.serve(lfds[0]);
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

void add_reactor_sides(Placement& placement, const std::vector<int>& reactor_cpus) {
  for (size_t i = 0; i < reactor_cpus.size(); ++i)
    placement.sides.push_back(
        {.role = "reactor",
         .index = int(i),
         .pinned = reactor_cpus[i] >= 0 ? std::vector<int>{reactor_cpus[i]} : std::vector<int>{}});
}

}  // namespace ipclab
