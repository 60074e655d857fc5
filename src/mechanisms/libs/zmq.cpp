// libs/zmq: ZeroMQ (libzmq's C API) between the two sides, over ipc:// (a Unix stream socket),
// tcp:// (loopback) or inproc:// (threads only). The socket pair is -p socket's: by default
// (socket=auto) the one libzmq's own perf tools use for the pattern — REQ/REP for round trips
// (local_lat binds a REP, remote_lat connects a REQ), PUSH/PULL for throughput and open-loop rates
// (local_thr binds a PULL, remote_thr connects a PUSH) — or PAIR both ways, for either pattern.
// The receiving side binds, the sending side connects. A message is written into a zmq_msg_t of
// the library's (zmq_msg_init_size) and handed over with zmq_msg_send, as libzmq's own perf tools
// do (-p message=msg), or sent from the caller's buffer with zmq_send, which copies it
// (message=copy); it is received with zmq_msg_recv, looked at where the library put it (no copy
// out), and a round trip's server sends that very message back (message=msg, as local_lat does).
// Each side has its own context when the sides are processes (a context does not survive fork);
// threads share one. Every wait is bounded (100 ms timeouts, retried) so that an aborted run ends.
#include <zmq.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "core/load/message.hpp"
#include "core/machine/env.hpp"
#include "core/model/mechanism.hpp"
#include "core/model/std_params.hpp"
#include "mechanisms/libs/common.hpp"
#include "mechanisms/messaging/common.hpp"

namespace ipclab::libs {
namespace {

[[noreturn]] void fail_zmq(const char* what) {
  throw std::runtime_error(fmt::format("{}: {}", what, zmq_strerror(zmq_errno())));
}

std::string zmq_library_version() {
  int major, minor, patch;
  zmq_version(&major, &minor, &patch);
  return fmt::format("{}.{}.{}", major, minor, patch);
}

class ZmqEndpoint final : public InPlaceEndpoint {
 public:
  ZmqEndpoint(void* shared_ctx, Rendezvous& rv, const std::string& address, int type, bool listens,
              bool in_msg)
      : ctx_(shared_ctx ? shared_ctx : zmq_ctx_new()), own_ctx_(!shared_ctx), in_msg_(in_msg), rv_(rv) {
    if (!ctx_) fail_zmq("zmq_ctx_new");
    sock_ = zmq_socket(ctx_, type);
    if (!sock_) {
      if (own_ctx_) zmq_ctx_term(ctx_);
      fail_zmq("zmq_socket");
    }
    const int timeout = 100, linger = 5000;
    zmq_setsockopt(sock_, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    zmq_setsockopt(sock_, ZMQ_SNDTIMEO, &timeout, sizeof timeout);
    // The stop marker must still leave when the sender closes at once; a peer gone for good
    // cannot hold the close longer than this.
    zmq_setsockopt(sock_, ZMQ_LINGER, &linger, sizeof linger);
    zmq_msg_init(&msg_);
    zmq_msg_init(&out_);
    if (listens) {
      const std::string at = address.rfind("tcp://", 0) == 0 ? address + ":*" : address;
      if (zmq_bind(sock_, at.c_str()) != 0) fail_zmq(("zmq_bind " + at).c_str());
      char bound[256];
      size_t n = sizeof bound;
      zmq_getsockopt(sock_, ZMQ_LAST_ENDPOINT, bound, &n);
      rv.publish(bound);
    } else {
      const std::string at = rv.wait();
      if (zmq_connect(sock_, at.c_str()) != 0) fail_zmq(("zmq_connect " + at).c_str());
    }
  }
  ~ZmqEndpoint() override {
    // The sender of the stop marker closes only once the receiver has it (at most 5 s): closed at
    // once, with its last messages still queued, a PAIR sender sometimes left them undelivered
    // for over a second (the stall watchdog's limit; seen under ASan, where the sides run slower
    // than libzmq's I/O thread), linger notwithstanding. The receiver says so in the transport's
    // rendezvous (memory both sides share, threads or forked processes) rather than on the
    // socket: PUSH and PULL carry messages one way only, and a REP cannot answer a request it
    // does not echo. One way for every socket type.
    if (stop_sent_) (void)rv_.wait_stop_taken(5.0);
    zmq_msg_close(&msg_);
    zmq_msg_close(&out_);
    zmq_close(sock_);
    if (own_ctx_) zmq_ctx_term(ctx_);
  }

  // message=msg: the next message is written straight into a message of the library's.
  std::byte* send_buffer(std::byte* own, size_t len) override {
    if (!in_msg_) return own;
    if (!out_ready_) {
      zmq_msg_close(&out_);
      if (zmq_msg_init_size(&out_, len) != 0) fail_zmq("zmq_msg_init_size");
      out_ready_ = true;
    }
    return static_cast<std::byte*>(zmq_msg_data(&out_));
  }

  void send(const std::byte* data, size_t len) override {
    // Read before sending: a message handed over is the library's.
    const bool stop = msg::is_stop(data, len);
    if (out_ready_ && data == zmq_msg_data(&out_) && zmq_msg_size(&out_) == len) {
      while (zmq_msg_send(&out_, sock_, 0) < 0) retry("zmq_msg_send");  // on success out_ is empty again
      out_ready_ = false;
    } else if (in_msg_ && len > 0 && data == zmq_msg_data(&msg_) && zmq_msg_size(&msg_) == len) {
      // The echo of the message just received, sent back as it is (local_lat's zmq_sendmsg of the
      // message it received): the library's message changes hands, nothing is copied.
      while (zmq_msg_send(&msg_, sock_, 0) < 0) retry("zmq_msg_send");  // on success msg_ is empty again
    } else {
      // A message written elsewhere (an echo of the one just received) is copied by the library.
      while (zmq_send(sock_, data, len, 0) < 0) retry("zmq_send");
    }
    if (stop) stop_sent_ = true;
  }

  std::byte* recv_in_place(std::byte*, size_t len) override {
    int n;
    while ((n = zmq_msg_recv(&msg_, sock_, 0)) < 0) retry("zmq_msg_recv");
    if (size_t(n) != len) throw std::runtime_error(fmt::format("a message of {} bytes, expected {}", n, len));
    auto* body = static_cast<std::byte*>(zmq_msg_data(&msg_));
    if (msg::is_stop(body, len)) rv_.take_stop();  // its sender waits for this before it closes
    return body;
  }

 private:
  static void retry(const char* what) {
    const int e = zmq_errno();
    if (e == EAGAIN || e == EINTR) {
      messaging::poll_abort();
      return;
    }
    throw std::runtime_error(fmt::format("{}: {}", what, zmq_strerror(e)));
  }
  void* ctx_;
  bool own_ctx_, in_msg_;
  Rendezvous& rv_;
  bool stop_sent_ = false, out_ready_ = false;
  void* sock_ = nullptr;
  zmq_msg_t msg_, out_;
};

// The socket pair of -p socket, `auto` resolved for the pattern as libzmq's perf tools choose it.
struct Sockets {
  int sender, receiver;
  const char *sender_name, *receiver_name;
};
Sockets sockets_of(const Params& p) {
  std::string s = p.str("socket");
  if (s == "auto") s = std_params::is_roundtrip(p) ? "reqrep" : "pushpull";
  if (s == "reqrep") return {ZMQ_REQ, ZMQ_REP, "REQ", "REP"};
  if (s == "pushpull") return {ZMQ_PUSH, ZMQ_PULL, "PUSH", "PULL"};
  return {ZMQ_PAIR, ZMQ_PAIR, "PAIR", "PAIR"};
}

class ZmqTransport final : public LibraryTransport {
 public:
  explicit ZmqTransport(const Params& p, const Half* half = nullptr)
      : LibraryTransport(p, "zmq", "libzmq " + zmq_library_version(), "", half),
        sockets_(sockets_of(p)),
        in_msg_(p.str("message") == "msg") {
    if (p.str("mode") != "processes" && !(ctx_ = zmq_ctx_new())) fail_zmq("zmq_ctx_new");
  }
  ~ZmqTransport() override {
    if (ctx_) zmq_ctx_term(ctx_);
  }
  std::unique_ptr<Endpoint> open(Role role, int) override {
    const bool producer = role == Role::Producer;
    return std::make_unique<ZmqEndpoint>(ctx_, rendezvous(), address_,
                                         producer ? sockets_.sender : sockets_.receiver, !producer, in_msg_);
  }
  void describe(nlohmann::json& extra) const override {
    LibraryTransport::describe(extra);
    extra["sockets"] = {{"sender", sockets_.sender_name}, {"receiver", sockets_.receiver_name}};
  }

 private:
  Sockets sockets_;
  bool in_msg_;
  void* ctx_ = nullptr;
};

const LibraryVersion kZmqVersion{"libzmq", zmq_library_version};  // in every result's environment block

IPCLAB_REGISTER(Mechanism{
    .suite = "libs",
    .name = "zmq",
    .help = "ZeroMQ (libzmq): REQ/REP round trips and PUSH/PULL streams as its perf tools, or PAIR, over "
            "ipc, tcp "
            "or inproc",
    .params = suite_params(
        {"ipc", "tcp", "inproc"},
        {{.name = "socket",
          .type = ParamType::String,
          .def = "auto",
          .choices = {"auto", "pair", "pushpull", "reqrep"},
          .help = "auto: the pair libzmq's perf tools use, REQ/REP for round trips (local_lat, "
                  "remote_lat) and PUSH/PULL otherwise (local_thr, remote_thr); pair: ZMQ_PAIR both "
                  "ways; pushpull: ZMQ_PUSH sender, ZMQ_PULL receiver (one way: throughput and "
                  "rate only); reqrep: ZMQ_REQ client, ZMQ_REP server (round trips only). "
                  "extra.sockets names the pair a record used",
          .quick = {"auto"},
          .full = {"auto", "pair"}},
         {.name = "message",
          .type = ParamType::String,
          .def = "msg",
          .choices = {"msg", "copy"},
          .help = "msg: written into a zmq_msg_t of the library's and handed over with "
                  "zmq_msg_send, as libzmq's perf tools send; copy: zmq_send from the "
                  "sender's own buffer, which the library copies",
          .full = {"msg", "copy"}}}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<ZmqTransport>(p);
    },
    .check =
        [](const Params& p) {
          if (p.str("socket") == "reqrep" && !std_params::is_roundtrip(p))
            return std::string("REQ/REP answers every request: use pattern=roundtrip or socket=pair");
          if (p.str("socket") == "pushpull" && std_params::is_roundtrip(p))
            return std::string("PUSH/PULL carries messages one way: use pattern=throughput or socket=reqrep");
          return check(p);
        },
    .half = [](const Params& p, const Half& h) -> std::unique_ptr<Transport> {
      return std::make_unique<ZmqTransport>(p, &h);
    },
    .half_check = half_check,
});

}  // namespace
}  // namespace ipclab::libs
