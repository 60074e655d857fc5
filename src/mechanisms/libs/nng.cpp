// libs/nng: nng (nanomsg-next-gen) pair1 sockets between the two sides, over ipc:// (a Unix stream
// socket), tcp:// (loopback) or inproc:// (threads only). The receiving side listens, the
// sending side dials. A message is written into an nng_msg of the library's (nng_msg_alloc) and
// handed over with nng_sendmsg, as nng's perf tool sends (-p message=msg), or sent from the
// caller's buffer with nng_send, which copies it (message=copy); it is received with nng_recvmsg,
// looked at where the library put it, and a round trip's server sends that very message back
// (message=msg, as the perf tool's latency server does). Every wait is bounded (100 ms timeouts,
// retried) so that an aborted run ends. nng has no linger: a socket closed with a message still
// queued drops it, so the side that sent a stop marker waits (at most 5 s) for the receiver's
// one-byte acknowledgement of it before it closes. nng's threads are process-wide and do not survive
// fork: once a run of threads has started nng in this process, a forked side could not start it
// again (it aborts), so mode=processes is then skipped with the reason — run it in an ipclab run
// of its own, which never starts nng in the parent. Each socket queues `buffers` messages each way
// (NNG_OPT_SENDBUF, NNG_OPT_RECVBUF): nng's own perf tool gives its pair sockets 128, where the
// library's default of 0 keeps about one message in flight.
#include <nng/nng.h>
#include <nng/protocol/pair1/pair.h>

#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/load/message.hpp"
#include "core/machine/env.hpp"
#include "core/model/mechanism.hpp"
#include "core/model/std_params.hpp"
#include "mechanisms/libs/common.hpp"
#include "mechanisms/messaging/common.hpp"

namespace ipclab::libs {
namespace {

ForkRule g_nng_fork_rule("nng");

void check_nng(int rc, const std::string& what) {
  if (rc != 0) throw std::runtime_error(fmt::format("{}: {}", what, nng_strerror(rc)));
}

std::string nng_library_version() { return nng_version(); }

class NngEndpoint final : public InPlaceEndpoint {
 public:
  NngEndpoint(Rendezvous& rv, const std::string& address, bool listens, int buffers, bool in_msg)
      : in_msg_(in_msg) {
    check_nng(nng_pair1_open(&sock_), "nng_pair1_open");
    open_ = true;
    check_nng(nng_socket_set_int(sock_, NNG_OPT_SENDBUF, buffers), "send-buffer");
    check_nng(nng_socket_set_int(sock_, NNG_OPT_RECVBUF, buffers), "recv-buffer");
    check_nng(nng_socket_set_ms(sock_, NNG_OPT_RECVTIMEO, 100), "recv-timeout");
    check_nng(nng_socket_set_ms(sock_, NNG_OPT_SENDTIMEO, 100), "send-timeout");
    if (listens) {
      const bool tcp = address.rfind("tcp://", 0) == 0;
      const std::string at = tcp ? address + ":0" : address;
      nng_listener l;
      check_nng(nng_listen(sock_, at.c_str(), &l, 0), "nng_listen " + at);
      std::string bound = at;
      if (tcp) {
        int port = 0;
        check_nng(nng_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &port), "tcp-bound-port");
        bound = fmt::format("{}:{}", address, port);
      }
      rv.publish(bound);
    } else {
      const std::string at = rv.wait();
      // Non-blocking: the dialer retries in the background until the listener is there.
      check_nng(nng_dial(sock_, at.c_str(), nullptr, NNG_FLAG_NONBLOCK), "nng_dial " + at);
    }
  }
  ~NngEndpoint() override {
    if (msg_) nng_msg_free(msg_);
    if (out_) nng_msg_free(out_);
    msg_ = out_ = nullptr;
    for (int tries = 0; stop_sent_ && tries < 50; ++tries) {  // 50 x the 100 ms receive timeout
      nng_msg* m = nullptr;
      if (nng_recvmsg(sock_, &m, 0) != 0) continue;
      const bool ack = nng_msg_len(m) == 1;
      nng_msg_free(m);
      if (ack) break;
    }
    if (open_) nng_close(sock_);
  }

  // message=msg: the next message is written straight into a message of the library's.
  std::byte* send_buffer(std::byte* own, size_t len) override {
    if (!in_msg_) return own;
    if (!out_) check_nng(nng_msg_alloc(&out_, len), "nng_msg_alloc");
    return static_cast<std::byte*>(nng_msg_body(out_));
  }

  void send(const std::byte* data, size_t len) override {
    const bool stop = msg::is_stop(data, len);  // read before sending: a message handed over is the library's
    if (out_ && data == nng_msg_body(out_) && nng_msg_len(out_) == len) {
      hand_over(out_);
    } else if (in_msg_ && msg_ && len > 0 && data == nng_msg_body(msg_) && nng_msg_len(msg_) == len) {
      hand_over(msg_);  // the echo of the message just received, sent back as it is: nothing is copied
    } else {
      for (int rc; (rc = nng_send(sock_, const_cast<std::byte*>(data), len, 0)) != 0;) retry(rc, "nng_send");
    }
    if (stop) stop_sent_ = true;
  }

  std::byte* recv_in_place(std::byte*, size_t len) override {
    if (msg_) nng_msg_free(msg_);
    msg_ = nullptr;
    for (int rc; (rc = nng_recvmsg(sock_, &msg_, 0)) != 0;) retry(rc, "nng_recvmsg");
    if (nng_msg_len(msg_) != len)
      throw std::runtime_error(fmt::format("a message of {} bytes, expected {}", nng_msg_len(msg_), len));
    auto* body = static_cast<std::byte*>(nng_msg_body(msg_));
    if (msg::is_stop(body, len)) {  // its sender waits for this before it closes
      char ack = 1;
      for (int rc; (rc = nng_send(sock_, &ack, 1, 0)) != 0;) retry(rc, "nng_send");
    }
    return body;
  }

 private:
  // Sends `m` with nng_sendmsg; once sent it is the library's.
  void hand_over(nng_msg*& m) {
    for (int rc; (rc = nng_sendmsg(sock_, m, 0)) != 0;) retry(rc, "nng_sendmsg");
    m = nullptr;
  }
  static void retry(int rc, const char* what) {
    if (rc == NNG_ETIMEDOUT || rc == NNG_EAGAIN || rc == NNG_EINTR) {
      messaging::poll_abort();
      return;
    }
    check_nng(rc, what);
  }
  nng_socket sock_ = NNG_SOCKET_INITIALIZER;
  bool in_msg_, open_ = false, stop_sent_ = false;
  nng_msg* msg_ = nullptr;  // the last message received, until the next receive
  nng_msg* out_ = nullptr;  // message=msg: the next message to send, while the harness writes it
};

class NngTransport final : public LibraryTransport {
 public:
  explicit NngTransport(const Params& p, const Half* half = nullptr)
      : LibraryTransport(p, "nng", "nng " + nng_library_version(), "", half),
        buffers_(int(p.i64("buffers"))),
        in_msg_(p.str("message") == "msg") {
    g_nng_fork_rule.admit(p);
  }
  std::unique_ptr<Endpoint> open(Role role, int) override {
    return std::make_unique<NngEndpoint>(rendezvous(), address_, role == Role::Consumer, buffers_, in_msg_);
  }

 private:
  int buffers_;
  bool in_msg_;
};

const LibraryVersion kNngVersion{"nng", nng_library_version};  // in every result's environment block

IPCLAB_REGISTER(Mechanism{
    .suite = "libs",
    .name = "nng",
    .help = "nng (nanomsg-next-gen): pair1 sockets over ipc, tcp or inproc",
    .params =
        suite_params({"ipc", "tcp", "inproc"},
                     {{.name = "buffers",
                       .type = ParamType::Int,
                       .def = "128",
                       .help = "messages each socket queues each way (NNG_OPT_SENDBUF and NNG_OPT_RECVBUF): "
                               "128 as nng's perf tool sets them; 0 is the library's default (about one "
                               "message in flight)",
                       .full = {"0", "128"},
                       .min = 0,
                       .max = 8192},
                      {.name = "message",
                       .type = ParamType::String,
                       .def = "msg",
                       .choices = {"msg", "copy"},
                       .help = "msg: written into an nng_msg of the library's (nng_msg_alloc) and handed "
                               "over with nng_sendmsg, as nng's perf tool sends; copy: nng_send from the "
                               "sender's own buffer, which the library copies",
                       .full = {"msg", "copy"}}}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<NngTransport>(p);
    },
    .check = [](const Params& p) { return check(p); },
    .half = [](const Params& p, const Half& h) -> std::unique_ptr<Transport> {
      return std::make_unique<NngTransport>(p, &h);
    },
    .half_check = half_check,
});

}  // namespace
}  // namespace ipclab::libs
