#include "core/machine/env.hpp"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fmt/format.h>
#include <liburing.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/fs.hpp"
#include "core/machine/home.hpp"
#include "core/machine/placement.hpp"
#include "core/machine/topology.hpp"
#include "core/machine/window.hpp"
#include "core/process/process.hpp"
#include "core/stats/record.hpp"

namespace ipclab {

namespace {
std::vector<std::pair<std::string, std::function<std::string()>>>& library_versions() {
  static std::vector<std::pair<std::string, std::function<std::string()>>> v;
  return v;
}
}  // namespace

LibraryVersion::LibraryVersion(std::string name, std::function<std::string()> version) {
  library_versions().emplace_back(std::move(name), std::move(version));
}

namespace {

// The commands env asks the machine (a few ms each): side by side, through the one process model.
constexpr double kCommandTimeoutS = 5.0;

nlohmann::json limit(int resource) {
  rlimit rl{};
  getrlimit(resource, &rl);
  auto v = [](rlim_t x) {
    return x == RLIM_INFINITY ? nlohmann::json("unlimited") : nlohmann::json(uint64_t(x));
  };
  return {{"soft", v(rl.rlim_cur)}, {"hard", v(rl.rlim_max)}};
}

long long as_number(const std::string& s) {
  try {
    return std::stoll(s);
  } catch (...) {
    return -1;
  }
}

// CPUID's hypervisor bit and the hypervisor's signature (leaf 0x40000000: "KVMKVMKVM", "TCGTCGTCGTCG",
// "Microsoft Hv", "VMwareVMware"), where the CPU has CPUID.
void read_cpuid_hypervisor(VcpuSigns& s) {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 31))) return;
  s.hypervisor_bit = true;
  __cpuid(0x40000000, a, b, c, d);
  char sig[13] = {};
  std::memcpy(sig, &b, 4);
  std::memcpy(sig + 4, &c, 4);
  std::memcpy(sig + 8, &d, 4);
  for (char ch : sig)
    if (ch && (ch < ' ' || ch > '~')) return;  // no signature there
  s.cpuid_vendor = sig;
#else
  (void)s;
#endif
}

}  // namespace

VcpuVerdict judge_vcpus(const VcpuSigns& s) {
  using nlohmann::json;
  VcpuVerdict v;
  const bool qemu_model = s.model.find("QEMU Virtual CPU") != std::string::npos ||
                          s.model.find("QEMU TCG CPU") != std::string::npos;
  const bool detected = !s.detect_vm.empty() && s.detect_vm != "none";
  std::string emulation;
  if (s.cpuid_vendor == "TCGTCGTCGTCG")
    emulation = "tcg";
  else if (s.cpuid_vendor.rfind("KVMKVMKVM", 0) == 0)
    emulation = "kvm";
  else if (!s.cpuid_vendor.empty())
    emulation = "other";
  else if (s.detect_vm == "qemu" || (qemu_model && s.detect_vm != "kvm"))
    emulation = "tcg";  // QEMU without KVM's signature: its translator
  else if (s.detect_vm == "kvm")
    emulation = "kvm";
  else
    emulation = s.hypervisor_bit || detected ? "other" : "none";
  const std::string hypervisor = !s.cpuid_vendor.empty() ? s.cpuid_vendor : detected ? s.detect_vm : "";
  json steal = nullptr, overcommitted = nullptr;
  if (s.since_boot.all && s.since_boot.all->steal && s.since_boot.all->busy > 0) {
    const auto& all = *s.since_boot.all;
    const double share = double(*all.steal) / double(all.busy);
    steal = {{"steal_s", double(*all.steal) * tick_s()},
             {"busy_s", double(all.busy) * tick_s()},
             {"share_of_busy", share}};
    overcommitted = share > kStealFlagShare;
    if (share > kStealFlagShare)
      v.warnings.push_back(
          {{"message",
            fmt::format("the hypervisor has run other work on these vCPUs for {:.1f}% of their busy "
                        "time since boot (steal time, /proc/stat; ipclab warns above {:.0f}%): "
                        "the vCPUs are overcommitted, and timings vary with the host's load",
                        100 * share, 100 * kStealFlagShare)},
           {"remedy",
            "run on a host with dedicated (pinned) vCPUs, or compare only paired runs (`ipclab ab`, "
            "`--interleave`); each record's cpu.steal_share says what its own window lost"}});
  }
  if (emulation == "tcg")
    v.warnings.push_back(
        {{"message", fmt::format("the CPUs are emulated by QEMU's translator (TCG{}): every instruction is "
                                 "translated in software, so no time measured here says anything about a "
                                 "real CPU",
                                 s.cpuid_vendor.empty() ? "" : ", CPUID " + s.cpuid_vendor)},
         {"remedy",
          "use this machine for correctness only; measure on bare metal or under KVM (qemu -accel kvm)"}});
  v.block = {{"emulation", emulation},
             {"hypervisor", hypervisor.empty() ? json(nullptr) : json(hypervisor)},
             {"steal_since_boot", steal},
             {"overcommitted", overcommitted}};
  return v;
}

int others_runnable(const std::vector<TaskState>& tasks, int self) {
  std::map<int, int> parent;
  for (auto& t : tasks) parent[t.pid] = t.ppid;
  auto ours = [&](int pid) {
    for (int hops = 0; pid > 1 && hops < 64; ++hops) {  // a tree's depth; a cycle ends the walk
      if (pid == self) return true;
      auto it = parent.find(pid);
      if (it == parent.end()) return false;
      pid = it->second;
    }
    return false;
  };
  int n = 0;
  for (auto& t : tasks) n += t.runnable && !ours(t.pid);
  return n;
}

std::vector<TaskState> read_tasks() {
  std::vector<TaskState> out;
  // A stat line: "pid (comm) state ppid ...", comm may hold spaces and parentheses: after the last ')'.
  auto fields = [](const std::string& line, char& state, int& ppid) {
    const size_t close = line.rfind(')');
    if (close == std::string::npos) return false;
    std::istringstream in(line.substr(close + 1));
    return bool(in >> state >> ppid);
  };
  DIR* proc = opendir("/proc");
  if (!proc) return out;
  while (dirent* e = readdir(proc)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string dir = std::string("/proc/") + e->d_name;
    char state = 0;
    int ppid = 0;
    if (!fields(read_first_line(dir + "/stat"), state, ppid)) continue;  // gone since
    const int pid = std::atoi(e->d_name);
    DIR* tasks = opendir((dir + "/task").c_str());
    if (!tasks) continue;
    while (dirent* t = readdir(tasks)) {
      if (t->d_name[0] < '0' || t->d_name[0] > '9') continue;
      char ts = 0;
      int tp = 0;
      if (fields(read_first_line(dir + "/task/" + t->d_name + "/stat"), ts, tp))
        out.push_back({pid, ppid, ts == 'R'});
    }
    closedir(tasks);
  }
  closedir(proc);
  return out;
}

double other_load_threshold(long cpus) { return std::max(0.5, 0.25 * double(cpus)); }

namespace {

// Why the time a window lost cannot be split by its source and length here (the osnoise and
// timerlat tracers, as `rtla osnoise` reads them), with what would allow it; nothing where the
// kernel offers them. ipclab attributes interference from /proc/stat and schedstat on every kernel
// (cpu.irq_s, softirq_s, steal_s, run_queue_wait_s), and mounts nothing and starts no tracer
// itself (a machine-wide state it did not create).
std::pair<std::string, std::string> tracer_condition() {
  const char* where = nullptr;
  std::string tracers;
  for (const char* dir : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
    tracers = read_first_line(std::string(dir) + "/available_tracers");
    if (!tracers.empty()) {
      where = dir;
      break;
    }
  }
  const std::string how =
      "interference is attributed from /proc/stat (irq, softirq, steal on the sides' CPUs) and schedstat "
      "(the sides' run-queue wait)";
  if (!where)
    return {"tracefs is not mounted here: " + how + ", not split by the osnoise tracer",
            "`mount -t tracefs nodev /sys/kernel/tracing` (as root), then `rtla osnoise` beside a run"};
  if ((" " + tracers + " ").find(" osnoise ") != std::string::npos) return {};
  return {fmt::format("this kernel has no osnoise/timerlat tracer ({} offers: {}): {}", where, tracers, how),
          "a kernel built with CONFIG_OSNOISE_TRACER and CONFIG_TIMERLAT_TRACER, for `rtla osnoise` beside a "
          "run"};
}

std::string& recorded_build_commit() {
  static std::string sha;
  return sha;
}
}  // namespace

void set_build_commit(const std::string& sha) { recorded_build_commit() = sha; }

namespace {

// What env tells a person besides the figures, each naming its remedy: a warning for what a run
// may change, and a condition of the machine that holds from run to run and that a run there
// cannot change (a VM, SMT, a kernel limit set outside it): stated once, in the record and by
// `ipclab env`, not warned on every run.
struct Notes {
  nlohmann::json warnings = nlohmann::json::array();
  nlohmann::json conditions = nlohmann::json::array();
  void warn(std::string message, std::string remedy) {
    warnings.push_back({{"message", std::move(message)}, {"remedy", std::move(remedy)}});
  }
  void note(std::string message, std::string remedy) {
    conditions.push_back({{"message", std::move(message)}, {"remedy", std::move(remedy)}});
  }
};

// The commands env asks the machine, side by side; each one's output at its index.
enum Asked { kGitHead, kGitStatus, kDetectVirt, kGlibc, kDetectVm };

std::vector<std::string> ask_machine(bool bundle) {
  const std::string src = IPCLAB_SOURCE_DIR;
  return command_outputs(
      {bundle ? std::vector<std::string>{}
              : std::vector<std::string>{"git", "-C", src, "rev-parse", "--short=12", "HEAD"},
       bundle ? std::vector<std::string>{}
              : std::vector<std::string>{"git", "--no-optional-locks", "-C", src, "status", "--porcelain",
                                         "--untracked-files=no"},
       {"systemd-detect-virt"},
       {"getconf", "GNU_LIBC_VERSION"},
       {"systemd-detect-virt", "--vm"}},
      kCommandTimeoutS);
}

// Which ipclab ran, from which commit, how it was asked, when and where. A build tree asks git
// about its source tree; a bundle says which commit it was made from (scripts/bundle.sh wrote
// share/git-sha).
void describe_run(nlohmann::json& c, const std::string& command_line, bool bundle,
                  const std::vector<std::string>& asked) {
  using nlohmann::json;
  c["ipclab_version"] = IPCLAB_VERSION;
  std::string sha = bundle ? read_first_line(source_file("git-sha")) : asked[kGitHead];
  if (!bundle && !sha.empty() && !asked[kGitStatus].empty()) sha += "-dirty";
  if (const std::string& built = recorded_build_commit(); !built.empty() && built != "unknown") sha = built;
  c["git_sha"] = sha.empty() ? json(nullptr) : json(sha);
  c["started_from"] = started_from();
  c["command_line"] = command_line;
  char date[64];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  c["date"] = date;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  c["hostname"] = host;
}

// The context's `cpu` block, and what the notes and the vCPUs' verdict read of it.
struct Cpus {
  nlohmann::json block;
  std::string model;
  long logical = 0;
  bool smt_on = false;
  std::vector<int> allowed;
};

Cpus read_cpus() {
  Cpus out;
  nlohmann::json& cpu = out.block;
  std::ifstream ci("/proc/cpuinfo");
  std::string line;
  std::set<std::string> cores;
  std::string phys;
  while (std::getline(ci, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    std::string val = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name" && out.model.empty()) out.model = val;
    if (key == "physical id") phys = val;
    if (key == "core id") cores.insert(phys + ":" + val);
  }
  const long logical = out.logical = sysconf(_SC_NPROCESSORS_ONLN);
  cpu["model"] = out.model;
  cpu["logical_cpus"] = logical;
  cpu["physical_cores"] = cores.empty() ? logical : long(cores.size());
  std::string smt = read_first_line("/sys/devices/system/cpu/smt/active");
  out.smt_on = smt == "1" || (!cores.empty() && long(cores.size()) < logical);
  cpu["smt"] = out.smt_on;
  cpu["online"] = read_first_line("/sys/devices/system/cpu/online");
  // Packages, NUMA nodes, last-level caches, cores and SMT siblings of the allowed CPUs, as sysfs
  // says (`ipclab topo` measures what it hides).
  cpu["topology"] = topo::to_json(topo::read("/sys", allowed_cpus()));
  nlohmann::json caches = nlohmann::json::object();
  for (int i = 0; i < 8; ++i) {
    std::string base = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", i);
    std::string size = read_first_line(base + "size");
    if (size.empty()) break;
    std::string level = read_first_line(base + "level"), type = read_first_line(base + "type");
    caches[fmt::format("L{}{}", level, type == "Data" ? "d" : type == "Instruction" ? "i" : "")] = size;
  }
  cpu["caches"] = caches;
  out.allowed = allowed_cpus();
  cpu["allowed"] = out.allowed;
  return out;
}

// The virtualisation the machine runs under: "none", a hypervisor's name, or a VM's and a
// container's ("kvm, docker container").
std::string virtualization(const std::vector<std::string>& asked) {
  std::string virt = asked[kDetectVirt];
  // systemd-detect-virt names a container before the VM it runs in; both matter here (a VM's
  // vCPUs are shared, a container's CPUs need not be): "kvm, docker container".
  if (const std::string& vm = asked[kDetectVm];
      !virt.empty() && virt != "none" && !vm.empty() && vm != "none" && vm != virt)
    virt = fmt::format("{}, {} container", vm, virt);
  if (!virt.empty() && virt != "none") return virt;
  // No systemd-detect-virt, or it saw none: the CPU's hypervisor flag, and lscpu's vendor.
  std::ifstream cpuinfo("/proc/cpuinfo");
  bool flag = false;
  for (std::string line; !flag && std::getline(cpuinfo, line);)
    if (line.rfind("flags", 0) == 0) flag = (line + " ").find(" hypervisor ") != std::string::npos;
  virt = flag ? "unknown-hypervisor" : "none";
  std::istringstream lscpu(command_output({"lscpu"}, kCommandTimeoutS));
  constexpr std::string_view kVendor = "Hypervisor vendor:";
  for (std::string line; std::getline(lscpu, line);)
    if (line.rfind(kVendor, 0) == 0) {
      const size_t at = line.find_first_not_of(' ', kVendor.size());
      if (at != std::string::npos) virt = line.substr(at);
    }
  return virt;
}

// The load that competes with the run: runnable tasks of other processes, sampled now (the load
// average also counts ipclab's own children and threads, and decays for minutes after a build
// that has finished). Sets `load_avg` and `other_load`; returns the samples' mean.
double sample_load(nlohmann::json& c, long logical) {
  double load[3] = {0, 0, 0};
  getloadavg(load, 3);
  c["load_avg"] = {load[0], load[1], load[2]};
  constexpr int kLoadSamples = 5;
  int runnable = 0;
  for (int i = 0; i < kLoadSamples; ++i) {
    if (i) usleep(10'000);
    runnable += others_runnable(read_tasks(), int(getpid()));
  }
  const double others = double(runnable) / kLoadSamples;
  c["other_load"] = {{"runnable", others},
                     {"samples", kLoadSamples},
                     {"threshold", other_load_threshold(logical)},
                     {"means", "runnable tasks of processes other than ipclab's, mean of the samples"}};
  return others;
}

nlohmann::json mitigations() {
  nlohmann::json mitig = nlohmann::json::object();
  if (DIR* d = opendir("/sys/devices/system/cpu/vulnerabilities")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.')
        mitig[e->d_name] =
            read_first_line(std::string("/sys/devices/system/cpu/vulnerabilities/") + e->d_name);
    closedir(d);
  }
  return mitig;
}

// The kernel's limits on the mechanisms' objects (-1: unreadable).
nlohmann::json kernel_limits() {
  nlohmann::json lim;
  lim["mq_msg_max"] = as_number(read_first_line("/proc/sys/fs/mqueue/msg_max"));
  lim["mq_msgsize_max"] = as_number(read_first_line("/proc/sys/fs/mqueue/msgsize_max"));
  lim["mq_queues_max"] = as_number(read_first_line("/proc/sys/fs/mqueue/queues_max"));
  lim["rlimit_msgqueue"] = limit(RLIMIT_MSGQUEUE);
  lim["rlimit_nofile"] = limit(RLIMIT_NOFILE);
  lim["rlimit_memlock"] = limit(RLIMIT_MEMLOCK);
  lim["somaxconn"] = as_number(read_first_line("/proc/sys/net/core/somaxconn"));
  lim["sysv_msgmnb"] = as_number(read_first_line("/proc/sys/kernel/msgmnb"));
  lim["sysv_msgmax"] = as_number(read_first_line("/proc/sys/kernel/msgmax"));
  return lim;
}

// Whether io_uring is there and which of its setup flags this kernel takes; a warning where it
// is not.
nlohmann::json probe_io_uring(Notes& notes) {
  nlohmann::json uring;
  io_uring ring;
  int rc = io_uring_queue_init(8, &ring, 0);
  uring["available"] = rc == 0;
  if (rc != 0) {
    uring["error"] = fmt::format("io_uring_queue_init: {}", strerror(-rc));
    notes.warn(
        "io_uring is unavailable here; the io_uring benchmarks will be skipped",
        "enable it with `sysctl kernel.io_uring_disabled=0` (kernel 6.6+) or run on a kernel with io_uring");
    return uring;
  }
  uring["features"] = ring.features;
  io_uring_queue_exit(&ring);
  for (auto [name, flag] :
       {std::pair{"sqpoll", unsigned(IORING_SETUP_SQPOLL)},
        {"single_issuer", unsigned(IORING_SETUP_SINGLE_ISSUER)},
        {"defer_taskrun", unsigned(IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN)},
        {"coop_taskrun", unsigned(IORING_SETUP_COOP_TASKRUN)}}) {
    io_uring r;
    io_uring_params p{};
    p.flags = flag;
    // SQPOLL's kernel thread polls for sq_thread_idle ms (1 s by default) after its last work and
    // goes on until the ring's asynchronous teardown: a third of a short run's CPU. 1 ms is enough
    // for a probe that submits nothing.
    p.sq_thread_idle = 1;
    bool ok = io_uring_queue_init_params(8, &r, &p) == 0;
    if (ok) io_uring_queue_exit(&r);
    uring[name] = ok;
  }
  return uring;
}

// How this binary was built, and the libraries it links with their versions.
void describe_build(nlohmann::json& c, const std::string& glibc) {
  c["compiler"] = fmt::format("gcc {}", __VERSION__);
  c["build_type"] = IPCLAB_BUILD_TYPE;
  c["build_flags"] = IPCLAB_BUILD_FLAGS;
  c["libraries"] = {
      {"liburing", IPCLAB_URING_VERSION},
      {"fmt", fmt::format("{}.{}.{}", FMT_VERSION / 10000, FMT_VERSION / 100 % 100, FMT_VERSION % 100)},
      {"nlohmann_json", fmt::format("{}.{}.{}", NLOHMANN_JSON_VERSION_MAJOR, NLOHMANN_JSON_VERSION_MINOR,
                                    NLOHMANN_JSON_VERSION_PATCH)},
      {"glibc", glibc}};
  for (const auto& [name, version] : library_versions()) c["libraries"][name] = version();
}

// The warnings and conditions read from what was collected into `c`, each naming its remedy.
void judge_machine(Notes& notes, const nlohmann::json& c, const Cpus& cpus, double others,
                   const VcpuVerdict& vcpus) {
  const long logical = cpus.logical;
  if (others > other_load_threshold(logical))
    notes.warn(
        fmt::format("{:.1f} tasks of other processes were runnable on {} CPUs (ipclab warns above {:.1f}): "
                    "other work competes with the benchmarks",
                    others, logical, other_load_threshold(logical)),
        "stop other work (see `top`) and re-run; compare only runs made at similar load");
  if (const auto& gov = c["governor"]; !gov.is_null() && gov != "performance")
    notes.warn(
        fmt::format("CPU frequency governor is '{}': clock speed varies during runs", gov.get<std::string>()),
        "`cpupower frequency-set -g performance` (as root)");
  if (const std::string virt = c["virtualization"]; virt != "none")
    notes.note(
        fmt::format("running under virtualisation ({}): vCPUs may share physical cores and be descheduled",
                    virt),
        "compare only runs from the same machine; pin sides with --cpus and record placement");
  for (auto& w : vcpus.warnings) notes.warnings.push_back(w);
  if (cpus.smt_on)
    notes.note("SMT is on: two logical CPUs may be one core",
               "pick --cpus on distinct physical cores, or disable SMT");
  if (cpus.allowed.size() < 2)
    notes.warn("only one CPU is available: cross placement cannot run",
               "give the process two CPUs (taskset) or use placement=same");
  if (const long long msg_max = c["limits"]["mq_msg_max"]; msg_max >= 0 && msg_max < 64)
    notes.note(fmt::format("fs.mqueue.msg_max is {}: POSIX mq queue depth is capped there", msg_max),
               "`sysctl fs.mqueue.msg_max=256` (as root) for deeper queues");
  rlimit nofile{};
  getrlimit(RLIMIT_NOFILE, &nofile);
  if (nofile.rlim_max != RLIM_INFINITY && nofile.rlim_max < 20000)
    notes.note(
        fmt::format("open files hard limit is {}: the servers suite needs 10,000+ sockets", nofile.rlim_max),
        "raise it with `ulimit -Hn 65536` (as root) or in /etc/security/limits.conf");
  if (const long long somaxconn = c["limits"]["somaxconn"]; somaxconn >= 0 && somaxconn < 4096)
    notes.note(fmt::format("net.core.somaxconn is {}: listen backlogs are capped there", somaxconn),
               "`sysctl net.core.somaxconn=65535` (as root)");
  if (auto [why, remedy] = tracer_condition(); !why.empty()) notes.note(why, remedy);
  if (std::string(IPCLAB_BUILD_TYPE) != "Release")
    notes.warn(fmt::format("this is a {} build: timings are not representative", IPCLAB_BUILD_TYPE),
               "build with `cmake --preset release` (what `make bench` uses)");
}

}  // namespace

nlohmann::json collect_environment(const std::string& command_line) {
  using nlohmann::json;
  json c;
  Notes notes;
  const bool bundle = started_from_bundle();
  const std::vector<std::string> asked = ask_machine(bundle);
  describe_run(c, command_line, bundle, asked);

  const Cpus cpus = read_cpus();
  c["cpu"] = cpus.block;
  c["memory_bytes"] = uint64_t(sysconf(_SC_PHYS_PAGES)) * uint64_t(sysconf(_SC_PAGESIZE));
  utsname u{};
  uname(&u);
  c["kernel"] = fmt::format("{} {} {}", u.sysname, u.release, u.machine);
  c["virtualization"] = virtualization(asked);
  // What runs the vCPUs (KVM, QEMU's translator) and how much of their time a hypervisor took.
  VcpuSigns signs;
  read_cpuid_hypervisor(signs);
  signs.model = cpus.model;
  signs.detect_vm = asked[kDetectVm];
  signs.since_boot = read_steal();
  const VcpuVerdict vcpus = judge_vcpus(signs);
  c["vcpus"] = vcpus.block;
  std::string gov = read_first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
  c["governor"] = gov.empty() ? json(nullptr) : json(gov);

  const double others = sample_load(c, cpus.logical);
  c["mitigations"] = mitigations();
  c["limits"] = kernel_limits();
  c["io_uring"] = probe_io_uring(notes);
  // The shortest window a figure may come from here (core/machine/window.hpp).
  c["window_floor"] = to_json(window_floor());
  describe_build(c, asked[kGlibc]);

  judge_machine(notes, c, cpus, others, vcpus);
  c["warnings"] = notes.warnings;
  c["conditions"] = notes.conditions;
  return c;
}

void add_measured_topology(nlohmann::json& env, const std::vector<int>& cpus) {
  if (cpus.size() < 2) return;
  const topo::Matrix& m = measured_matrix(cpus);
  env["cpu"]["topology"] = topo::to_json(topo::read("/sys", cpus), m);
  for (auto& p : m.hidden_siblings)
    env["warnings"].push_back(
        {{"message",
          fmt::format("CPUs {} and {} behave as SMT siblings ({:.0f} ns, under half the median of the "
                      "pairs sysfs relates as it relates them): a VM may hide that they share a core",
                      p.a, p.b, p.ns)},
         {"remedy", fmt::format("do not take them as two cores: -p placement=smt puts two sides there, and "
                                "--cpus without one of {} and {} keeps sides off a shared core",
                                p.a, p.b)}});
  for (auto& p : m.fleeting_siblings)
    env["warnings"].push_back(
        {{"message",
          fmt::format("{}: the VM's vCPUs move between the host's cores, so which CPUs share a core "
                      "holds only for a moment here",
                      topo::fleeting_text(m, p))},
         {"remedy",
          "pin the VM's vCPUs to host cores (libvirt <vcpupin>, a cloud's dedicated hosts), or "
          "compare only paired runs (`ipclab ab`, --interleave); placement=smt finds no pair here"}});
}

}  // namespace ipclab
