#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/cpu.hpp"

namespace ipclab {

/// What runs the CPUs: the signs collect_environment reads of the machine (a test gives its own).
struct VcpuSigns {
  bool hypervisor_bit = false;  // CPUID leaf 1, ECX bit 31 (x86; false elsewhere)
  std::string cpuid_vendor;     // CPUID leaf 0x40000000's signature: "KVMKVMKVM", "TCGTCGTCGTCG", ...
  std::string model;            // /proc/cpuinfo's model name
  std::string detect_vm;        // `systemd-detect-virt --vm`: "kvm", "qemu", "none"; "" when absent
  StealReading since_boot;      // /proc/stat
};

/// The context's `vcpus` block and its warnings ({message, remedy}). `emulation`: "tcg" (QEMU's
/// translator: CPUID vendor TCGTCGTCGTCG; or, without a CPUID signature, a QEMU model name or
/// `systemd-detect-virt --vm` saying qemu rather than kvm), "kvm", "other" (another hypervisor's
/// vCPUs) or "none"; `steal_since_boot`: the steal of every CPU since boot as a share of the time
/// they had work (busy, steal included), and `overcommitted` when that share is above
/// kStealFlagShare.
struct VcpuVerdict {
  nlohmann::json block;
  std::vector<nlohmann::json> warnings;
};
VcpuVerdict judge_vcpus(const VcpuSigns& signs);

/// One task (thread) of /proc: its process, that process's parent, and whether it is runnable.
struct TaskState {
  int pid = 0, ppid = 0;
  bool runnable = false;
};
/// How many of `tasks` are runnable and not of `self`'s process tree (`self` and its descendants):
/// the load that competes with ipclab, not its own children's or threads'.
int others_runnable(const std::vector<TaskState>& tasks, int self);
/// Every task of /proc now.
std::vector<TaskState> read_tasks();
/// Above how many runnable tasks of other processes, on average, the run is warned that other work
/// competes: a quarter of the CPUs, at least half a task (one CPU half busy on a 2-CPU machine).
double other_load_threshold(long cpus);

/// The environment block of SPEC §1.5: hardware, kernel, limits, build, load, and warnings that
/// each name their remedy.
/// The commit this binary was built from, as its build recorded it ("<12 hex>[-dirty]"; the
/// entry point sets it, cli/version.cpp knowing it): the context's `git_sha`. Unset or "unknown":
/// the source tree's HEAD now (which a binary built before the tree moved does not match).
void set_build_commit(const std::string& sha);
nlohmann::json collect_environment(const std::string& command_line);

/// Puts the measured cache-line round trips between `cpus` (placement's measured_matrix, once per
/// process) into `env`'s cpu.topology, as `ipclab topo --json` shows them, and a warning for each
/// pair that behaves as SMT siblings. Nothing for fewer than two CPUs.
void add_measured_topology(nlohmann::json& env, const std::vector<int>& cpus);

/// A library a mechanism links, named with its version in every result's environment block
/// (`libraries`): `const LibraryVersion kVersion{"libzmq", [] { return std::string("4.3.4"); }};`
/// at namespace scope in the mechanism's file.
struct LibraryVersion {
  LibraryVersion(std::string name, std::function<std::string()> version);
};

}  // namespace ipclab
