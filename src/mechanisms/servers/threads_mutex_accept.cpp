// servers/threads_mutex_accept: the reference's second model — N threads, each taking the accept
// mutex, accepting one connection and serving it blocking: at most N clients at a time.
#include <sys/socket.h>

#include <mutex>
#include <thread>

#include "mechanisms/servers/protocol.hpp"
#include "mechanisms/servers/suite.hpp"

namespace ipclab::servers {
namespace {

IPCLAB_REGISTER(make_mechanism({
    .name = "threads_mutex_accept",
    .help = "N threads, a mutex around accept, blocking reads: N clients at a time",
    .event_driven = false,
    .extra_params = {{.name = "threads",
                      .type = ParamType::Int,
                      .def = "5",
                      .help = "server threads (the reference used 5)",
                      .min = 1,
                      .max = 1024}},
    .serve =
        [](int lfd, const Params& p) {
          std::mutex m;
          auto body = [&] {
            for (;;) {
              int fd;
              {
                std::lock_guard lk(m);  // the reference's design: accept is serialised by a mutex
                fd = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
              }
              if (fd >= 0) serve_blocking(fd);
            }
          };
          std::vector<std::thread> ts;
          for (int64_t i = 1; i < p.i64("threads"); ++i) ts.emplace_back(body);
          body();
        },
}));

}  // namespace
}  // namespace ipclab::servers
