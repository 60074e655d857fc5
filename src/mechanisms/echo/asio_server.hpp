#pragma once
// The Asio echo server, shared by echo/asio.cpp (epoll reactor) and echo/asio_io_uring.cpp
// (io_uring backend): included after <asio.hpp> in each, so `asio` names whichever build of
// Asio that translation unit configured.
#include <memory>

#include "mechanisms/echo/common.hpp"

namespace ipclab::echo {
namespace {  // internal linkage: each translation unit has its own Asio
namespace asio_server {

inline asio::awaitable<void> connection(asio::ip::tcp::socket sock) {
  std::unique_ptr<char[]> buf(new char[kMaxSize]);
  for (;;) {
    auto [ec, n] = co_await sock.async_read_some(asio::buffer(buf.get(), kMaxSize),
                                                 asio::experimental::as_tuple(asio::use_awaitable));
    if (ec) co_return;
    auto [wec, w] = co_await asio::async_write(sock, asio::buffer(buf.get(), n),
                                               asio::experimental::as_tuple(asio::use_awaitable));
    if (wec) co_return;
  }
}

inline asio::awaitable<void> acceptor(asio::ip::tcp::acceptor& acc) {
  for (;;) {
    auto [ec, sock] = co_await acc.async_accept(asio::experimental::as_tuple(asio::use_awaitable));
    if (ec) continue;
    sock.set_option(asio::ip::tcp::no_delay(true));
    asio::co_spawn(acc.get_executor(), connection(std::move(sock)), asio::detached);
  }
}

inline void serve(int lfd) {
  asio::io_context io(1);
  asio::ip::tcp::acceptor acc(io, asio::ip::tcp::v4(), lfd);
  asio::co_spawn(io, acceptor(acc), asio::detached);
  io.run();
}

}  // namespace asio_server
}  // namespace
}  // namespace ipclab::echo
