#include "core/fault.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/message.hpp"
#include "core/params.hpp"
#include "core/session.hpp"

namespace ipclab {

namespace {

struct Fault {
  uint64_t corrupt_every = 0;
  std::string mech;  // slow and stall: the mechanism they apply to
  uint64_t slow_ns = 0;
  std::string stall_role;
  uint64_t stall_ms = 0;
};

// A decimal count >= 1, or 0 when `s` is anything else.
uint64_t count_of(const std::string& s) {
  const auto v = parse_integer(s);
  return v && *v >= 1 ? uint64_t(*v) : 0;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> parts;
  size_t pos = 0;
  for (size_t c; (c = s.find(':', pos)) != std::string::npos; pos = c + 1) parts.push_back(s.substr(pos, c - pos));
  parts.push_back(s.substr(pos));
  return parts;
}

// Parses IPCLAB_FAULT (read on every call: tests set it between runs of one process).
Fault parse() {
  Fault f;
  const char* env = std::getenv("IPCLAB_FAULT");
  if (!env || !*env) return f;
  const auto bad = [&] {
    return UsageError(fmt::format("IPCLAB_FAULT='{}' is not a fault spec; use {} (N, NS, MS >= 1; ROLE: "
                                  "producer, consumer, client or server)", env, kFaultForms));
  };
  const auto parts = split(env);
  if (parts[0] == "corrupt" && parts.size() == 2) {
    if (!(f.corrupt_every = count_of(parts[1]))) throw bad();
  } else if (parts[0] == "slow" && parts.size() == 3 && !parts[1].empty()) {
    f.mech = parts[1];
    if (!(f.slow_ns = count_of(parts[2]))) throw bad();
  } else if (parts[0] == "stall" && parts.size() == 4 && !parts[1].empty()) {
    f.mech = parts[1];
    f.stall_role = parts[2];
    if (f.stall_role != "producer" && f.stall_role != "consumer" && f.stall_role != "client" &&
        f.stall_role != "server")
      throw bad();
    if (!(f.stall_ms = count_of(parts[3]))) throw bad();
  } else {
    throw bad();
  }
  return f;
}

class FaultyEndpoint final : public Endpoint {
 public:
  FaultyEndpoint(std::unique_ptr<Endpoint> inner, const Fault& f, Worker& w, double duration_s)
      : inner_(std::move(inner)), f_(f), w_(w), half_window_ns_(uint64_t(duration_s * 0.5e9)) {}
  void send(const std::byte* data, size_t len) override {
    maybe_stall();
    inner_->send(data, len);
  }
  size_t recv(std::byte* buf, size_t len) override {
    size_t n = inner_->recv(buf, len);
    if (f_.corrupt_every && !msg::is_stop(buf, n) && ++count_ % f_.corrupt_every == 0 && n > msg::kHeaderSize)
      buf[n - 1] ^= std::byte(0x5a);
    if (f_.slow_ns) spin_until(now_ns() + f_.slow_ns);
    maybe_stall();
    return n;
  }

 private:
  static void spin_until(uint64_t until) {
    while (now_ns() < until && !abort_requested()) {
    }
  }
  // Once, at the first operation past the middle of the measured window as this side sees it.
  void maybe_stall() {
    if (!f_.stall_ms || stalled_ || !w_.measuring()) return;
    const uint64_t now = now_ns();
    if (!window_seen_) window_seen_ = now;
    if (now < window_seen_ + half_window_ns_) return;
    stalled_ = true;
    spin_until(now + f_.stall_ms * 1'000'000);
  }
  std::unique_ptr<Endpoint> inner_;
  Fault f_;
  Worker& w_;
  uint64_t half_window_ns_;
  uint64_t count_ = 0, window_seen_ = 0;
  bool stalled_ = false;
};

}  // namespace

void check_fault_env() { parse(); }

std::unique_ptr<Endpoint> with_faults(std::unique_ptr<Endpoint> ep, const Mechanism& mech,
                                      const std::string& role, Worker& w, double duration_s) {
  Fault f = parse();
  const bool this_mech = f.mech == mech.name || f.mech == mech.full_name();
  const bool receiver = role == "consumer" || role == "server";
  // Only what applies to this side: corrupt and slow act on receivers, stall on its own role.
  if (!receiver) f.corrupt_every = 0;
  if (!receiver || !this_mech) f.slow_ns = 0;
  if (!this_mech || f.stall_role != role) f.stall_ms = 0;
  if (!f.corrupt_every && !f.slow_ns && !f.stall_ms) return ep;
  return std::make_unique<FaultyEndpoint>(std::move(ep), f, w, duration_s);
}

}  // namespace ipclab
