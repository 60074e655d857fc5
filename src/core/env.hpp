#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace ipclab {

/// The environment block of SPEC §1.5: hardware, kernel, limits, build, load, and warnings that
/// each name their remedy.
nlohmann::json collect_environment(const std::string& command_line);

/// Reads a small file's first line ("" when missing).
std::string read_first_line(const std::string& path);

}  // namespace ipclab
