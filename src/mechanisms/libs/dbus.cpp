// libs/dbus: D-Bus through sd-bus (libsystemd's client library) and a dbus-daemon of the run's own:
// every message crosses two Unix stream sockets, sender -> daemon -> receiver, and the daemon
// routes it. Never the system or the session bus: each transport (one benchmark repetition)
// starts a private dbus-daemon (core/peers/daemon) from a configuration written in the run's folder —
// a custom bus listening on a socket there, EXTERNAL authentication, a policy that lets this user
// only own names, send and receive — and both sides connect to it by address as bus clients.
//   roundtrip   method calls: the client calls org.ipclab.Bench.Echo ("ay") on the name the server
//               owns (org.ipclab.b<n>), the server replies with the very bytes it got.
//   throughput  signals: the producer emits org.ipclab.Bench.Data ("ay"), the consumer gets it
//               through its match rule.
// Flow control of the signals: dbus-daemon queues what it routes to a connection up to that
// connection's max_outgoing_bytes and, over it, drops a signal (a method call gets an error), so a
// producer faster than its consumer would lose messages. The consumer therefore acknowledges every
// `ack_every` messages (an Ack signal carrying its count), and the producer never has more than
// `window` messages unacknowledged (4 MiB at most, below): window x size stays far below the
// daemon's queue limit set here, so nothing is dropped. Should a message still be lost, nothing
// hides it: the consumer's count falls short of the producer's and the harness reports it as lost.
// The stop marker is confirmed by its receiver (an empty reply, or an Ack), its sender stays
// connected until then, and the receiver until the sender has gone (send, confirm_stop): a
// connection that closes right after its last message can lose it in dbus-daemon.
// Messages are received in place: sd_bus_message_read_array points into the message, which is
// kept referenced until the next receive. Every wait is bounded (sd_bus_wait, 100 ms, then
// poll_abort); a connection the daemon dropped ends the run with an error naming it. The sd-bus
// objects are opened in each worker (thread or forked process), none in the parent.
#include <fcntl.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "core/load/message.hpp"
#include "core/machine/env.hpp"
#include "core/model/mechanism.hpp"
#include "core/model/std_params.hpp"
#include "core/ownership/journal.hpp"
#include "core/peers/daemon.hpp"
#include "core/process/process.hpp"
#include "mechanisms/libs/common.hpp"
#include "mechanisms/messaging/common.hpp"

namespace ipclab::libs {
namespace {

constexpr const char* kDaemon = "/usr/bin/dbus-daemon";
constexpr const char* kPath = "/org/ipclab/Bench";
constexpr const char* kInterface = "org.ipclab.Bench";
constexpr uint64_t kWaitUs = 100'000;       // one bounded wait, then poll_abort
constexpr size_t kMaxMessage = 4u << 20;    // the suite's 1 MiB and the header, with room
constexpr size_t kQueueLimit = 256u << 20;  // the daemon's per-connection queues
// Unacknowledged signals at most (and 1024 messages): enough for the daemon always to have the next
// ones, a sixty-fourth of the queue limit. Four messages at least, so that 1 MiB ones still overlap.
constexpr size_t kWindowBytes = 4u << 20;
constexpr uint64_t kMinWindow = 4, kMaxWindow = 1024;
constexpr uint64_t kStopSeen = ~uint64_t(0);  // the Ack of the stop marker

std::string libsystemd_version() { return IPCLAB_LIBSYSTEMD_VERSION; }

// "D-Bus Message Bus Daemon 1.14.10" -> "1.14.10"; asked once.
std::string daemon_version() {
  static const std::string v = [] {
    if (access(kDaemon, X_OK) != 0) return std::string("not installed");
    std::string out = command_output({kDaemon, "--version"}, 5);
    out = out.substr(0, out.find('\n'));
    const size_t sp = out.rfind(' ');
    return out.empty() ? std::string("unknown") : out.substr(sp == std::string::npos ? 0 : sp + 1);
  }();
  return v;
}

std::string library() {
  return fmt::format("sd-bus (libsystemd {}), dbus-daemon {}", libsystemd_version(), daemon_version());
}

[[noreturn]] void fail_sd_bus(int r, const std::string& what) {
  throw std::system_error(-r, std::generic_category(), what);
}
void must(int r, const std::string& what) {
  if (r < 0) fail_sd_bus(r, what);
}

// How the two sides of one transport meet: the daemon's address, the name the server owns, and
// the signals' flow-control window.
struct Bus {
  std::string address, name;
  uint64_t window = 0, ack_every = 0;
};

class DbusEndpoint final : public InPlaceEndpoint {
 public:
  DbusEndpoint(const Bus& bus, Rendezvous& rv, Role role, bool roundtrip)
      : cfg_(bus), producer_(role == Role::Producer), roundtrip_(roundtrip) {
    sd_bus* b = nullptr;
    must(sd_bus_new(&b), "sd_bus_new");
    bus_.reset(b);
    must(sd_bus_set_address(bus_.get(), cfg_.address.c_str()), "sd_bus_set_address " + cfg_.address);
    must(sd_bus_set_bus_client(bus_.get(), 1), "sd_bus_set_bus_client");
    must(sd_bus_start(bus_.get()), "sd_bus_start " + cfg_.address);
    sd_bus_slot* slot = nullptr;
    if (roundtrip_ && !producer_) {
      // The method needs no sender check of sd-bus's (which would ask the daemon for the
      // caller's credentials on every call): the daemon's policy admits this user only.
      static const sd_bus_vtable vtable[] = {
          SD_BUS_VTABLE_START(0),
          SD_BUS_METHOD("Echo", "ay", "ay", on_message, SD_BUS_VTABLE_UNPRIVILEGED),
          SD_BUS_VTABLE_END,
      };
      must(sd_bus_add_object_vtable(bus_.get(), &slot, kPath, kInterface, vtable, this),
           "sd_bus_add_object_vtable");
      slot_.reset(slot);
      await_daemon(sd_bus_request_name_async(bus_.get(), nullptr, cfg_.name.c_str(), 0, on_answer, this),
                   "RequestName");
      rv.publish(cfg_.name);
    } else if (!roundtrip_ && !producer_) {
      // The match is in place before the producer learns that it may emit.
      const int r = sd_bus_match_signal_async(bus_.get(), &slot, nullptr, kPath, kInterface, "Data",
                                              on_message, on_answer, this);
      slot_.reset(slot);
      await_daemon(r, "AddMatch Data");
      rv.publish(cfg_.name);
    } else {
      if (!roundtrip_) {
        const int r = sd_bus_match_signal_async(bus_.get(), &slot, nullptr, kPath, kInterface, "Ack", on_ack,
                                                on_answer, this);
        slot_.reset(slot);
        await_daemon(r, "AddMatch Ack");
      }
      rv.wait();
    }
  }
  ~DbusEndpoint() override {
    for (auto* m : pending_) sd_bus_message_unref(m);
  }

  void send(const std::byte* data, size_t len) override {
    const bool stop = msg::is_stop(data, len);
    if (!roundtrip_ && !stop)
      pump([&] { return sent_ - acked_ < cfg_.window; }, "waiting for the consumer's Ack");
    sd_bus_message* m = nullptr;
    if (roundtrip_ && producer_)
      must(sd_bus_message_new_method_call(bus_.get(), &m, cfg_.name.c_str(), kPath, kInterface, "Echo"),
           "new method call");
    else if (roundtrip_)
      must(sd_bus_message_new_method_return(held_.get(), &m), "new method return");
    else
      must(sd_bus_message_new_signal(bus_.get(), &m, kPath, kInterface, "Data"), "new signal");
    std::unique_ptr<sd_bus_message, decltype(&sd_bus_message_unref)> own(m, sd_bus_message_unref);
    must(sd_bus_message_append_array(m, 'y', data, len), "append ay");
    // A call's reply is handled as it comes (on_message); a call with no reply in 25 s (sd-bus's
    // default) gets an error reply instead, which recv reports.
    if (roundtrip_ && producer_)
      must(sd_bus_call_async(bus_.get(), nullptr, m, on_message, this, 0), "sd_bus_call_async Echo");
    else
      must(sd_bus_send(bus_.get(), m, nullptr), "sd_bus_send");
    drain();
    if (!stop) {
      sent_ += !roundtrip_;
      return;
    }
    // The stop marker: this side stays connected until the other side confirms it (an empty
    // reply, or an Ack of kStopSeen). Without that, the last messages of a sender that closed at
    // once after them (64 KiB and 1 MiB, a run in a few) never reached the receiver here:
    // dbus-daemon can drop what it has not yet read from a connection that has hung up.
    if (!roundtrip_)
      return pump([&] { return stop_acked_; }, "waiting for the consumer to confirm the stop marker");
    pump([&] { return !pending_.empty(); }, "waiting for the server to confirm the stop marker");
    sd_bus_message_unref(pending_.front());
    pending_.pop_front();
  }

  std::byte* recv_in_place(std::byte*, size_t len) override {
    held_.reset();
    pump([&] { return !pending_.empty(); }, "waiting for a message");
    held_.reset(pending_.front());
    pending_.pop_front();
    if (sd_bus_message_is_method_error(held_.get(), nullptr)) {
      const sd_bus_error* e = sd_bus_message_get_error(held_.get());
      throw std::runtime_error(fmt::format("Echo failed: {}: {}", e && e->name ? e->name : "?",
                                           e && e->message ? e->message : "?"));
    }
    const void* body = nullptr;
    size_t n = 0;
    must(sd_bus_message_read_array(held_.get(), 'y', &body, &n), "read ay");
    if (n != len) throw std::runtime_error(fmt::format("a message of {} bytes, expected {}", n, len));
    auto* at = static_cast<std::byte*>(const_cast<void*>(body));
    if (msg::is_stop(at, len))
      confirm_stop();
    else if (!roundtrip_ && ++received_ % cfg_.ack_every == 0) {
      must(sd_bus_emit_signal(bus_.get(), kPath, kInterface, "Ack", "t", received_), "emit Ack");
    }
    return at;
  }

 private:
  // A call, a reply or a Data signal: kept for recv (sd-bus is C: nothing may be thrown through it).
  static int on_message(sd_bus_message* m, void* self, sd_bus_error*) {
    static_cast<DbusEndpoint*>(self)->pending_.push_back(sd_bus_message_ref(m));
    return 1;
  }
  static int on_ack(sd_bus_message* m, void* self, sd_bus_error*) {
    uint64_t count = 0;
    if (sd_bus_message_read(m, "t", &count) > 0) {
      auto* e = static_cast<DbusEndpoint*>(self);
      if (count == kStopSeen)
        e->stop_acked_ = true;
      else
        e->acked_ = std::max(e->acked_, count);
    }
    return 1;
  }

  // Processes messages (writing what is queued, running the callbacks) until `done`, waiting at
  // most 100 ms at a time and giving the run its chance to abort in between.
  template <class Done>
  void pump(Done done, const char* what) {
    while (!done()) {
      int r = sd_bus_process(bus_.get(), nullptr);
      if (r > 0) continue;
      if (r == 0) r = sd_bus_wait(bus_.get(), kWaitUs);
      if (r < 0 && r != -EINTR) failed(r, what);
      messaging::poll_abort();
    }
  }
  // Confirms the stop marker in `held_` (see send), then stays connected until its sender has
  // closed, which it does once it has the confirmation: so that the confirmation, the last message,
  // is not lost in turn. The daemon says when the sender's unique name goes (NameOwnerChanged);
  // the match is in place before the confirmation leaves, hence before the sender can go.
  void confirm_stop() {
    const char* sender = sd_bus_message_get_sender(held_.get());
    if (!sender) throw std::runtime_error("a stop marker without a sender");
    const std::string rule = fmt::format(
        "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
        "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='{}',arg2=''",
        sender);
    sd_bus_slot* slot = nullptr;
    const int r = sd_bus_add_match_async(bus_.get(), &slot, rule.c_str(), on_sender_gone, on_answer, this);
    gone_slot_.reset(slot);
    await_daemon(r, "AddMatch NameOwnerChanged");
    if (roundtrip_)
      must(sd_bus_reply_method_return(held_.get(), "ay", 0), "reply to the stop marker");
    else
      must(sd_bus_emit_signal(bus_.get(), kPath, kInterface, "Ack", "t", kStopSeen), "emit Ack");
    drain();
    pump([&] { return sender_gone_; }, "waiting for the sender of the stop marker to close");
  }
  static int on_sender_gone(sd_bus_message*, void* self, sd_bus_error*) {
    static_cast<DbusEndpoint*>(self)->sender_gone_ = true;
    return 1;
  }

  // The daemon's answer to a request made with `on_answer` (RequestName, AddMatch), waited for
  // as every wait here: bounded, and ended by the run's abort.
  void await_daemon(int r, const char* what) {
    must(r, what);
    pump([&] { return answered_; }, what);
    answered_ = false;
    if (const int e = std::exchange(answer_error_, 0)) fail_sd_bus(-e, what);
  }
  static int on_answer(sd_bus_message* m, void* self, sd_bus_error*) {
    auto* e = static_cast<DbusEndpoint*>(self);
    e->answered_ = true;
    if (sd_bus_message_is_method_error(m, nullptr))
      e->answer_error_ = std::max(1, sd_bus_message_get_errno(m));
    return 1;
  }

  // sd-bus queues what the socket does not take at once, and writes that queue only when asked
  // (process, wait, flush): a send completes once the daemon has the whole message.
  void drain() {
    pump(
        [&] {
          uint64_t queued = 0;
          return sd_bus_get_n_queued_write(bus_.get(), &queued) >= 0 && queued == 0;
        },
        "sending");
  }
  [[noreturn]] void failed(int r, const char* what) const {
    if (r == -ECONNRESET || r == -ENOTCONN || r == -EPIPE)
      fail_sd_bus(r,
                  fmt::format("lost the connection to the private dbus-daemon ({}) {}", cfg_.address, what));
    fail_sd_bus(r, fmt::format("sd-bus {}", what));
  }

  Bus cfg_;
  bool producer_, roundtrip_;
  // Closed last (flushed first: nothing is queued by then).
  std::unique_ptr<sd_bus, decltype(&sd_bus_flush_close_unref)> bus_{nullptr, sd_bus_flush_close_unref};
  std::unique_ptr<sd_bus_slot, decltype(&sd_bus_slot_unref)> slot_{nullptr, sd_bus_slot_unref},
      gone_slot_{nullptr, sd_bus_slot_unref};
  std::deque<sd_bus_message*> pending_;
  // The message the last receive points into.
  std::unique_ptr<sd_bus_message, decltype(&sd_bus_message_unref)> held_{nullptr, sd_bus_message_unref};
  uint64_t sent_ = 0, acked_ = 0, received_ = 0;
  bool stop_acked_ = false, sender_gone_ = false, answered_ = false;
  int answer_error_ = 0;  // errno of the daemon's error answer
};

// A file or socket of the run, removed with the transport.
struct RunPath {
  explicit RunPath(ipc::Kind k) : kind(k) {}
  RunPath(const RunPath&) = delete;
  ipc::Kind kind;
  std::string path;
  ~RunPath() {
    if (!path.empty()) ipc::remove(kind, path);
  }
};

// A value in a D-Bus address ("unix:path=<value>"): every byte but [-0-9A-Za-z_/.\*] as %XX, as
// the D-Bus specification asks (dbus-daemon refuses a ',' or '&' left as it is).
std::string address_escape(const std::string& v) {
  std::string out;
  for (unsigned char c : v) {
    if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
        (c != 0 && std::strchr("-_/.\\*", c) != nullptr))
      out += char(c);
    else
      out += fmt::format("%{:02x}", c);
  }
  return out;
}

// Text in an XML document: its five special characters as entities.
std::string xml_escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string config(const std::string& socket) {
  // Limits: a 1 MiB message must pass, and the queue of a connection must hold the signals'
  // window many times over (it is never to drop one); the rest are the daemon's defaults.
  return fmt::format(R"(<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>custom</type>
  <listen>unix:path={}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <deny own="*"/>
    <deny send_type="*"/>
    <deny receive_type="*"/>
  </policy>
  <policy user="{}">
    <allow own="*"/>
    <allow send_type="*"/>
    <allow receive_type="*"/>
  </policy>
  <limit name="max_message_size">{}</limit>
  <limit name="max_incoming_bytes">{}</limit>
  <limit name="max_outgoing_bytes">{}</limit>
</busconfig>
)",
                     xml_escape(address_escape(socket)), geteuid(), kMaxMessage, kQueueLimit, kQueueLimit);
}

class DbusTransport final : public LibraryTransport {
 public:
  explicit DbusTransport(const Params& p)
      : LibraryTransport(p, "dbus", library(), "unix_stream"), roundtrip_(std_params::is_roundtrip(p)) {
    set_baseline("unix_stream");  // one socket each way, where D-Bus crosses two and its daemon
    static std::atomic<uint64_t> n{0};
    const uint64_t id = ++n;
    const size_t size = size_t(p.i64("size"));
    bus_.name = fmt::format("org.ipclab.b{}", id);
    bus_.window = std::clamp<uint64_t>(kWindowBytes / size, kMinWindow, kMaxWindow);
    bus_.ack_every = bus_.window / 4;
    const std::string text = config(socket_.path = socket_path("bus"));  // the daemon creates it
    const int fd = ipc::create_file(ipc::run_dir(), "dbus", 0600, conf_.path);
    const bool written = write(fd, text.data(), text.size()) == ssize_t(text.size());
    close(fd);
    if (!written) throw std::system_error(errno, std::generic_category(), "write " + conf_.path);
    daemon_ = std::make_unique<Daemon>(Daemon::Options{
        .name = "dbus-daemon",
        .argv = {kDaemon, "--config-file=" + conf_.path, "--nofork", "--nopidfile", "--nosyslog",
                 "--print-address=1"},
        // The address it prints ("unix:path=...,guid=..."): an error naming the path has no guid.
        .ready_text = ",guid="});
    bus_.address = daemon_->ready_line();  // with the bus's guid, which sd-bus checks
  }
  std::unique_ptr<Endpoint> open(Role role, int) override {
    return std::make_unique<DbusEndpoint>(bus_, rendezvous(), role, roundtrip_);
  }
  void attach(Session& s) override { daemon_->attach(s); }
  void describe(nlohmann::json& extra) const override {
    LibraryTransport::describe(extra);
    extra["bus_name"] = bus_.name;
    if (!roundtrip_) {
      extra["flow_window"] = bus_.window;
      extra["ack_every"] = bus_.ack_every;
    }
  }

 private:
  bool roundtrip_;
  Bus bus_;
  RunPath conf_{ipc::Kind::File}, socket_{ipc::Kind::Path};
  std::unique_ptr<Daemon> daemon_;  // the last member: stopped before its socket and configuration go
};

const LibraryVersion kSdBusVersion{"sd-bus", [] { return "libsystemd " + libsystemd_version(); }};
const LibraryVersion kDaemonVersion{"dbus-daemon", daemon_version};

IPCLAB_REGISTER(Mechanism{
    .suite = "libs",
    .name = "dbus",
    .help = "D-Bus through sd-bus and a private dbus-daemon: method calls for round trips, signals (with an "
            "acknowledged window) for throughput",
    .params = suite_params({}),
    .transport = [](const Params& p) -> std::unique_ptr<Transport> {
      return std::make_unique<DbusTransport>(p);
    },
    .check = [](const Params& p) { return check(p, true); },  // its bus's socket, in the run's folder
});

}  // namespace
}  // namespace ipclab::libs
