// fileio/fio_io_uring and fileio/fio_libaio: fio on the same file, block size, pattern, queue
// depth and direct flag, as the reference line. fio writes its JSON to a file (its stdout is
// not the one-record-per-line contract of run_peer); its figures are folded into our record.
// fio cannot check our block pattern, so these records carry no integrity counts.
#include <unistd.h>

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>

#include "core/base/error.hpp"
#include "core/measure/session.hpp"
#include "core/ownership/journal.hpp"
#include "core/peers/peer.hpp"
#include "core/process/process.hpp"
#include "mechanisms/fileio/common.hpp"

namespace ipclab::fileio {
namespace {

/// The fio binary: $IPCLAB_FIO when set, else `fio` on PATH; Skip when there is none.
std::string find_fio() {
  if (const char* env = std::getenv("IPCLAB_FIO")) {
    if (access(env, X_OK) == 0) return env;
    throw Skip(fmt::format("fio not found at IPCLAB_FIO={}", env));
  }
  if (std::string fio = find_program("fio"); !fio.empty()) return fio;
  throw Skip("fio is not installed (apt-get install fio)");
}

std::string ms(double s) { return fmt::format("{}ms", std::max<long>(1, std::lround(s * 1000))); }

/// Latency from fio's lat_ns (submission to completion, like ours): exact min/mean/max and
/// percentiles; the exported histogram is rebuilt from the percentile points.
Latency latency_from(const nlohmann::json& lat) {
  Histogram h;
  const uint64_t n = lat.value("N", uint64_t(0));
  std::vector<std::pair<double, uint64_t>> pts;
  if (lat.contains("percentile"))
    for (auto& [k, v] : lat["percentile"].items()) pts.emplace_back(std::stod(k), v.get<uint64_t>());
  std::sort(pts.begin(), pts.end());
  uint64_t given = 0;
  double prev = 0;
  for (auto& [p, v] : pts) {
    uint64_t c = uint64_t(std::llround((p - prev) / 100.0 * double(n)));
    c = std::min(c, n - given);
    if (c) h.record_n(v, c);
    given += c;
    prev = p;
  }
  if (n > given) h.record_n(lat.value("max", uint64_t(0)), n - given);
  Latency l = Latency::from("io", h);
  auto pct = [&](double p, uint64_t fallback) {
    for (auto& [q, v] : pts)
      if (std::abs(q - p) < 1e-6) return v;
    return fallback;
  };
  l.min = lat.value("min", l.min);
  l.max = lat.value("max", l.max);
  l.mean = lat.value("mean", l.mean);
  // fio reports a percentile as its histogram bin's value (up to a few % off), so a short run's
  // p50 can sit below the exact min or its p99 above the exact max: clamp into [min, max].
  auto clamped = [&](uint64_t v) { return std::clamp(v, l.min, std::max(l.min, l.max)); };
  l.p50 = clamped(pct(50, l.p50));
  l.p90 = clamped(pct(90, l.p90));
  l.p95 = clamped(pct(95, l.p95));
  l.p99 = clamped(pct(99, l.p99));
  l.p999 = clamped(pct(99.9, l.p999));
  return l;
}

// fio's command line for the reference line's work: the file, block size, pattern, queue depth and
// direct flag of `su`, through `ioengine`, its JSON report written to `out`.
std::vector<std::string> fio_argv(const std::string& fio, const Session& s, const Setup& su,
                                  const std::string& ioengine, bool direct, const std::string& out) {
  const auto& opts = s.options();
  const bool rand = su.plan.random();
  // randrepeat+randseed fix fio's order run to run; its random map (norandommap off, the
  // default) makes each pass read every block exactly once — in fio's own order, not ours.
  std::vector<std::string> argv{
      fio, "--name=ipclab", "--filename=" + su.path, "--readonly",
      std::string("--rw=") + (rand ? "randread" : "read"), fmt::format("--bs={}", su.plan.len()),
      fmt::format("--size={}", su.file_size), "--ioengine=" + ioengine, fmt::format("--iodepth={}", su.qd),
      fmt::format("--direct={}", direct ? 1 : 0),
      // we already evicted (drop) or read the file (warm): fio must not invalidate it again
      "--invalidate=0", "--time_based=1", "--runtime=" + ms(opts.duration_s), "--randrepeat=1",
      fmt::format("--randseed={}", kSeed),
      // fio's defaults, spelled out so the recorded command says how fio submitted: one job
      // (a forked process), each IO submitted as soon as it is ready (one io_uring_enter /
      // io_submit per IO), completions reaped from at least one.
      "--numjobs=1", "--iodepth_batch_submit=1", "--iodepth_batch_complete_min=1", "--lat_percentiles=1",
      "--percentile_list=1:5:10:20:30:40:50:60:70:80:90:95:99:99.5:99.9:99.99", "--output-format=json",
      "--output=" + out};
  if (opts.warmup_s > 0) argv.push_back("--ramp_time=" + ms(opts.warmup_s));
  // The counterpart of fileio/ipcrt's fixed variants: the file and the buffers registered.
  const bool fixed = s.params().has("fixed") && s.params().flag("fixed");
  if (fixed) {
    argv.push_back("--registerfiles=1");
    argv.push_back("--fixedbufs=1");
  }
  return argv;
}

// fio's JSON report from `out` (then removed): its document, or why fio gave none.
nlohmann::json read_fio_report(const std::string& out, const PeerRun& run) {
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ipc::remove(ipc::Kind::Path, out);
  if (!run.error.empty() && text.empty()) throw std::runtime_error(run.error);
  const auto brace = text.find('{');  // fio may print notes before the JSON
  if (brace == std::string::npos)
    throw std::runtime_error("fio wrote no JSON" + (run.stderr_tail.empty() ? "" : ": " + run.stderr_tail));
  auto doc = nlohmann::json::parse(text.substr(brace));
  const auto& job = doc.at("jobs").at(0);
  (void)job.at("read");  // a report without reads is malformed: it throws here, before the job's error
  if (job.value("error", 0) != 0)
    throw std::runtime_error(fmt::format("fio job error {}: {}", job.value("error", 0), run.stderr_tail));
  return doc;
}

// fio's figures into the record: its reads over its measured window, its latency, and its own CPU
// over that window (beside wait4's of its whole run).
void fold_fio(Record& rec, const nlohmann::json& doc, const PeerRun& run, const Setup& su) {
  const auto& job = doc.at("jobs").at(0);
  const auto& rd = job.at("read");
  rec.bytes = rd.value("io_bytes", uint64_t(0));
  rec.ops = rec.bytes / su.plan.len();
  rec.wall_s = rd.value("runtime", 0.0) / 1000.0;  // ms of the measured (post-ramp) window
  fold_peer_steal(rec, run, -1);
  if (rd.contains("lat_ns")) rec.latency = latency_from(rd["lat_ns"]);
  // fio's own usr/sys over its job runtime (the window it measured), and its context switches.
  const double job_s = job.value("job_runtime", 0.0) / 1000.0;
  rec.cpu.user_s = job.value("usr_cpu", 0.0) / 100.0 * job_s;
  rec.cpu.sys_s = job.value("sys_cpu", 0.0) / 100.0 * job_s;
  rec.cpu.ctx_vol = job.value("ctx", int64_t(0));
  rec.cpu.ctx_invol = 0;
  rec.extra["cpu_source"] = "fio usr_cpu/sys_cpu x job_runtime; ctx = fio's ctx";
  rec.extra["cpu_wait4_whole_run"] = {{"user_s", run.cpu.user_s},
                                      {"sys_s", run.cpu.sys_s},
                                      {"ctx_vol", run.cpu.ctx_vol},
                                      {"ctx_invol", run.cpu.ctx_invol}};
  rec.extra["fio_version"] = doc.value("fio version", "");
  rec.extra["fio_iops"] = rd.value("iops", 0.0);
  rec.extra["fio_bw_bytes"] = rd.value("bw_bytes", 0.0);
  if (rec.wall_s > 0) {
    rec.rates["iops"] = double(rec.ops) / rec.wall_s;
    rec.rates["MB_per_s"] = double(rec.bytes) / rec.wall_s / 1e6;
  }
}

void run_fio(Session& s, const std::string& ioengine) {
  const std::string fio = find_fio();
  const bool direct = s.params().flag("direct");
  const Setup su = prepare(s, direct);
  const auto& opts = s.options();
  // fio's report goes to the run's private folder, under a name journaled before fio makes it.
  const std::string out = ipc::run_dir() + ipc::unique_name("fio.json");
  ipc::track_path(out);
  const std::vector<std::string> argv = fio_argv(fio, s, su, ioengine, direct, out);
  const DeviceReads device(su.path);
  PeerRun run = run_peer(argv, -1, opts.timeout_s() + 10, opts.duration_s);
  const nlohmann::json doc = read_fio_report(out, run);

  Record& rec = s.record();
  device.record(rec);
  fold_fio(rec, doc, run, su);
  rec.extra["engine"] = "fio " + ioengine;
  rec.extra["direct"] = direct;
  rec.extra["verified"] = false;
  rec.extra["order"] = su.plan.random()
                           ? "fio's own random order with its random map: every block once per pass"
                           : "sequential";
  std::string cmd;
  for (auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  rec.extra["command"] = cmd;
  rec.placement.layout = "unpinned";
  rec.placement.cpus = opts.cpus;
  rec.placement.sides.push_back(Side{"fio", 0, {}, {}});
  if (!run.error.empty()) throw std::runtime_error(run.error);
}

// fio's own parameters, between the suite's (suite_params): direct, fixed (io_uring), cache.
std::vector<ParamSpec> fio_options(bool uring) {
  std::vector<ParamSpec> own{
      {.name = "direct", .type = ParamType::Bool, .def = "1", .help = "fio --direct", .full = {"0", "1"}}};
  if (uring)
    own.push_back({.name = "fixed",
                   .type = ParamType::Bool,
                   .def = "0",
                   .help = "fio --registerfiles=1 --fixedbufs=1 (as fileio/ipcrt's fixed variants)",
                   .full = {"0", "1"}});
  own.push_back(cache_param());
  return own;
}

IPCLAB_REGISTER(Mechanism{
    .suite = "fileio",
    .name = "fio_io_uring",
    .help = "fio --ioengine=io_uring on the same file and workload (reference line)",
    .params = suite_params(fio_options(true), {"1", "32"}),
    .workload = [](Session& s) { run_fio(s, "io_uring"); },
    .check = [](const Params& p) { return check_cache(p, p.flag("direct")); },
});

IPCLAB_REGISTER(Mechanism{
    .suite = "fileio",
    .name = "fio_libaio",
    .help = "fio --ioengine=libaio on the same file and workload (reference line)",
    .params = suite_params(fio_options(false), {"32"}),
    .workload = [](Session& s) { run_fio(s, "libaio"); },
    .check = [](const Params& p) { return check_cache(p, p.flag("direct")); },
});

}  // namespace
}  // namespace ipclab::fileio
