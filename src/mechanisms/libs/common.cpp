#include "mechanisms/libs/common.hpp"

#include <sched.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <thread>
#include <utility>

#include "core/base/cancel.hpp"
#include "core/base/error.hpp"
#include "core/model/std_params.hpp"
#include "core/ownership/journal.hpp"
#include "mechanisms/messaging/common.hpp"

namespace ipclab::libs {

std::vector<ParamSpec> suite_params(const std::vector<std::string>& endpoints, std::vector<ParamSpec> extra) {
  // Open loop too (pattern=rate: the sender on a schedule, latency from each message's intended
  // time), as the messaging suite offers it, so that a library reads beside its kernel transport
  // under the same offered load.
  auto pattern = std_params::pattern();
  auto mode = std_params::mode({"threads"}, {"threads", "processes"});
  std::vector<ParamSpec> v = {
      pattern,
      std_params::size({"64", "4K", "64K"}, {"64", "4K", "64K"}, kMaxSize),
      mode,
      std_params::placement({"same", "cross", "unpinned"}, {"same", "cross"}),
      std_params::verify(),
  };
  if (!endpoints.empty())
    v.push_back({.name = "endpoint",
                 .type = ParamType::String,
                 .def = endpoints.front(),
                 .choices = endpoints,
                 .help =
                     "ipc: a Unix stream socket in the run's private folder; tcp: loopback 127.0.0.1 (with "
                     "--remote: the receiving side on the remote host, on its data path's address); inproc: "
                     "inside the process (threads only)",
                 .quick = endpoints});
  for (auto& r : std_params::rate_params()) v.push_back(std::move(r));
  for (auto& e : extra) v.push_back(std::move(e));
  return v;
}

std::string check(const Params& p, bool unix_socket) {
  if (p.str_or("endpoint", "") == "inproc" && p.str("mode") == "processes")
    return "inproc stays inside one process; use mode=threads or endpoint=ipc";
  // A socket in the run's folder under TMPDIR: its path must fit sun_path (socket_path).
  if (unix_socket || p.str_or("endpoint", "") == "ipc")
    if (std::string why = ipc::socket_path_problem(kSocketNameMax); !why.empty()) return why;
  return std_params::size_problem(p);
}

std::string half_check(const Params& p) {
  const std::string e = p.str_or("endpoint", "");
  if (e == "tcp") return "";
  return fmt::format("endpoint={} {}; use -p endpoint=tcp", e,
                     e == "inproc" ? "stays inside one process" : "is a Unix socket, on one host");
}

void ForkRule::admit(const Params& p) {
  const bool processes = p.str("mode") == "processes";
  if (processes && started_here_.load())
    throw Skip(
        fmt::format("{} already ran in this process (mode=threads), and {}: run mode=processes in an ipclab "
                    "run of its own",
                    library_, why_));
  if (!processes) started_here_.store(true);
}

void Rendezvous::publish(const std::string& a) {
  if (a.size() >= sizeof address) throw std::runtime_error("endpoint address too long: " + a);
  std::memcpy(address, a.c_str(), a.size() + 1);
  ready.store(1, std::memory_order_release);
}

std::string Rendezvous::wait() const {
  for (uint32_t spins = 0; !ready.load(std::memory_order_acquire); ++spins) {
    if ((spins & 63) == 63) messaging::poll_abort();
    sched_yield();
  }
  return address;
}

bool Rendezvous::wait_stop_taken(double timeout_s) const {
  // Across hosts the sender closes at once; what it still has queued leaves all the same, as its
  // library lingers (ZeroMQ's ZMQ_LINGER) and its context outlives the run's end there.
  if (far) return false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (!stop_taken.load(std::memory_order_acquire)) {
    if (abort_requested() || std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));  // after the window: its cost is nobody's
  }
  return true;
}

namespace {

// The kernel transport an endpoint kind rides on, for the record and the report's baseline.
const char* kernel_transport(const std::string& endpoint) {
  return endpoint == "ipc" ? "unix_stream" : endpoint == "tcp" ? "tcp" : "none (in-process)";
}

// `host`: tcp's IPv4 address (a half's across hosts; loopback here).
std::string listen_address(const std::string& endpoint, const std::string& tag, const std::string& host) {
  if (endpoint == "tcp") return "tcp://" + host;
  const std::string name = ipc::unique_name(tag);  // "/ipclab.<run>.<n>.<tag>"
  if (endpoint == "inproc") return "inproc:/" + name;
  return "ipc://" + socket_path(tag);
}

}  // namespace

std::string socket_path(const std::string& tag) {
  // The run's folder is private to the run: a short name in it is unique, and a Unix socket's
  // path must fit sun_path (107 bytes).
  static std::atomic<uint64_t> n{0};
  const std::string name = fmt::format("{}{}", tag, ++n);
  const std::string path = fmt::format("{}/{}", ipc::run_dir(), name);
  if (name.size() > kSocketNameMax || path.size() > ipc::kSocketPathMax)  // check() refused it already
    throw std::runtime_error(fmt::format(
        "the ipc socket path {} is {} bytes, over the {} a Unix socket takes; set TMPDIR to a shorter folder",
        path, path.size(), ipc::kSocketPathMax));
  ipc::track_path(path);  // the library (or its daemon) creates the socket; the run removes it
  return path;
}

LibraryTransport::LibraryTransport(const Params& p, const std::string& tag, std::string library,
                                   std::string kernel_transport, const Half* half)
    : endpoint_(p.str_or("endpoint", "")),
      address_(endpoint_.empty() ? "" : listen_address(endpoint_, tag, half ? half->address : "127.0.0.1")),
      library_(std::move(library)),
      kernel_transport_(std::move(kernel_transport)),
      rv_(sizeof(Rendezvous)) {
  new (rv_.get()) Rendezvous();
  if (endpoint_ == "ipc" || endpoint_ == "tcp") set_baseline(libs::kernel_transport(endpoint_));
  if (half && half->role == Role::Producer) {  // the receiver listens on the other host, there
    rendezvous().far = true;
    rendezvous().publish(fmt::format("{}:{}", address_, half->port));
  }
}

int LibraryTransport::listening_port() const {
  const Rendezvous& rv = rendezvous();
  if (endpoint_ != "tcp" || !rv.ready.load(std::memory_order_acquire)) return 0;
  const char* colon = std::strrchr(rv.address, ':');
  return colon ? std::atoi(colon + 1) : 0;
}

// The library leaves its ipc socket behind (libzmq does) once the sides have closed.
LibraryTransport::~LibraryTransport() {
  if (address_.rfind("ipc://", 0) == 0) ipc::remove(ipc::Kind::Path, address_.substr(6));
}

void LibraryTransport::describe(nlohmann::json& extra) const {
  extra["library"] = library_;
  extra["kernel_transport"] = kernel_transport_.empty() ? kernel_transport(endpoint_) : kernel_transport_;
  if (!baseline_.is_null()) extra["baseline"] = baseline_;
}

}  // namespace ipclab::libs
