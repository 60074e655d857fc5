#pragma once
// What the two ends of --remote share (core/run/remote.cpp here, core/run/remote_side.cpp on the
// other host): the mechanisms that cross, the JSON lines of their control channel, each host's
// identity and clock. For those two files only.
#include <sys/socket.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/cpu.hpp"

namespace ipclab::remote::detail {

/// The socket type of a crossing mechanism's data path, or this: its server runs on the remote host.
inline constexpr int kServer = -1;
/// The mechanisms whose two sides can be on two hosts, with the socket type of their data path.
const std::map<std::string, int>& crossing();

/// CLOCK_REALTIME now (ns): the clock probes compare the two hosts' wall clocks.
uint64_t realtime_ns();
/// This host and build (version, build type and flags), which both ends compare first.
nlohmann::json identity();
std::string identity_text(const nlohmann::json& h);

/// One word for the remote shell, which runs ssh's command line: quoted.
std::string shell_quote(const std::string& s);
/// Splits "-p 2222" into "-p", "2222" (an --ssh-option as it would be typed after ssh).
std::vector<std::string> words(const std::string& s);

/// One line of text at a time from a descriptor, waiting at most until `deadline` (now_ns).
/// Returns false at the end of input or past the deadline (`eof` says which).
bool read_line(int fd, std::string& buf, std::string& line, uint64_t deadline, bool& eof);
/// One JSON line, whole.
void write_line(int fd, const nlohmann::json& j);

/// This end of the data path to `address`:`port`: the interface a datagram socket connected there
/// leaves by (a UDP connect sends nothing); {} when there is none.
nlohmann::json network_path_to(const std::string& address, int port);
/// The interface of this host's `address`, where a data path ends; {} when it has none.
nlohmann::json network_path_at(const std::string& address);

/// CPU usage as the control channel carries it, and back.
nlohmann::json cpu_json(const CpuUsage& c);
CpuUsage cpu_of(const nlohmann::json& j);

}  // namespace ipclab::remote::detail
