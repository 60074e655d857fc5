// servers/asio: standalone Asio, one io_context on one thread, a C++20 coroutine per connection
// (co_spawn with use_awaitable): the same shape as servers/uring, over Asio's epoll reactor.
#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>

#include "mechanisms/servers/protocol.hpp"
#include "mechanisms/servers/suite.hpp"

namespace ipclab::servers {
namespace {

using asio::ip::tcp;

asio::awaitable<void> asio_connection(tcp::socket sock) {
  ProtocolConn pc;
  std::string out;
  char buf[512];
  for (;;) {
    auto [ec, n] =
        co_await sock.async_read_some(asio::buffer(buf), asio::experimental::as_tuple(asio::use_awaitable));
    if (ec || n == 0) break;
    out.clear();
    auto st = pc.feed(buf, n, out);
    if (!out.empty()) {
      auto [wec, w] = co_await asio::async_write(sock, asio::buffer(out),
                                                 asio::experimental::as_tuple(asio::use_awaitable));
      if (wec) break;
    }
    if (st != ProtocolConn::State::Open) break;
  }
}

asio::awaitable<void> asio_acceptor(tcp::acceptor& acc) {
  for (;;) {
    auto [ec, sock] = co_await acc.async_accept(asio::experimental::as_tuple(asio::use_awaitable));
    if (ec) continue;
    asio::co_spawn(acc.get_executor(), asio_connection(std::move(sock)), asio::detached);
  }
}

IPCLAB_REGISTER(make_mechanism({
    .name = "asio",
    .help = "standalone Asio (epoll reactor), one io_context, a coroutine per connection",
    .serve =
        [](int lfd, const Params&) {
          asio::io_context io(1);
          tcp::acceptor acc(io, tcp::v4(), lfd);
          asio::co_spawn(io, asio_acceptor(acc), asio::detached);
          io.run();
        },
}));

}  // namespace
}  // namespace ipclab::servers
