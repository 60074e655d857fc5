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

PeerRun run_peer(const std::vector<std::string>& argv, int cpu, double timeout_s, double window_s,
                 const PeerPhases* phases) {
  PeerRun run;
  if (argv.empty()) throw std::logic_error("run_peer: empty argv");
  if (access(argv[0].c_str(), X_OK) != 0)
    throw Skip(fmt::format("peer {} is not built; run `make peers`", argv[0]));
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  // The phases go down a socket rather than a pipe: send(MSG_NOSIGNAL) to a peer that died is an
  // error to ignore, not a SIGPIPE.
  int in[2] = {-1, -1};
  Process peer;
  try {
    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
        (phases && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0))
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
  run.steal.from = read_steal();  // its whole run, unless its phases bound its window
  uint64_t steal_from = now_ns();
  // The phases' lines and their times (now_ns), set once the peer says it is ready (0: not yet);
  // `sent` of them are written.
  constexpr const char* kLines[2] = {"measure\n", "stop\n"};
  uint64_t at[2] = {0, 0};
  int sent = 0;
  std::string out_buf, err_buf;
  const uint64_t deadline = now_ns() + uint64_t(timeout_s * 1e9);
  bool timed_out = false;
  Watchdog watchdog(window_s);
  watchdog.watch("peer", 0, peer.pid(), -1, [&peer] { return uint64_t(peer.cpu_seconds() * 1e9); });
  std::string stalled;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    uint64_t now = now_ns();
    if (now >= deadline) {
      timed_out = true;
      break;
    }
    if (stalled = watchdog.check(); !stalled.empty()) break;
    for (; in[1] >= 0 && at[0] && now >= at[sent]; ++sent) {
      [[maybe_unused]] ssize_t n = send(in[1], kLines[sent], strlen(kLines[sent]), MSG_NOSIGNAL);
      // The window's steal, read as the lines go.
      if (sent == 0) {
        run.steal.from = read_steal();
        steal_from = now_ns();
      } else {
        run.steal.to = read_steal();
        run.steal.span_s = double(now_ns() - steal_from) * 1e-9;
        run.steal.of_window = true;
        close(in[1]);  // after stop, the end of input
        in[1] = -1;
      }
    }
    const uint64_t next = in[1] >= 0 && at[0] ? std::min(deadline, at[sent]) : deadline;
    // Woken at least every 50 ms for the watchdog (its limit is 1 s or more).
    int ms = int(std::min<uint64_t>((next - std::min(next, now)) / 1'000'000 + 1, 50));
    int r = poll(fds, 2, ms);
    if (r < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      (i == 0 ? out_buf : err_buf).append(buf, size_t(n));
      if (i == 0 && in[1] >= 0 && !at[0] && out_buf.rfind("ready\n", 0) == 0) {
        // Ready: the warm-up runs from now on the harness's clock, then the measured window.
        at[0] = now_ns() + uint64_t(phases->warmup_s * 1e9);
        at[1] = at[0] + uint64_t(phases->duration_s * 1e9);
      }
    }
  }
  if (in[1] >= 0) close(in[1]);
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  // A peer that closed its output but goes on is given what is left of its time, watched.
  while (!timed_out && stalled.empty() && !peer.wait(0.05)) {
    if (now_ns() >= deadline)
      timed_out = true;
    else
      stalled = watchdog.check();
  }
  // A peer prints its record at the end only: it shows no progress before, so its timeout is
  // the watchdog's only hold on it. A stopped peer is named as such.
  const char state = timed_out ? task_state(peer.pid(), -1) : 0;
  peer.stop();  // SIGKILL when it is still there; reaped either way
  run.cpu = peer.usage();
  if (!run.steal.of_window) {
    run.steal.to = read_steal();
    run.steal.span_s = double(now_ns() - steal_from) * 1e-9;
  }

  // Keep the last few lines of stderr for the error message.
  size_t cut = err_buf.size();
  for (int lines = 0; cut > 0 && lines < 4; ++lines) {
    cut = err_buf.rfind('\n', cut - 1);
    if (cut == std::string::npos) {
      cut = 0;
      break;
    }
  }
  run.stderr_tail = err_buf.substr(cut);
  while (!run.stderr_tail.empty() && (run.stderr_tail.front() == '\n')) run.stderr_tail.erase(0, 1);
  for (auto& ch : run.stderr_tail)
    if (ch == '\n') ch = ' ';

  size_t pos = 0;
  int line_no = 0;
  while (pos < out_buf.size()) {
    size_t nl = out_buf.find('\n', pos);
    std::string line = out_buf.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? out_buf.size() : nl + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (phases && line_no == 1 && line == "ready") continue;  // the phases' handshake
    try {
      run.records.push_back(record_from_json(nlohmann::json::parse(line)));
    } catch (const std::exception& e) {
      if (run.error.empty())
        run.error = fmt::format("peer output line {} is not a valid record: {}", line_no, e.what());
    }
  }
  if (!stalled.empty())
    run.error = fmt::format("{}; peer {} was killed", stalled, argv[0]);
  else if (timed_out)
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

void fold_peer(Session& s, const std::string& executable, int cpu, const std::vector<std::string>& args,
               double timeout_s, bool phased) {
  auto& opts = s.options();
  // A count-based peer's window is set by its n: run again with a larger n while its window is
  // shorter than --duration (count_to_fill), up to the parameter's bound.
  Params params = s.params();
  const uint64_t asked = params.has("n") ? uint64_t(params.i64("n")) : 0;
  uint64_t max_n = uint64_t(INT64_MAX);
  for (const auto& spec : s.mechanism().params)
    if (spec.name == "n") max_n = uint64_t(spec.max);
  const bool sized = !phased && asked > 0;
  // The count that fills the window, from an earlier repetition of this point with this --duration:
  // the later ones start from it, as google/benchmark runs every repetition with the iteration count
  // its first one found, instead of growing from `asked` each time (a run and a process start
  // saved per repetition). Kept for the process's life: points run one at a time, and each key is
  // one point's.
  static std::mutex found_mutex;
  static std::map<std::string, uint64_t> found;
  const std::string key =
      fmt::format("{}/{}@{}", s.mechanism().full_name(), s.params().path(), opts.duration_s);
  if (sized) {
    std::lock_guard lock(found_mutex);
    if (auto it = found.find(key); it != found.end() && it->second > asked)
      params.set("n", std::to_string(it->second));
  }
  const uint64_t first_n = sized ? uint64_t(params.i64("n")) : 0;
  const double base_timeout = timeout_s > 0 ? timeout_s : opts.timeout_s();
  // What every run passes besides the parameters (of which only n changes between runs).
  std::string cpus;
  for (int c : opts.cpus) cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
  const std::vector<std::string> tail{fmt::format("--duration={}", opts.duration_s),
                                      fmt::format("--warmup={}", opts.warmup_s), "--cpus=" + cpus};
  const PeerPhases phases{opts.warmup_s, opts.duration_s};
  PeerRun run;
  int runs = 0;
  for (;;) {
    std::vector<std::string> argv{executable};
    argv.insert(argv.end(), args.begin(), args.end());
    for (auto& [k, v] : params.items()) argv.push_back(fmt::format("--{}={}", k, v));
    argv.insert(argv.end(), tail.begin(), tail.end());
    // The count's part of the timeout (beyond the session's) grows with the count.
    const double grown = sized ? double(params.i64("n")) / double(asked) : 1.0;
    const double limit = opts.timeout_s() + std::max(0.0, base_timeout - opts.timeout_s()) * grown;
    run = run_peer(argv, cpu, sized ? limit : base_timeout, opts.duration_s, phased ? &phases : nullptr);
    ++runs;
    if (!run.error.empty()) throw std::runtime_error(run.error);
    if (run.records.size() != 1)
      throw std::runtime_error(
          fmt::format("peer {} printed {} records; one was expected", executable, run.records.size()));
    const Record& p = run.records.front();
    const uint64_t n = sized ? uint64_t(params.i64("n")) : 0;
    if (!sized || p.status != Status::Ok || !(p.wall_s < opts.duration_s) || n >= max_n) break;
    params.set("n", std::to_string(count_to_fill(n, p.wall_s, opts.duration_s, max_n)));
  }
  Record& rec = s.record();
  const Record& p = run.records.front();
  if (p.status == Status::Skipped) throw Skip(p.error.empty() ? "peer skipped" : p.error);
  if (p.status == Status::Failed) throw std::runtime_error("peer reported failure: " + p.error);
  if (sized) {
    if (p.wall_s > 0) {
      // Aimed 10% past the duration from this window's rate (the first growth aims 40% past: it
      // extrapolates from a window too short to time well).
      const double fill = double(params.i64("n")) * 1.1 * opts.duration_s / p.wall_s;
      std::lock_guard lock(found_mutex);
      found[key] = uint64_t(std::clamp(std::ceil(fill), double(asked), double(max_n)));
    }
    rec.extra["sized"] = {
        {"n_asked", asked},
        {"n_first", first_n},
        {"n_ran", params.i64("n")},
        {"runs", runs},
        {"why",
         "n grown until the peer's window held --duration, starting from the count an earlier "
         "repetition of the point found"}};
  }
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
  rec.placement.cpus = opts.cpus;
  Side side{"peer", 0, {}, {}};
  if (cpu >= 0) side.pinned = {cpu};
  rec.placement.sides.push_back(side);
}

}  // namespace ipclab
