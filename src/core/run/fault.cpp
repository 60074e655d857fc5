#include "core/run/fault.hpp"

#include <fmt/format.h>

#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/base/params.hpp"
#include "core/load/message.hpp"
#include "core/measure/session.hpp"
#include "core/model/mechanism.hpp"

namespace ipclab {

namespace {

struct Fault {
  uint64_t corrupt_every = 0;
  std::string mech;  // slow, ramp, queue and stall: the mechanism they apply to
  uint64_t slow_ns = 0;
  uint64_t ramp_ns = 0;
  uint64_t queue_ns = 0;
  std::string stall_role;
  uint64_t stall_ms = 0;
  uint64_t stall_every_ms = 0;  // 0: once
  int crash = 0;                // crash: the signal
};

// The signal of a crash's HOW; 0 for anything else.
int crash_signal(const std::string& how) {
  if (how == "abort") return SIGABRT;
  if (how == "segv") return SIGSEGV;
  if (how == "bus") return SIGBUS;
  if (how == "fpe") return SIGFPE;
  if (how == "ill") return SIGILL;
  return 0;
}

// A crash as it happens in real code: abort() as a library calls it, a write through a null
// pointer the compiler cannot see, the others raised.
[[noreturn]] void crash_now(int sig) {
  static int* volatile nowhere = nullptr;
  if (sig == SIGABRT) std::abort();
  if (sig == SIGSEGV) *nowhere = 1;
  raise(sig);
  std::abort();  // not reached: the handler dies of `sig`
}

// A decimal count >= 1, or 0 when `s` is anything else.
uint64_t count_of(const std::string& s) {
  const auto v = parse_integer(s);
  return v && *v >= 1 ? uint64_t(*v) : 0;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> parts;
  size_t pos = 0;
  for (size_t c; (c = s.find(':', pos)) != std::string::npos; pos = c + 1)
    parts.push_back(s.substr(pos, c - pos));
  parts.push_back(s.substr(pos));
  return parts;
}

// Parses IPCLAB_FAULT (read on every call: tests set it between runs of one process).
Fault parse() {
  Fault f;
  const char* env = std::getenv("IPCLAB_FAULT");
  if (!env || !*env) return f;
  const auto bad = [&] {
    return UsageError(
        fmt::format("IPCLAB_FAULT='{}' is not a fault spec; use {} (N, NS, MS >= 1; ROLE: "
                    "producer, consumer, client or server)",
                    brief(env), kFaultForms));
  };
  const auto parts = split(env);
  if (parts[0] == "corrupt" && parts.size() == 2) {
    if (!(f.corrupt_every = count_of(parts[1]))) throw bad();
  } else if (parts[0] == "queue" && parts.size() == 3 && !parts[1].empty()) {
    f.mech = parts[1];
    if (!(f.queue_ns = count_of(parts[2]))) throw bad();
  } else if (parts[0] == "slow" && parts.size() == 3 && !parts[1].empty()) {
    f.mech = parts[1];
    if (!(f.slow_ns = count_of(parts[2]))) throw bad();
  } else if (parts[0] == "ramp" && parts.size() == 3 && !parts[1].empty()) {
    f.mech = parts[1];
    if (!(f.ramp_ns = count_of(parts[2]))) throw bad();
  } else if (((parts[0] == "stall" && (parts.size() == 4 || parts.size() == 5)) ||
              (parts[0] == "crash" && parts.size() == 4)) &&
             !parts[1].empty()) {
    f.mech = parts[1];
    f.stall_role = parts[2];
    if (parts[0] == "crash" && !(f.crash = crash_signal(parts[3]))) throw bad();
    if (f.stall_role != "producer" && f.stall_role != "consumer" && f.stall_role != "client" &&
        f.stall_role != "server")
      throw bad();
    if (parts[0] == "stall" && !(f.stall_ms = count_of(parts[3]))) throw bad();
    if (parts.size() == 5 && (!(f.stall_every_ms = count_of(parts[4])) || f.stall_every_ms <= f.stall_ms))
      throw bad();
  } else {
    throw bad();
  }
  return f;
}

void spin_until(uint64_t until) {
  while (now_ns() < until && !abort_requested()) {
  }
}

}  // namespace

// A fault names a mechanism (by name or suite/name) that must exist, or it would never fire.
void check_fault_env() {
  const Fault f = parse();
  if (f.mech.empty()) return;
  std::string names;
  for (auto& m : Registry::get().mechanisms()) {
    if (f.mech == m.name || f.mech == m.full_name()) return;
    names += (names.empty() ? "" : ", ") + m.full_name();
  }
  throw UsageError(fmt::format("IPCLAB_FAULT='{}': no mechanism '{}'; name one of {} (see `ipclab list`)",
                               brief(std::getenv("IPCLAB_FAULT")), brief(f.mech, 40), brief(names, 120)));
}

FaultPoint::~FaultPoint() {
  if (queue_taken_)
    fmt::print(stderr, "fault queue: {} messages of the window, done {:.0f} ns late on average\n",
               queue_taken_, double(queue_late_ns_) / double(queue_taken_));
}

FaultPoint::FaultPoint(const Mechanism& mech, double duration_s, Role role, bool roundtrip, const Worker& w)
    : w_(w), window_ns_(uint64_t(duration_s * 1e9)), half_window_ns_(uint64_t(duration_s * 0.5e9)) {
  const Fault f = parse();
  const bool this_mech = f.mech == mech.name || f.mech == mech.full_name();
  const bool receiver = role == Role::Consumer;
  // Only what applies to this side: corrupt, slow and ramp act on receivers, stall on its own role.
  if (receiver) corrupt_every_ = f.corrupt_every;
  if (receiver && this_mech) slow_ns_ = f.slow_ns;
  if (receiver && this_mech) ramp_ns_ = f.ramp_ns;
  if (receiver && this_mech) queue_ns_ = f.queue_ns;
  if (this_mech && f.stall_role == role_name(role, roundtrip)) {
    stall_ns_ = f.stall_ms * 1'000'000;
    period_ns_ = f.stall_every_ms * 1'000'000;
    crash_ = f.crash;
  }
  armed_ = corrupt_every_ || slow_ns_ || ramp_ns_ || queue_ns_ || stall_ns_ || crash_;
}

void FaultPoint::received(std::byte* buf, size_t n) {
  if (corrupt_every_ && !msg::is_stop(buf, n) && ++count_ % corrupt_every_ == 0 && n > msg::kHeaderSize)
    buf[n - 1] ^= std::byte(0x5a);
  if (slow_ns_) spin_until(now_ns() + slow_ns_);
  if (ramp_ns_ && w_.measuring()) {
    // From 0 as this side first receives in the window to NS at --duration after it (and NS on).
    const uint64_t now = now_ns();
    if (!ramp_start_) ramp_start_ = now;
    const double part = window_ns_ ? std::min(1.0, double(now - ramp_start_) / double(window_ns_)) : 1.0;
    spin_until(now + uint64_t(part * double(ramp_ns_)));
  }
  if (queue_ns_ && n >= msg::kHeaderSize && !msg::is_stop(buf, n)) {
    // A single server in virtual time: message k arrives at its intended send time when it
    // carries one (open loop: the queue sees the schedule itself, and a sender's lateness shows
    // only beyond the wait), else at its send time, and is done at max(that, k-1's done) + NS,
    // whenever this side actually got to it — so that the machine taking this side away for a
    // while delays only the messages due meanwhile, not every later one. Returns once it is done.
    const msg::Header h = msg::read_header(buf, n);
    const uint64_t at = (h.flags & msg::kIntended) ? h.intended_ns : h.send_ns;
    queue_done_ = std::max(queue_done_, at ? at : now_ns()) + queue_ns_;
    spin_until(queue_done_);
    if (w_.measuring()) {
      // This side's own lateness: how long after both its virtual completion and its actual send
      // it got the message done — the time the machine took this side away, which the sender's
      // lateness does not show (said on stderr at the end, for the queueing tests).
      const uint64_t now = now_ns(), due = std::max(queue_done_, h.send_ns);
      queue_late_ns_ += now > due ? now - due : 0;
      ++queue_taken_;
    }
  }
  maybe_stall();
}

// Once, at the first operation past the middle of the measured window as this side sees it; or,
// periodic, at the first operation past each period's end from the window's start (as this side
// saw it), the periods counted on that start so that late stalls do not shift later ones.
// A crash comes at the point of a stall that happens once.
void FaultPoint::maybe_stall() {
  if ((!stall_ns_ && !crash_) || stalled_ || !w_.measuring()) return;
  const uint64_t now = now_ns();
  if (!window_seen_) {
    window_seen_ = now;
    next_stall_ = now + (period_ns_ ? period_ns_ : half_window_ns_);
  }
  if (now < next_stall_) return;
  if (crash_) crash_now(crash_);
  if (period_ns_)
    next_stall_ += period_ns_;
  else
    stalled_ = true;
  spin_until(now + stall_ns_);
}

}  // namespace ipclab
