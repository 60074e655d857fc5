// libs/grpc: gRPC (C++, async API) between the two sides, over a Unix stream socket (ipc) or
// loopback TCP, its messages protobuf Payloads (grpc_bench.proto). -p rpc=unary: one Echo call per
// round trip; rpc=stream: one bidirectional Stream call for the run, on which the client writes
// and the server reads (throughput), or the server writes back each message (round trips). The
// receiving side serves, the sending side dials. A message is copied into a Payload (protobuf's
// set_data) and received in the Payload gRPC parsed it into, looked at there (no copy out).
// Both sides use completion queues, each with one operation in flight, awaited in 100 ms waits
// between which an aborted run ends. The stop marker is delivered before the client closes: on a
// stream the client ends its writes and waits for the server's status, which the server sends
// once it has read the marker; a unary marker is answered like any request. gRPC's threads do not
// survive fork: mode=processes after mode=threads in one ipclab process is skipped (ForkRule);
// nothing here starts gRPC in the coordinating process, only the endpoints in the workers do.
#include <google/protobuf/stubs/common.h>
#include <grpc/grpc.h>
#include <grpcpp/grpcpp.h>

#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "core/load/message.hpp"
#include "core/machine/env.hpp"
#include "core/model/mechanism.hpp"
#include "core/model/std_params.hpp"
#include "grpc_bench.grpc.pb.h"
#include "mechanisms/libs/common.hpp"
#include "mechanisms/messaging/common.hpp"

namespace ipclab::libs {
namespace {

using grpcbench::Bench;
using grpcbench::Payload;
using namespace std::chrono_literals;

// The most either side accepts: the suite's largest message and protobuf's few bytes of framing,
// set rather than left to gRPC's default (4 MiB), so that it follows the suite's sizes.
constexpr int kMaxMessage = int(kMaxSize) + 4096;

ForkRule g_grpc_fork_rule("gRPC");

std::string grpc_version() {
  return fmt::format("{} (protobuf {})", grpc::Version(),
                     google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION));
}

// Started once by the first endpoint of the process and never shut down: the last grpc_shutdown()
// tears gRPC down at once and waits (up to 10 s) for connections its threads are still closing, so
// the side that let go of gRPC last would hang there now and then. A forked side exits after its
// run; a process that ran threads keeps gRPC's idle threads until it exits (see ForkRule).
void keep_grpc_started() {
  static const bool started = (grpc_init(), true);
  (void)started;
}

std::chrono::system_clock::time_point in(std::chrono::milliseconds ms) {
  return std::chrono::system_clock::now() + ms;
}

// An endpoint's completion queue with one operation in flight at a time (gRPC allows one read and
// one write per call; the patterns never overlap them), so that a completion needs no matching.
class OneOp {
 public:
  explicit OneOp(grpc::CompletionQueue& cq) : cq_(cq) {}
  /// The tag of an operation about to start.
  void* start() {
    pending_ = true;
    return this;
  }
  bool pending() const { return pending_; }
  /// Waits for the operation's completion in 100 ms waits, ending with the run; returns its ok.
  bool await() {
    while (!next(100ms)) messaging::poll_abort();
    return ok_;
  }
  /// Waits for it `limit` at most, ending with no run (for destructors); true when it completed.
  bool settle(std::chrono::milliseconds limit) { return next(limit); }
  /// Ends the queue: every operation left was cancelled (the server shut down, the call cancelled),
  /// so its completion comes at once; a queue is destroyed empty.
  void drain() {
    cq_.Shutdown();
    void* tag;
    bool ok;
    while (cq_.AsyncNext(&tag, &ok, in(100ms)) != grpc::CompletionQueue::SHUTDOWN) {
    }
    pending_ = false;
  }

 private:
  bool next(std::chrono::milliseconds limit) {
    void* tag;
    switch (cq_.AsyncNext(&tag, &ok_, in(limit))) {
      case grpc::CompletionQueue::GOT_EVENT:
        pending_ = false;
        return true;
      case grpc::CompletionQueue::TIMEOUT:
        return false;
      case grpc::CompletionQueue::SHUTDOWN:
        break;
    }
    throw std::logic_error("gRPC: a completion awaited on a queue shut down");
  }
  grpc::CompletionQueue& cq_;
  bool pending_ = false, ok_ = false;
};

// The bytes of a received Payload, where protobuf parsed them.
std::byte* bytes_of(Payload& m, size_t len) {
  if (m.data().size() != len)
    throw std::runtime_error(fmt::format("a message of {} bytes, expected {}", m.data().size(), len));
  return reinterpret_cast<std::byte*>(m.mutable_data()->data());
}

[[noreturn]] void ended(const char* what) {
  throw std::runtime_error(fmt::format("gRPC {}: the call ended (the other side failed or went away)", what));
}

// The receiving side: a server with the Bench service on its own completion queue.
class GrpcServer final : public InPlaceEndpoint {
 public:
  GrpcServer(Rendezvous& rv, const std::string& address, bool unary) : unary_(unary) {
    keep_grpc_started();
    const bool tcp = address.rfind("tcp://", 0) == 0;
    grpc::ServerBuilder builder;
    int port = 0;  // tcp: the port the kernel chose; a Unix socket: 1 once it listens
    builder.AddListeningPort(tcp ? address.substr(6) + ":0" : "unix:" + address.substr(6),
                             grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    builder.SetMaxReceiveMessageSize(kMaxMessage);
    cq_ = builder.AddCompletionQueue();
    op_.emplace(*cq_);
    server_ = builder.BuildAndStart();
    if (!server_ || port == 0) throw std::runtime_error("gRPC: cannot serve on " + address);
    rv.publish(tcp ? fmt::format("{}:{}", address, port) : "unix:" + address.substr(6));
    if (!unary_) {  // the client's call, awaited at the first receive
      ctx_.emplace();
      stream_.emplace(&*ctx_);
      service_.RequestStream(&*ctx_, &*stream_, cq_.get(), cq_.get(), op_->start());
    }
  }
  ~GrpcServer() override {
    // The client's Finish waits for this status, which follows the stop marker it sent.
    if (stream_ && open_ && !op_->pending()) {
      stream_->Finish(grpc::Status::OK, op_->start());
      op_->settle(5s);
    }
    // Whatever is still in flight (a run cut short) is cancelled after the grace period.
    if (server_) server_->Shutdown(in(1s));
    op_->drain();
  }

  void send(const std::byte* data, size_t len) override {
    reply_.set_data(data, len);
    if (unary_)
      responder_->Finish(reply_, grpc::Status::OK, op_->start());
    else
      stream_->Write(reply_, op_->start());
    if (!op_->await()) ended(unary_ ? "Echo (answer)" : "Stream (write)");
  }

  std::byte* recv_in_place(std::byte*, size_t len) override {
    if (!unary_) {
      if (!open_ && !(open_ = op_->await())) ended("Stream (the client's call)");
      stream_->Read(&req_, op_->start());
      if (!op_->await()) ended("Stream (read)");
      return bytes_of(req_, len);
    }
    // A context and a responder per call (gRPC never reuses them); the previous call is done.
    responder_.reset();
    ctx_.emplace();
    responder_.emplace(&*ctx_);
    service_.RequestEcho(&*ctx_, &req_, &*responder_, cq_.get(), cq_.get(), op_->start());
    if (!op_->await()) ended("Echo (the client's call)");
    std::byte* got = bytes_of(req_, len);
    if (msg::is_stop(got, len)) send(got, len);  // its client waits for an answer before it closes
    return got;
  }

 private:
  const bool unary_;
  bool open_ = false;  // stream: the client's call has arrived
  Bench::AsyncService service_;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::optional<OneOp> op_;
  std::unique_ptr<grpc::Server> server_;
  std::optional<grpc::ServerContext> ctx_;
  std::optional<grpc::ServerAsyncResponseWriter<Payload>> responder_;
  std::optional<grpc::ServerAsyncReaderWriter<Payload, Payload>> stream_;
  Payload req_, reply_;
};

// The sending side: a channel to the server, and its calls on a completion queue of its own.
class GrpcClient final : public InPlaceEndpoint {
 public:
  GrpcClient(Rendezvous& rv, bool unary) : unary_(unary) {
    keep_grpc_started();
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(kMaxMessage);
    // The rendezvous writes a tcp address as the suite does (tcp://HOST:PORT); gRPC's is ipv4:HOST:PORT.
    const std::string at = rv.wait();
    const std::string target = at.rfind("tcp://", 0) == 0 ? "ipv4:" + at.substr(6) : at;
    channel_ = grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
    stub_ = Bench::NewStub(channel_);
  }
  ~GrpcClient() override {
    // A run cut short: nothing more is owed to the server, and the cancel completes what is in flight.
    if (ctx_ && (op_.pending() || (stream_ && !finished_))) ctx_->TryCancel();
    op_.drain();
  }

  void send(const std::byte* data, size_t len) override {
    req_.set_data(data, len);
    const bool stop = msg::is_stop(data, len);
    if (unary_) {
      // A context per call; the answer goes to the other reply, so that the previous one, which the
      // caller may still be reading, stays as it is until the next receive.
      reader_.reset();
      new_context();
      slot_ ^= 1;
      reader_ = stub_->AsyncEcho(&*ctx_, req_, &cq_);
      reader_->Finish(&reply_[slot_], &status_, op_.start());
      if (stop) answered();  // nothing receives after the marker: its answer is awaited here
      return;
    }
    if (!stream_) {
      new_context();
      stream_ = stub_->AsyncStream(&*ctx_, &cq_, op_.start());
      if (!op_.await()) finish("Stream (start)");
    }
    stream_->Write(req_, op_.start());
    if (!op_.await()) finish("Stream (write)");
    if (stop) {  // the server's status comes once it has read the marker
      stream_->WritesDone(op_.start());
      if (!op_.await()) finish("Stream (writes done)");
      finish(nullptr);
    }
  }

  std::byte* recv_in_place(std::byte*, size_t len) override {
    if (unary_) {
      answered();
      return bytes_of(reply_[slot_], len);
    }
    stream_->Read(&reply_[0], op_.start());
    if (!op_.await()) finish("Stream (read)");
    return bytes_of(reply_[0], len);
  }

 private:
  void new_context() {
    ctx_.emplace();
    ctx_->set_wait_for_ready(true);  // a connection still being set up delays the call, not fails it
  }
  void answered() {
    if (!op_.await() || !status_.ok())
      throw std::runtime_error(
          fmt::format("gRPC Echo: {}", status_.ok() ? "no answer" : status_.error_message()));
  }
  // Ends the stream with the server's status: after the stop marker (`failed` null), or to say why
  // an operation failed.
  void finish(const char* failed) {
    stream_->Finish(&status_, op_.start());
    op_.await();
    finished_ = true;
    if (!status_.ok())
      throw std::runtime_error(fmt::format("gRPC {}: {} ({})", failed ? failed : "Stream (finish)",
                                           status_.error_message(), int(status_.error_code())));
    if (failed) ended(failed);
  }

  const bool unary_;
  bool finished_ = false;
  int slot_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<Bench::Stub> stub_;
  grpc::CompletionQueue cq_;
  OneOp op_{cq_};
  std::optional<grpc::ClientContext> ctx_;
  std::unique_ptr<grpc::ClientAsyncResponseReader<Payload>> reader_;
  std::unique_ptr<grpc::ClientAsyncReaderWriter<Payload, Payload>> stream_;
  Payload req_, reply_[2];
  grpc::Status status_;
};

class GrpcTransport final : public LibraryTransport {
 public:
  explicit GrpcTransport(const Params& p, const Half* half = nullptr)
      : LibraryTransport(p, "grpc", "gRPC " + grpc_version(), "", half), unary_(p.str("rpc") == "unary") {
    g_grpc_fork_rule.admit(p);
  }
  std::unique_ptr<Endpoint> open(Role role, int) override {
    if (role == Role::Consumer) return std::make_unique<GrpcServer>(rendezvous(), address_, unary_);
    return std::make_unique<GrpcClient>(rendezvous(), unary_);
  }

 private:
  bool unary_;
};

const LibraryVersion kGrpcVersion{"grpc", grpc_version};  // in every result's environment block

IPCLAB_REGISTER(Mechanism{
    .suite = "libs",
    .name = "grpc",
    .help =
        "gRPC (C++, async): a unary Echo call per round trip, or one bidirectional stream, over ipc or tcp",
    .params = suite_params({"ipc", "tcp"},
                           {{.name = "rpc",
                             .type = ParamType::String,
                             .def = "stream",
                             .choices = {"unary", "stream"},
                             .help = "unary: one Echo call per round trip (round trips only); stream: one "
                                     "bidirectional stream for the run",
                             .quick = {"unary", "stream"},
                             .full = {"unary", "stream"}}}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<GrpcTransport>(p);
    },
    .check =
        [](const Params& p) {
          if (p.str("rpc") == "unary" && !std_params::is_roundtrip(p))
            return std::string("unary calls answer every request: use pattern=roundtrip or rpc=stream");
          return check(p);
        },
    .half = [](const Params& p, const Half& h) -> std::unique_ptr<Transport> {
      return std::make_unique<GrpcTransport>(p, &h);
    },
    .half_check = half_check,
});

}  // namespace
}  // namespace ipclab::libs
