#include "core/run/remote_wire.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <stdexcept>
#include <system_error>

#include "core/base/clock.hpp"
#include "core/base/fs.hpp"
#include "core/machine/env.hpp"
#include "core/process/process.hpp"
#include "core/transport/fd_transport.hpp"

namespace ipclab::remote {
namespace detail {

// The mechanisms whose two sides can be on two hosts, with the socket type of their data path
// (kServer: a server mechanism, its server started on the remote host).
const std::map<std::string, int>& crossing() {
  static const std::map<std::string, int> m = {{"messaging/tcp", SOCK_STREAM}, {"messaging/udp", SOCK_DGRAM},
                                               {"echo/epoll", kServer},        {"echo/uring", kServer},
                                               {"servers/epoll_et", kServer},  {"servers/uring", kServer}};
  return m;
}

uint64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

nlohmann::json identity() {
  return {
      {"version", IPCLAB_VERSION}, {"build_type", IPCLAB_BUILD_TYPE}, {"build_flags", IPCLAB_BUILD_FLAGS}};
}

std::string identity_text(const nlohmann::json& h) {
  auto s = [&](const char* k) { return h.contains(k) && h[k].is_string() ? h[k].get<std::string>() : "?"; };
  return fmt::format("{} ({} build, flags '{}')", s("version"), s("build_type"), s("build_flags"));
}

// For the remote shell, which runs ssh's command line: one word, quoted.
std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Splits "-p 2222" into "-p", "2222" (each --ssh-option as it would be typed after ssh).
std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> w;
  std::stringstream in(s);
  std::string x;
  while (in >> x) w.push_back(x);
  return w;
}

// One line of text at a time from a descriptor, waiting at most until `deadline` (now_ns).
// Returns false at the end of input or past the deadline (`eof` says which).
bool read_line(int fd, std::string& buf, std::string& line, uint64_t deadline, bool& eof) {
  eof = false;
  for (;;) {
    if (auto nl = buf.find('\n'); nl != std::string::npos) {
      line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      return true;
    }
    const uint64_t now = now_ns();
    if (now >= deadline) return false;
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, int(std::min<uint64_t>((deadline - now) / 1'000'000 + 1, 100)));
    if (r < 0 && errno != EINTR) return eof = true, false;
    if (r <= 0) continue;
    char tmp[4096];
    ssize_t n = read(fd, tmp, sizeof tmp);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return eof = true, false;
    buf.append(tmp, size_t(n));
  }
}

void write_line(int fd, const nlohmann::json& j) {
  const std::string s = j.dump() + "\n";
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == ENOTSOCK) n = ::write(fd, s.data() + done, s.size() - done);  // stdout: a pipe
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::system_error(errno, std::generic_category(), "control channel");
    done += size_t(n);
  }
}

nlohmann::json cpu_json(const CpuUsage& c) {
  return {{"user_s", c.user_s}, {"sys_s", c.sys_s}, {"ctx_vol", c.ctx_vol}, {"ctx_invol", c.ctx_invol}};
}

CpuUsage cpu_of(const nlohmann::json& j) {
  CpuUsage c;
  c.user_s = j.value("user_s", 0.0);
  c.sys_s = j.value("sys_s", 0.0);
  c.ctx_vol = j.value("ctx_vol", int64_t(0));
  c.ctx_invol = j.value("ctx_invol", int64_t(0));
  return c;
}

namespace {

std::string sysfs(const std::string& iface, const char* what) {
  return read_first_line("/sys/class/net/" + iface + "/" + what);
}

// The queueing discipline of `iface`, as `tc qdisc show` prints it ("" when tc is missing).
std::string qdisc_of(const std::string& iface) {
  return command_output({"tc", "qdisc", "show", "dev", iface}, 2.0);
}

}  // namespace
}  // namespace detail

using detail::qdisc_of;
using detail::sysfs;

nlohmann::json network_path(int fd) {
  nlohmann::json j;
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 || a.ss_family != AF_INET) return j;
  const in_addr mine = reinterpret_cast<sockaddr_in&>(a).sin_addr;
  char text[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &mine, text, sizeof text);
  j["address"] = text;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return j;
  std::string iface;
  for (ifaddrs* i = list; i; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
        reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr == mine.s_addr)
      iface = i->ifa_name;
  freeifaddrs(list);
  if (iface.empty()) return j;
  j["interface"] = iface;
  if (auto mtu = sysfs(iface, "mtu"); !mtu.empty()) j["mtu"] = std::stoll(mtu);
  // Link speed in Mb/s: virtual links (veth, loopback) have none, or say -1.
  if (auto speed = sysfs(iface, "speed"); !speed.empty() && speed[0] != '-')
    j["speed_mbps"] = std::stoll(speed);
  ethtool_drvinfo info{};
  info.cmd = ETHTOOL_GDRVINFO;
  ifreq req{};
  std::snprintf(req.ifr_name, sizeof req.ifr_name, "%s", iface.c_str());
  req.ifr_data = reinterpret_cast<char*>(&info);
  if (ioctl(fd, SIOCETHTOOL, &req) == 0) j["driver"] = info.driver;
  if (auto q = qdisc_of(iface); !q.empty()) j["qdisc"] = q;
  return j;
}

namespace detail {

nlohmann::json network_path_to(const std::string& address, int port) {
  nlohmann::json path = nlohmann::json::object();
  try {
    const int fd = messaging::connected_ipv4(SOCK_DGRAM, address, port, "the remote side");
    path = network_path(fd);
    ::close(fd);
  } catch (const std::exception&) {
  }
  return path;
}

nlohmann::json network_path_at(const std::string& address) {
  nlohmann::json path = nlohmann::json::object();
  try {
    const int fd = messaging::bound_ipv4(SOCK_DGRAM, address);
    path = network_path(fd);
    ::close(fd);
  } catch (const std::exception&) {
  }
  return path;
}

}  // namespace detail
}  // namespace ipclab::remote
