// Steal time (core/base/cpu.hpp): /proc/stat's steal figures read, the steal of a window over the
// CPUs of a run, the record's flag above kStealFlagShare and its warning, the figures in the JSON,
// CSV and Markdown, and `ipclab env`'s verdict on the vCPUs (emulated, overcommitted).
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/base/affinity.hpp"
#include "core/base/clock.hpp"
#include "core/base/cpu.hpp"
#include "core/base/fdio.hpp"
#include "core/machine/env.hpp"
#include "core/measure/session.hpp"
#include "core/output/output.hpp"
#include "core/peers/peer.hpp"
#include "core/stats/record.hpp"
#include "core/stats/statistics.hpp"

using namespace ipclab;

namespace {

std::string proc_stat_now() {
  const int fd = ::open("/proc/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string text = read_from_start(fd);
  ::close(fd);
  return text;
}

// A `cpu` line's figures by plain splitting, to hold the parser against.
std::vector<uint64_t> figures(const std::string& line) {
  std::istringstream in(line);
  std::string label;
  in >> label;
  std::vector<uint64_t> f;
  for (uint64_t v; in >> v;) f.push_back(v);
  return f;
}

StealReading::Line line(uint64_t steal, uint64_t busy = 1000) { return {.steal = steal, .busy = busy}; }

StealReading reading(std::vector<std::optional<StealReading::Line>> cpus) {
  StealReading r;
  r.cpu = std::move(cpus);
  return r;
}

Record iteration(double steal_s, double capacity_s, double resolution_s, uint64_t ops = 1000) {
  Record r;
  r.name = "test/steal";
  r.ops = ops;
  r.wall_s = capacity_s / 2;
  r.steal = Steal{.steal_s = steal_s, .capacity_s = capacity_s, .resolution_s = resolution_s, .cpus = {0, 1}};
  return r;
}

bool has_flag(const Record& r, const std::string& f) {
  if (!r.flags.is_array()) return false;
  for (auto& x : r.flags)
    if (x == f) return true;
  return false;
}

}  // namespace

// This machine's /proc/stat as the test reads it: every `cpu` line is found, with the 8th figure as
// its steal and user + nice + system + irq + softirq + steal as its busy time.
TEST(Steal, ParsesThisMachinesProcStat) {
  const std::string text = proc_stat_now();
  ASSERT_FALSE(text.empty()) << "/proc/stat unreadable";
  const StealReading r = parse_steal(text);
  std::istringstream in(text);
  int lines = 0;
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("cpu", 0) != 0) continue;
    const std::vector<uint64_t> f = figures(l);
    ASSERT_GE(f.size(), 7u) << l;
    const std::string label = l.substr(0, l.find(' '));
    const StealReading::Line* got = nullptr;
    if (label == "cpu") {
      ASSERT_TRUE(r.all) << l;
      got = &*r.all;
    } else {
      const size_t n = std::stoul(label.substr(3));
      ASSERT_LT(n, r.cpu.size()) << l;
      ASSERT_TRUE(r.cpu[n]) << l;
      got = &*r.cpu[n];
    }
    ++lines;
    if (f.size() >= 8) {
      ASSERT_TRUE(got->steal) << l;
      EXPECT_EQ(*got->steal, f[7]) << l;
    } else {
      EXPECT_FALSE(got->steal) << l;
    }
    EXPECT_EQ(got->busy, f[0] + f[1] + f[2] + f[5] + f[6] + (f.size() >= 8 ? f[7] : 0)) << l;
    EXPECT_EQ(got->irq, f[5]) << l;
    EXPECT_EQ(got->softirq, f[6]) << l;
  }
  EXPECT_GE(lines, 2);  // `cpu` and at least one `cpuN`
  // Every CPU this process may use has its line.
  for (int c : allowed_cpus()) {
    ASSERT_LT(size_t(c), r.cpu.size());
    EXPECT_TRUE(r.cpu[size_t(c)]) << "cpu" << c;
  }
  // Two readings a moment apart: steal never goes back over them, and it is within the wall time.
  const auto cpus = allowed_cpus();
  const StealReading a = read_steal();
  const uint64_t t0 = now_ns();
  sleep_ns(20'000'000);
  const double wall = double(now_ns() - t0) * 1e-9;
  const auto s = steal_between(a, read_steal(), cpus, wall);
  ASSERT_TRUE(s);
  EXPECT_GE(s->steal_s, 0.0);
  EXPECT_LE(s->steal_s, s->capacity_s + s->resolution_s);
  EXPECT_DOUBLE_EQ(s->capacity_s, wall * double(cpus.size()));
  EXPECT_EQ(s->cpus, cpus);
}

// A kernel before 2.6.11 prints 7 figures: no steal, and a window over it has none.
TEST(Steal, OldKernelWithoutTheStealFigure) {
  const StealReading r = parse_steal("cpu  10 1 20 300 4 5 6\ncpu0 10 1 20 300 4 5 6\nintr 1 2 3\n");
  ASSERT_TRUE(r.all);
  EXPECT_FALSE(r.all->steal);
  EXPECT_EQ(r.all->busy, 10u + 1 + 20 + 5 + 6);
  ASSERT_EQ(r.cpu.size(), 1u);
  ASSERT_TRUE(r.cpu[0]);
  EXPECT_FALSE(r.cpu[0]->steal);
  EXPECT_FALSE(steal_between(r, r, {0}, 1.0));
}

// Lines that are not a CPU's figures are skipped; a gap in the CPU numbers (an offline CPU) has
// no line; guest and guest_nice (within user and nice) are not counted twice.
TEST(Steal, SkipsWhatIsNotACpuLine) {
  const StealReading r = parse_steal(
      "cpu  1 2 3 4 5 6 7 8 100 200\n"
      "cpufreq 1 2 3 4 5 6 7 8\n"
      "cpuX 1 2 3 4 5 6 7 8\n"
      "cpu1 1 2\n"
      "cpu2 1 2 3 -4 5 6 7 8\n"
      "cpu3 1 2 3 4 5 6 7 9\n"
      "intr 1 2 3 4 5 6 7 8\n"
      "cpu5 0 0 0 0 0 0 0 18446744073709551615");
  ASSERT_TRUE(r.all);
  EXPECT_EQ(*r.all->steal, 8u);
  EXPECT_EQ(r.all->busy, 1u + 2 + 3 + 6 + 7 + 8);
  ASSERT_EQ(r.cpu.size(), 6u);
  for (size_t c : {0u, 1u, 2u, 4u}) EXPECT_FALSE(r.cpu[c]) << c;
  ASSERT_TRUE(r.cpu[3]);
  EXPECT_EQ(*r.cpu[3]->steal, 9u);
  ASSERT_TRUE(r.cpu[5]);  // a last line without its newline
  EXPECT_EQ(*r.cpu[5]->steal, std::numeric_limits<uint64_t>::max());
  EXPECT_FALSE(steal_between(r, r, {2}, 1.0));   // no line
  EXPECT_FALSE(steal_between(r, r, {99}, 1.0));  // beyond the lines
  EXPECT_FALSE(steal_between(r, r, {-1}, 1.0));
  EXPECT_FALSE(steal_between(r, r, {}, 1.0));
  EXPECT_FALSE(steal_between(StealReading{}, r, {3}, 1.0));  // /proc/stat unreadable at one end
}

// Each CPU's steal over a window, summed; one whose count went back (a wrap, a CPU replugged)
// counts 0, never less.
TEST(Steal, CountsThatGoBackCountZero) {
  const StealReading a = reading({line(100), line(10), line(std::numeric_limits<uint64_t>::max() - 5)});
  const StealReading b = reading({line(50), line(30), line(3)});
  const auto s = steal_between(a, b, {0, 1, 2}, 0.5);
  ASSERT_TRUE(s);
  EXPECT_DOUBLE_EQ(s->steal_s, 20 * tick_s());
  EXPECT_DOUBLE_EQ(s->capacity_s, 1.5);
  EXPECT_DOUBLE_EQ(s->resolution_s, 3 * tick_s());
  EXPECT_EQ(s->cpus, (std::vector<int>{0, 1, 2}));
  // Only the CPUs asked for.
  EXPECT_DOUBLE_EQ(steal_between(a, b, {1}, 0.5)->steal_s, 20 * tick_s());
  EXPECT_DOUBLE_EQ(steal_between(a, b, {0}, 0.5)->steal_s, 0.0);
}

TEST(Steal, ShareAndItsLeast) {
  const Steal s{.steal_s = 0.1, .capacity_s = 1.0, .resolution_s = 0.02};
  EXPECT_DOUBLE_EQ(s.share(), 0.1);
  EXPECT_DOUBLE_EQ(s.least_share(), 0.08);
  EXPECT_DOUBLE_EQ((Steal{.steal_s = 2, .capacity_s = 1}).share(), 1.0);  // a window shorter than a tick
  EXPECT_DOUBLE_EQ((Steal{.steal_s = 0.01, .capacity_s = 1, .resolution_s = 0.02}).least_share(), 0.0);
  EXPECT_DOUBLE_EQ(Steal{}.share(), 0.0);
  Steal sum = s;
  sum += Steal{.steal_s = 0.3, .capacity_s = 1.0, .resolution_s = 0.02, .cpus = {3}};
  EXPECT_DOUBLE_EQ(sum.share(), 0.2);
  EXPECT_EQ(sum.cpus, std::vector<int>{3});
}

// Above 5% even at the least the tick counts allow: flagged once, with a warning that says how
// much, the threshold and the remedy.
TEST(Steal, FlagAboveTheThreshold) {
  Record r = iteration(0.12, 1.0, 0.02);
  flag_steal(r);
  ASSERT_TRUE(has_flag(r, "steal"));
  ASSERT_EQ(r.warnings.size(), 1u);
  const std::string message = r.warnings[0]["message"], remedy = r.warnings[0]["remedy"];
  EXPECT_NE(message.find("12.0%"), std::string::npos) << message;
  EXPECT_NE(message.find("5%"), std::string::npos) << message;
  EXPECT_NE(message.find("CPU 0,1"), std::string::npos) << message;
  EXPECT_NE(remedy.find("ipclab ab"), std::string::npos) << remedy;
  EXPECT_NE(remedy.find("--interleave"), std::string::npos) << remedy;
  EXPECT_EQ(status_text(r), "ok, steal 12%");
  flag_steal(r);  // once only
  EXPECT_EQ(r.flags.size(), 1u);
  EXPECT_EQ(r.warnings.size(), 1u);
  // The console's line of it.
  EXPECT_EQ(output::warning_text(r.warnings[0]), message + " — " + remedy);
}

TEST(Steal, NoFlagAtOrBelowTheThreshold) {
  for (Record r : {iteration(0.04, 1.0, 0.0),    // below
                   iteration(0.05, 1.0, 0.0),    // at: not above
                   iteration(0.06, 1.0, 0.02),   // 6%, but 4% at the least: one tick may be rounding
                   iteration(0.0, 0.0, 0.0)}) {  // no window
    flag_steal(r);
    EXPECT_FALSE(has_flag(r, "steal")) << r.steal->steal_s;
    EXPECT_TRUE(r.warnings.empty());
    EXPECT_EQ(status_text(r), "ok");
  }
  Record unmeasured;
  unmeasured.ops = 10;
  flag_steal(unmeasured);
  EXPECT_TRUE(unmeasured.flags.is_null());
  EXPECT_TRUE(unmeasured.warnings.empty());
}

// The aggregate carries the flag of any repetition, the medians per op of its steal and of its
// windows' capacity, and no warning of its own (its repetitions have theirs).
TEST(Steal, AggregateOfRepetitions) {
  std::vector<Record> reps = {iteration(0.01, 1.0, 0.02), iteration(0.02, 1.0, 0.02),
                              iteration(0.3, 1.0, 0.02)};
  for (int i = 0; i < 3; ++i) {
    reps[size_t(i)].repetition = i;
    flag_steal(reps[size_t(i)]);
  }
  ASSERT_TRUE(has_flag(reps[2], "steal"));
  const Record a = aggregate_median(reps);
  EXPECT_TRUE(has_flag(a, "steal"));
  EXPECT_TRUE(a.warnings.empty());
  ASSERT_TRUE(a.steal);
  EXPECT_NEAR(a.steal_per_op_ns(), 0.02 * 1e9 / 1000, 1e-6);
  EXPECT_NEAR(a.steal->share(), 0.02, 1e-12);
  EXPECT_EQ(status_text(a), "ok ±0.0%, steal");  // equal times: a CI of no width
  const nlohmann::json j = to_json(a);
  EXPECT_FALSE(j.contains("warnings"));
  EXPECT_EQ(j["flags"], nlohmann::json::array({"steal"}));
}

// In the record's JSON: cpu.steal_* (null where not measured), an iteration's own flags and
// warnings only when it has some; read back as a remote side's record is.
TEST(Steal, RecordJson) {
  Record r = iteration(0.12, 1.0, 0.02);
  flag_steal(r);
  const nlohmann::json j = to_json(r);
  EXPECT_DOUBLE_EQ(j["cpu"]["steal_s"].get<double>(), 0.12);
  EXPECT_DOUBLE_EQ(j["cpu"]["steal_per_op_ns"].get<double>(), 0.12 * 1e9 / 1000);
  EXPECT_DOUBLE_EQ(j["cpu"]["steal_share"].get<double>(), 0.12);
  EXPECT_EQ(j["cpu"]["steal_cpus"], nlohmann::json::array({0, 1}));
  EXPECT_EQ(j["flags"], nlohmann::json::array({"steal"}));
  EXPECT_EQ(j["warnings"].size(), 1u);
  const Record back = record_from_json(j);
  ASSERT_TRUE(back.steal);
  EXPECT_DOUBLE_EQ(back.steal->steal_s, 0.12);
  EXPECT_DOUBLE_EQ(back.steal->capacity_s, r.wall_s * 2);
  EXPECT_DOUBLE_EQ(back.steal->share(), 0.12);
  EXPECT_EQ(back.warnings, r.warnings);
  EXPECT_TRUE(has_flag(back, "steal"));

  Record quiet = iteration(0.0, 1.0, 0.02);
  flag_steal(quiet);
  const nlohmann::json q = to_json(quiet);
  EXPECT_FALSE(q.contains("flags"));
  EXPECT_FALSE(q.contains("warnings"));
  EXPECT_DOUBLE_EQ(q["cpu"]["steal_share"].get<double>(), 0.0);

  Record none;
  none.ops = 1;
  const nlohmann::json n = to_json(none);
  for (const char* k : {"steal_s", "steal_per_op_ns", "steal_share", "steal_cpus"})
    EXPECT_TRUE(n["cpu"][k].is_null()) << k;
  EXPECT_FALSE(record_from_json(n).steal);
}

// The CSV's steal columns come last, after the ones older readers know.
TEST(Steal, CsvColumnsAtTheEnd) {
  Record r = iteration(0.12, 1.0, 0.02);
  r.suite = "test";
  const auto header = output::csv_header(std::vector<Record>{r});
  ASSERT_GE(header.size(), 4u);
  EXPECT_EQ(header[header.size() - 4], "error");
  EXPECT_EQ((std::vector<std::string>(header.end() - 3, header.end())),
            (std::vector<std::string>{"steal_s", "steal_per_op_ns", "steal_share"}));
  const std::string row = output::csv_rows(header, {r});
  EXPECT_NE(row.find(",0.12,120000,0.12\n"), std::string::npos) << row;
  Record none;
  none.suite = "test";
  EXPECT_NE(output::csv_rows(header, {none}).find(",,,\n"), std::string::npos);
}

// The Markdown's warnings list the run's and each repetition's own.
TEST(Steal, MarkdownListsTheRecordsWarnings) {
  Record r = iteration(0.12, 1.0, 0.02);
  r.repetition = 2;
  flag_steal(r);
  const nlohmann::json context = {{"warnings", nlohmann::json::array({{{"message", "m"}, {"remedy", "r"}}})}};
  const std::string md = output::markdown(context, output::TableNames{}, {r});
  EXPECT_NE(md.find("- m — r\n"), std::string::npos) << md;
  EXPECT_NE(md.find("`test/steal` (repetition 2): the hypervisor ran other work"), std::string::npos) << md;
  EXPECT_NE(md.find("ok, steal 12%"), std::string::npos) << md;
}

// A run through the session reads the steal of its sides' CPUs over its window: the pinned CPU
// when every side is pinned, else every CPU the process may use; a workload's own threads
// (Session::measure) likewise.
TEST(Steal, SessionWindowsCarryIt) {
  const Mechanism mech{.suite = "test", .name = "steal"};
  const Params params;
  RunOptions o;
  o.duration_s = 0.1;
  o.warmup_s = 0;
  const std::vector<int> allowed = allowed_cpus();
  auto body = [](Worker& w) {
    w.ready();
    while (w.running())
      if (w.measuring()) ++w.out().ops;
  };
  for (const int cpu : {-1, allowed.back()}) {
    Record rec;
    Session s(mech, params, o, rec);
    s.run_workers({{"worker", 0, cpu, body}}, false, "");
    ASSERT_EQ(rec.status, Status::Ok) << rec.error;
    ASSERT_TRUE(rec.steal) << cpu;
    EXPECT_EQ(rec.steal->cpus, cpu < 0 ? allowed : std::vector<int>{cpu});
    EXPECT_GE(rec.steal->steal_s, 0.0);
    EXPECT_DOUBLE_EQ(rec.steal->capacity_s, rec.wall_s * double(rec.steal->cpus.size()));
    EXPECT_GE(rec.steal->share(), 0.0);
    EXPECT_LE(rec.steal->share(), 1.0);
  }
  Record rec;
  Session s(mech, params, o, rec);
  s.measure([] { sleep_ns(20'000'000); });
  ASSERT_TRUE(rec.steal);
  EXPECT_EQ(rec.steal->cpus, allowed);
  EXPECT_DOUBLE_EQ(rec.steal->capacity_s, rec.wall_s * double(allowed.size()));
}

// A peer's window: the one its phases bound, read as the harness sent them; else its whole run,
// whose share the window is taken to lose, over the window's own CPU time.
TEST(Steal, PeersWindowOrWholeRun) {
  PeerRun run;
  run.steal.from = reading({line(100), line(10)});
  run.steal.to = reading({line(130), line(10)});  // 30 ticks on CPU 0
  run.steal.span_s = 2.0;
  run.steal.of_window = true;
  Record phased;
  phased.wall_s = 2.0;
  phased.ops = 100;
  fold_peer_steal(phased, run, 0);
  ASSERT_TRUE(phased.steal);
  EXPECT_DOUBLE_EQ(phased.steal->steal_s, 30 * tick_s());
  EXPECT_DOUBLE_EQ(phased.steal->capacity_s, 2.0);
  EXPECT_EQ(phased.steal->cpus, std::vector<int>{0});
  EXPECT_NE(phased.extra["steal_source"].get<std::string>().find("measure and stop"), std::string::npos);

  run.steal.of_window = false;  // a count-based peer: its window is a quarter of its run
  Record counted;
  counted.wall_s = 0.5;
  counted.ops = 100;
  fold_peer_steal(counted, run, 0);
  ASSERT_TRUE(counted.steal);
  EXPECT_DOUBLE_EQ(counted.steal->steal_s, 30 * tick_s() / 4);
  EXPECT_DOUBLE_EQ(counted.steal->capacity_s, 0.5);
  EXPECT_DOUBLE_EQ(counted.steal->share(), phased.steal->share());
  EXPECT_DOUBLE_EQ(counted.steal->least_share(), phased.steal->least_share());
  EXPECT_NE(counted.extra["steal_source"].get<std::string>().find("whole run"), std::string::npos);
  // Unpinned: every CPU this process may use.
  Record unpinned;
  unpinned.wall_s = 1.0;
  run.steal.from = read_steal();
  run.steal.to = read_steal();
  fold_peer_steal(unpinned, run, -1);
  ASSERT_TRUE(unpinned.steal);
  EXPECT_EQ(unpinned.steal->cpus, allowed_cpus());
  // Nothing read (a peer that never started), or no window: no steal.
  Record none;
  none.wall_s = 1.0;
  fold_peer_steal(none, PeerRun{}, 0);
  EXPECT_FALSE(none.steal);
}

// What runs the vCPUs, from the signs given.
TEST(Vcpus, EmulationFromTheSigns) {
  auto judge = [](VcpuSigns s) { return judge_vcpus(s); };
  auto tcg_warned = [](const VcpuVerdict& v) {
    for (auto& w : v.warnings)
      if (w["message"].get<std::string>().find("QEMU's translator (TCG") != std::string::npos &&
          w["remedy"].get<std::string>().find("correctness only") != std::string::npos)
        return true;
    return false;
  };
  struct Case {
    VcpuSigns signs;
    const char* emulation;
    const char* hypervisor;  // null: none named
  };
  const Case cases[] = {
      {{.hypervisor_bit = true, .cpuid_vendor = "TCGTCGTCGTCG", .model = "QEMU Virtual CPU version 2.5+"},
       "tcg",
       "TCGTCGTCGTCG"},
      {{.hypervisor_bit = true, .cpuid_vendor = "KVMKVMKVM", .model = "QEMU Virtual CPU version 2.5+"},
       "kvm",
       "KVMKVMKVM"},
      {{.hypervisor_bit = true, .cpuid_vendor = "KVMKVMKVM", .model = "AMD EPYC", .detect_vm = "kvm"},
       "kvm",
       "KVMKVMKVM"},
      // Without CPUID (another architecture): QEMU's model name, or systemd-detect-virt.
      {{.model = "QEMU Virtual CPU version 2.5+"}, "tcg", nullptr},
      {{.model = "QEMU Virtual CPU version 2.5+", .detect_vm = "kvm"}, "kvm", "kvm"},
      {{.detect_vm = "qemu"}, "tcg", "qemu"},
      {{.detect_vm = "kvm"}, "kvm", "kvm"},
      {{.hypervisor_bit = true, .cpuid_vendor = "Microsoft Hv"}, "other", "Microsoft Hv"},
      {{.hypervisor_bit = true}, "other", nullptr},
      {{.detect_vm = "vmware"}, "other", "vmware"},
      {{.model = "Intel(R) Xeon(R) Gold 6338", .detect_vm = "none"}, "none", nullptr},
      {{}, "none", nullptr},
  };
  for (const Case& c : cases) {
    const VcpuVerdict v = judge(c.signs);
    const std::string what = c.signs.cpuid_vendor + "/" + c.signs.model + "/" + c.signs.detect_vm;
    EXPECT_EQ(v.block["emulation"], c.emulation) << what;
    if (c.hypervisor)
      EXPECT_EQ(v.block["hypervisor"], c.hypervisor) << what;
    else
      EXPECT_TRUE(v.block["hypervisor"].is_null()) << what;
    EXPECT_EQ(tcg_warned(v), std::string(c.emulation) == "tcg") << what;
  }
}

// Overcommitted: steal above 5% of the time the vCPUs had work since boot.
TEST(Vcpus, OvercommitFromStealSinceBoot) {
  auto with = [](std::optional<uint64_t> steal, uint64_t busy) {
    VcpuSigns s;
    s.since_boot.all = StealReading::Line{.steal = steal, .busy = busy};
    return judge_vcpus(s);
  };
  const VcpuVerdict over = with(60, 1000);
  EXPECT_EQ(over.block["overcommitted"], true);
  EXPECT_DOUBLE_EQ(over.block["steal_since_boot"]["share_of_busy"].get<double>(), 0.06);
  EXPECT_DOUBLE_EQ(over.block["steal_since_boot"]["steal_s"].get<double>(), 60 * tick_s());
  ASSERT_EQ(over.warnings.size(), 1u);
  EXPECT_NE(over.warnings[0]["message"].get<std::string>().find("6.0% of their busy time since boot"),
            std::string::npos);
  EXPECT_NE(over.warnings[0]["remedy"].get<std::string>().find("dedicated (pinned) vCPUs"),
            std::string::npos);

  for (const VcpuVerdict& v : {with(50, 1000), with(0, 1000)}) {
    EXPECT_EQ(v.block["overcommitted"], false);
    EXPECT_TRUE(v.warnings.empty());
  }
  // No steal figure (an old kernel), no busy time, no /proc/stat: not known.
  for (const VcpuVerdict& v : {with(std::nullopt, 1000), with(0, 0), judge_vcpus(VcpuSigns{})}) {
    EXPECT_TRUE(v.block["overcommitted"].is_null());
    EXPECT_TRUE(v.block["steal_since_boot"].is_null());
    EXPECT_TRUE(v.warnings.empty());
  }
}

// The load check judges other processes' runnable tasks, never ipclab's own children and threads.
TEST(OtherLoad, CountsOnlyRunnableTasksOutsideOurProcessTree) {
  const int self = 100;
  const std::vector<TaskState> tasks = {
      {1, 0, true},      // init, runnable: another process
      {100, 1, true},    // ipclab itself
      {100, 1, true},    // a thread of it
      {101, 100, true},  // its child (a forked side)
      {102, 101, true},  // its grandchild (a peer's helper)
      {200, 1, true},    // a compiler someone else runs
      {200, 1, false},   // its sleeping thread
      {201, 200, true},  // that compiler's child
      {300, 1, false},   // an idle daemon
  };
  EXPECT_EQ(others_runnable(tasks, self), 3);
  EXPECT_EQ(others_runnable({{100, 1, true}, {101, 100, true}}, self), 0) << "an idle machine but for us";
}

TEST(OtherLoad, ThresholdScalesWithTheCpusAndReadsThisMachine) {
  EXPECT_EQ(other_load_threshold(1), 0.5);
  EXPECT_EQ(other_load_threshold(2), 0.5) << "one CPU half busy on two";
  EXPECT_EQ(other_load_threshold(16), 4.0);
  // This process (no children) is among /proc's tasks, its reading thread runnable as it reads,
  // and not counted.
  const auto tasks = read_tasks();
  int mine = 0, mine_runnable = 0, runnable = 0;
  for (auto& t : tasks) {
    mine += t.pid == int(getpid());
    mine_runnable += t.pid == int(getpid()) && t.runnable;
    runnable += t.runnable;
  }
  EXPECT_GE(mine, 1);
  EXPECT_GE(mine_runnable, 1);
  EXPECT_EQ(others_runnable(tasks, int(getpid())), runnable - mine_runnable);
}

TEST(Interference, TheWindowsIrqAndSoftirqOverTheCpusRead) {
  StealReading::Line a0{.steal = 5, .busy = 100, .irq = 1, .softirq = 10};
  StealReading::Line a1{.steal = 0, .busy = 100, .irq = 0, .softirq = 3};
  StealReading::Line b0{.steal = 7, .busy = 200, .irq = 4, .softirq = 30};
  StealReading::Line b1{.steal = 0, .busy = 150, .irq = 0, .softirq = 2};  // a counter never goes back
  const auto w = steal_between(reading({a0, a1}), reading({b0, b1}), {0, 1}, 1.0);
  ASSERT_TRUE(w);
  EXPECT_DOUBLE_EQ(w->steal_s, 2 * tick_s());
  EXPECT_DOUBLE_EQ(w->irq_s, 3 * tick_s());
  EXPECT_DOUBLE_EQ(w->softirq_s, 20 * tick_s());
  Steal sum = *w;
  sum += *w;
  EXPECT_DOUBLE_EQ(sum.softirq_s, 40 * tick_s());
}

TEST(Interference, SchedstatIsReadAndTheRunQueueWaitNeverGoesBack) {
  // This thread's and this process's: a kernel without CONFIG_SCHED_INFO has no file, and then
  // neither is a figure.
  const auto thread = thread_schedstat();
  const auto process = process_schedstat();
  ASSERT_EQ(thread.has_value(), process.has_value());
  if (!thread) GTEST_SKIP() << "no schedstat in this kernel";
  EXPECT_GT(thread->on_cpu_ns, 0u);
  EXPECT_GE(process->on_cpu_ns, thread->on_cpu_ns) << "every thread's, this one's among them";
  const auto later = thread_schedstat();
  ASSERT_TRUE(later);
  EXPECT_GE(later->wait_ns, thread->wait_ns);
  EXPECT_GE(later->on_cpu_ns, thread->on_cpu_ns);
  EXPECT_FALSE(read_schedstat("/proc/self/no-such-file"));
}
