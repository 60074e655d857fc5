#include "core/peers/peer.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>

#include "core/base/affinity.hpp"
#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/measure/session.hpp"
#include "core/measure/watchdog.hpp"
#include "core/process/process.hpp"

namespace ipclab {

namespace {

// The descriptors between the harness and a peer: the read ends of its stdout and stderr, and the
// harness's end of its stdin (-1: a peer without phases).
struct PeerFds {
  int out = -1, err = -1, in = -1;
};

// Starts `argv` pinned to `cpu`, its stdout and stderr on pipes and, for a phased peer, its stdin
// on a socket. The phases go down a socket rather than a pipe: send(MSG_NOSIGNAL) to a peer that
// died is an error to ignore, not a SIGPIPE.
Process spawn_peer(const std::vector<std::string>& argv, int cpu, bool phased, PeerFds& fds) {
  int out[2] = {-1, -1}, err[2] = {-1, -1}, in[2] = {-1, -1};
  Process peer;
  try {
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
        (phased && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0))
      throw std::system_error(errno, std::generic_category(), "pipe");
    peer =
        Process::exec(Spawn{.cpu = cpu, .stdin_fd = in[0], .stdout_fd = out[1], .stderr_fd = err[1]}, argv);
  } catch (...) {
    for (int fd : {out[0], out[1], err[0], err[1], in[0], in[1]})
      if (fd >= 0) close(fd);
    throw;
  }
  close(out[1]);
  close(err[1]);
  if (in[0] >= 0) close(in[0]);
  fds = {.out = out[0], .err = err[0], .in = in[1]};
  return peer;
}

// The phase lines to a phased peer on its stdin (`fd`; -1: none, or closed after stop), due once
// it says it is ready; the window's steal read into the run as they go.
struct PhaseLines {
  static constexpr const char* kLines[2] = {"measure\n", "stop\n"};
  int fd = -1;
  uint64_t at[2] = {0, 0};  // when each is due (now_ns), set once the peer is ready (0: not yet)
  int sent = 0;             // how many are written
  uint64_t steal_from = 0;  // when run.steal.from was read (now_ns)

  bool awaits_ready() const { return fd >= 0 && !at[0]; }
  // Ready: the warm-up runs from now on the harness's clock, then the measured window.
  void ready(const PeerPhases& phases) {
    at[0] = now_ns() + uint64_t(phases.warmup_s * 1e9);
    at[1] = at[0] + uint64_t(phases.duration_s * 1e9);
  }
  uint64_t next(uint64_t deadline) const {
    return fd >= 0 && at[0] ? std::min(deadline, at[sent]) : deadline;
  }
  void send_due(uint64_t now, PeerRun& run) {
    for (; fd >= 0 && at[0] && now >= at[sent]; ++sent) {
      [[maybe_unused]] ssize_t n = send(fd, kLines[sent], strlen(kLines[sent]), MSG_NOSIGNAL);
      // The window's steal, read as the lines go.
      if (sent == 0) {
        run.steal.from = read_steal();
        steal_from = now_ns();
      } else {
        run.steal.to = read_steal();
        run.steal.span_s = double(now_ns() - steal_from) * 1e-9;
        run.steal.of_window = true;
        close(fd);  // after stop, the end of input
        fd = -1;
      }
    }
  }
};

// What watching a peer to its end gathered: its stdout and stderr, and why it was cut short
// (its time limit, or the watchdog's verdict on a peer that stood still).
struct PeerWatch {
  std::string out, err;
  bool timed_out = false;
  std::string stalled;
};

// Appends what `f` has to `buf`; false (and `f` closed) at its end.
bool read_chunk(pollfd& f, std::string& buf) {
  char chunk[4096];
  ssize_t n = read(f.fd, chunk, sizeof chunk);
  if (n <= 0) {
    close(f.fd);
    f.fd = -1;
    return false;
  }
  buf.append(chunk, size_t(n));
  return true;
}

// Reads the peer's output until both its ends close, writing its phase lines when due, then waits
// for it to exit; within `timeout_s`, and watched for progress with a `window_s` window's stall limit.
PeerWatch watch_peer(Process& peer, const PeerFds& fds, PhaseLines& lines, const PeerPhases* phases,
                     double timeout_s, double window_s, PeerRun& run) {
  PeerWatch w;
  const uint64_t deadline = now_ns() + uint64_t(timeout_s * 1e9);
  Watchdog watchdog(window_s);
  watchdog.watch("peer", 0, peer.pid(), -1, [&peer] { return uint64_t(peer.cpu_seconds() * 1e9); });
  pollfd polled[2] = {{fds.out, POLLIN, 0}, {fds.err, POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    uint64_t now = now_ns();
    if (now >= deadline) {
      w.timed_out = true;
      break;
    }
    if (w.stalled = watchdog.check(); !w.stalled.empty()) break;
    lines.send_due(now, run);
    const uint64_t next = lines.next(deadline);
    // Woken at least every 50 ms for the watchdog (its limit is 1 s or more).
    int ms = int(std::min<uint64_t>((next - std::min(next, now)) / 1'000'000 + 1, 50));
    int r = poll(polled, 2, ms);
    if (r < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (polled[i].fd < 0 || !(polled[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (!read_chunk(polled[i], i == 0 ? w.out : w.err)) {
        --open_fds;
        continue;
      }
      if (i == 0 && lines.awaits_ready() && w.out.rfind("ready\n", 0) == 0) lines.ready(*phases);
    }
  }
  if (lines.fd >= 0) close(lines.fd);
  for (auto& f : polled)
    if (f.fd >= 0) close(f.fd);
  // A peer that closed its output but goes on is given what is left of its time, watched.
  while (!w.timed_out && w.stalled.empty() && !peer.wait(0.05)) {
    if (now_ns() >= deadline)
      w.timed_out = true;
    else
      w.stalled = watchdog.check();
  }
  return w;
}

// The last few lines of a peer's stderr on one line, for the error message.
std::string last_stderr_lines(const std::string& err) {
  size_t cut = err.size();
  for (int lines = 0; cut > 0 && lines < 4; ++lines) {
    cut = err.rfind('\n', cut - 1);
    if (cut == std::string::npos) {
      cut = 0;
      break;
    }
  }
  std::string tail = err.substr(cut);
  while (!tail.empty() && (tail.front() == '\n')) tail.erase(0, 1);
  for (auto& ch : tail)
    if (ch == '\n') ch = ' ';
  return tail;
}

// The records of the peer's stdout, one per non-blank line (a phased peer's first line is its
// `ready`); the first line that is not one is the run's error.
void read_records(PeerRun& run, const std::string& out, bool phased) {
  size_t pos = 0;
  int line_no = 0;
  while (pos < out.size()) {
    size_t nl = out.find('\n', pos);
    std::string line = out.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? out.size() : nl + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (phased && line_no == 1 && line == "ready") continue;  // the phases' handshake
    try {
      run.records.push_back(record_from_json(nlohmann::json::parse(line)));
    } catch (const std::exception& e) {
      if (run.error.empty())
        run.error = fmt::format("peer output line {} is not a valid record: {}", line_no, e.what());
    }
  }
}

}  // namespace

PeerRun run_peer(const std::vector<std::string>& argv, int cpu, double timeout_s, double window_s,
                 const PeerPhases* phases) {
  PeerRun run;
  if (argv.empty()) throw std::logic_error("run_peer: empty argv");
  if (access(argv[0].c_str(), X_OK) != 0)
    throw Skip(fmt::format("peer {} is not built; run `make peers`", argv[0]));
  PeerFds fds;
  Process peer = spawn_peer(argv, cpu, phases != nullptr, fds);
  run.steal.from = read_steal();  // its whole run, unless its phases bound its window
  PhaseLines lines{.fd = fds.in, .steal_from = now_ns()};
  const PeerWatch w = watch_peer(peer, fds, lines, phases, timeout_s, window_s, run);
  // A peer prints its record at the end only: it shows no progress before, so its timeout is
  // the watchdog's only hold on it. A stopped peer is named as such.
  const char state = w.timed_out ? task_state(peer.pid(), -1) : 0;
  peer.stop();  // SIGKILL when it is still there; reaped either way
  run.cpu = peer.usage();
  if (!run.steal.of_window) {
    run.steal.to = read_steal();
    run.steal.span_s = double(now_ns() - lines.steal_from) * 1e-9;
  }
  run.stderr_tail = last_stderr_lines(w.err);
  read_records(run, w.out, phases != nullptr);
  if (!w.stalled.empty())
    run.error = fmt::format("{}; peer {} was killed", w.stalled, argv[0]);
  else if (w.timed_out)
    run.error = fmt::format(
        "stalled: peer {} (pid {}){} did not finish within {:.0f} s and was killed", argv[0], peer.pid(),
        state == 'T' || state == 't' ? fmt::format(" is stopped (state {}) and", state) : "", timeout_s);
  else if (!peer.clean())
    run.error =
        fmt::format("peer {} {}{}", argv[0], peer.death(),
                    WIFEXITED(peer.status()) && !run.stderr_tail.empty() ? ": " + run.stderr_tail : "");
  return run;
}

void fold_peer_steal(Record& rec, const PeerRun& run, int cpu) {
  const std::vector<int> cpus = cpu >= 0 ? std::vector<int>{cpu} : allowed_cpus();
  auto s = steal_between(run.steal.from, run.steal.to, cpus, run.steal.span_s);
  if (!s || !(run.steal.span_s > 0) || !(rec.wall_s > 0)) return;
  if (!run.steal.of_window) {
    // The run's figures scaled to its window: the run's share, over the window's CPU time.
    const double f = std::min(1.0, rec.wall_s / run.steal.span_s);
    s->steal_s *= f;
    s->capacity_s *= f;
    s->resolution_s *= f;
  }
  add_steal(rec, *s);
  rec.extra["steal_source"] = run.steal.of_window
                                  ? "the window between the harness's measure and stop lines"
                                  : "the peer's whole run, its window taken to lose the run's share";
}

uint64_t count_to_fill(uint64_t n, double window_s, double duration_s, uint64_t max_n) {
  // Aimed 40% past the duration, as google/benchmark aims its next iteration count, so that one
  // more run is enough though the rate wavers; a window too short to time counts as one
  // microsecond, and one run grows n at most 10,000 times.
  const double grow = std::clamp(1.4 * duration_s / std::max(window_s, 1e-6), 2.0, 1e4);
  return uint64_t(std::min(double(max_n), std::ceil(double(n) * grow)));
}

namespace {

// A count-based peer's n: what the point asked, its parameter's bound, and whether it is grown
// until its window holds --duration (not for a phased peer, whose window the harness bounds).
struct PeerCount {
  uint64_t asked = 0;
  uint64_t max_n = uint64_t(INT64_MAX);
  bool sized = false;
};

PeerCount peer_count(const Session& s, bool phased) {
  PeerCount c;
  c.asked = s.params().has("n") ? uint64_t(s.params().i64("n")) : 0;
  for (const auto& spec : s.mechanism().params)
    if (spec.name == "n") c.max_n = uint64_t(spec.max);
  c.sized = !phased && c.asked > 0;
  return c;
}

// The count that fills the window, from an earlier repetition of this point with this --duration:
// the later ones start from it, as google/benchmark runs every repetition with the iteration count
// its first one found, instead of growing from `asked` each time (a run and a process start
// saved per repetition). Kept for the process's life: points run one at a time, and each key is
// one point's.
struct FoundCounts {
  std::mutex mutex;
  std::map<std::string, uint64_t> n;
};
FoundCounts& found_counts() {
  static FoundCounts found;
  return found;
}

// Runs the peer with `params`, again with a larger n while a sized one's window is shorter than
// --duration (count_to_fill), up to n's bound; its last run, `runs` how many there were.
PeerRun run_to_fill(const Session& s, const std::string& executable, int cpu,
                    const std::vector<std::string>& args, Params& params, const PeerCount& count,
                    double timeout_s, bool phased, int& runs) {
  const auto& opts = s.options();
  const double base_timeout = timeout_s > 0 ? timeout_s : opts.timeout_s();
  // What every run passes besides the parameters (of which only n changes between runs).
  std::string cpus;
  for (int c : opts.cpus) cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
  const std::vector<std::string> tail{fmt::format("--duration={}", opts.duration_s),
                                      fmt::format("--warmup={}", opts.warmup_s), "--cpus=" + cpus};
  const PeerPhases phases{opts.warmup_s, opts.duration_s};
  PeerRun run;
  for (;;) {
    std::vector<std::string> argv{executable};
    argv.insert(argv.end(), args.begin(), args.end());
    for (auto& [k, v] : params.items()) argv.push_back(fmt::format("--{}={}", k, v));
    argv.insert(argv.end(), tail.begin(), tail.end());
    // The count's part of the timeout (beyond the session's) grows with the count.
    const double grown = count.sized ? double(params.i64("n")) / double(count.asked) : 1.0;
    const double limit = opts.timeout_s() + std::max(0.0, base_timeout - opts.timeout_s()) * grown;
    run =
        run_peer(argv, cpu, count.sized ? limit : base_timeout, opts.duration_s, phased ? &phases : nullptr);
    ++runs;
    if (!run.error.empty()) throw std::runtime_error(run.error);
    if (run.records.size() != 1)
      throw std::runtime_error(
          fmt::format("peer {} printed {} records; one was expected", executable, run.records.size()));
    const Record& p = run.records.front();
    const uint64_t n = count.sized ? uint64_t(params.i64("n")) : 0;
    if (!count.sized || p.status != Status::Ok || !(p.wall_s < opts.duration_s) || n >= count.max_n) break;
    params.set("n", std::to_string(count_to_fill(n, p.wall_s, opts.duration_s, count.max_n)));
  }
  return run;
}

// The peer's single record into the session's: its figures, its extra merged into what the
// mechanism put there, its CPU and steal, and the peer's side of the placement.
void fold_peer_record(Session& s, const PeerRun& run, int cpu) {
  Record& rec = s.record();
  const Record& p = run.records.front();
  rec.ops = p.ops;
  rec.bytes = p.bytes;
  rec.wall_s = p.wall_s;
  rec.latency = p.latency;
  rec.integrity = p.integrity;
  for (auto& [k, v] : p.extra.items()) rec.extra[k] = v;
  for (auto& [k, v] : p.rates.items())
    if (k != "ops_per_s" && k != "bytes_per_s" && k != "MiB_per_s") rec.rates[k] = v;
  // The peer's own measured-window CPU when it reports one, else its whole run from wait4.
  bool has_cpu = p.cpu.total_s() > 0;
  rec.cpu = has_cpu ? p.cpu : run.cpu;
  rec.extra["cpu_source"] = has_cpu ? "peer" : "wait4 (whole peer run)";
  fold_peer_steal(rec, run, cpu);
  rec.placement.layout = s.placement();
  rec.placement.cpus = s.options().cpus;
  Side side{"peer", 0, {}, {}};
  if (cpu >= 0) side.pinned = {cpu};
  rec.placement.sides.push_back(side);
}

}  // namespace

void fold_peer(Session& s, const std::string& executable, int cpu, const std::vector<std::string>& args,
               double timeout_s, bool phased) {
  const double duration_s = s.options().duration_s;
  // A count-based peer's window is set by its n: run again with a larger n while its window is
  // shorter than --duration (count_to_fill), up to the parameter's bound.
  Params params = s.params();
  const PeerCount count = peer_count(s, phased);
  FoundCounts& found = found_counts();
  const std::string key = fmt::format("{}/{}@{}", s.mechanism().full_name(), s.params().path(), duration_s);
  if (count.sized) {
    std::lock_guard lock(found.mutex);
    if (auto it = found.n.find(key); it != found.n.end() && it->second > count.asked)
      params.set("n", std::to_string(it->second));
  }
  const uint64_t first_n = count.sized ? uint64_t(params.i64("n")) : 0;
  int runs = 0;
  const PeerRun run = run_to_fill(s, executable, cpu, args, params, count, timeout_s, phased, runs);
  const Record& p = run.records.front();
  if (p.status == Status::Skipped) throw Skip(p.error.empty() ? "peer skipped" : p.error);
  if (p.status == Status::Failed) throw std::runtime_error("peer reported failure: " + p.error);
  if (count.sized) {
    if (p.wall_s > 0) {
      // Aimed 10% past the duration from this window's rate (the first growth aims 40% past: it
      // extrapolates from a window too short to time well).
      const double fill = double(params.i64("n")) * 1.1 * duration_s / p.wall_s;
      std::lock_guard lock(found.mutex);
      found.n[key] = uint64_t(std::clamp(std::ceil(fill), double(count.asked), double(count.max_n)));
    }
    s.record().extra["sized"] = {
        {"n_asked", count.asked},
        {"n_first", first_n},
        {"n_ran", params.i64("n")},
        {"runs", runs},
        {"why",
         "n grown until the peer's window held --duration, starting from the count an earlier "
         "repetition of the point found"}};
  }
  fold_peer_record(s, run, cpu);
}

}  // namespace ipclab
