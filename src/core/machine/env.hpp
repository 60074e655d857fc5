#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ipclab {

/// The environment block of SPEC §1.5: hardware, kernel, limits, build, load, and warnings that
/// each name their remedy.
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
