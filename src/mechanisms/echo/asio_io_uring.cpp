// Asio built with its io_uring backend for sockets (ASIO_HAS_IO_URING with epoll disabled makes
// io_uring the default). Asio is header-only and its backend is a compile-time choice, so this
// translation unit renames the `asio` namespace: two differently configured copies of the same
// inline functions would otherwise violate the one-definition rule inside one binary.
#define ASIO_HAS_IO_URING 1
#define ASIO_DISABLE_EPOLL 1
#define asio ipclab_asio_uring
#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>

#include "mechanisms/echo/asio_server.hpp"
#include "mechanisms/echo/common.hpp"

namespace ipclab::echo {

void serve_asio_io_uring(int listen_fd, const Params&) { asio_server::serve(listen_fd); }

}  // namespace ipclab::echo
