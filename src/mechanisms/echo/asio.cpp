// echo/asio: standalone Asio, one io_context on one thread, a coroutine per connection;
// backend=epoll is Asio's default reactor, backend=io_uring the build in asio_io_uring.cpp.
#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>

#include "core/measure/session.hpp"
#include "mechanisms/echo/asio_server.hpp"
#include "mechanisms/echo/common.hpp"

namespace ipclab::echo {
namespace {

IPCLAB_REGISTER(Mechanism{
    .suite = "echo",
    .name = "asio",
    .help = "standalone Asio, a coroutine per connection, epoll or io_uring backend",
    .params = suite_params({{.name = "backend",
                             .type = ParamType::String,
                             .def = "epoll",
                             .choices = {"epoll", "io_uring"},
                             .help = "Asio's reactor: epoll, or io_uring (ASIO_HAS_IO_URING, epoll disabled)",
                             .quick = {"epoll", "io_uring"},
                             .full = {"epoll", "io_uring"}}}),
    .workload = run_echo,
    .server =
        [](const Session& s) {
          if (s.params().str("backend") == "io_uring")
            return ServerLaunch{.serve = [p = s.params()](int lfd) { serve_asio_io_uring(lfd, p); }};
          return ServerLaunch{.serve = [](int lfd) { asio_server::serve(lfd); }};
        },
    .check = suite_check("asio", false),
});

}  // namespace
}  // namespace ipclab::echo
