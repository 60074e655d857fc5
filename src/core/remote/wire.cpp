#include "core/remote/wire.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
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
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <map>
#include <stdexcept>
#include <system_error>

#include "core/base/clock.hpp"
#include "core/base/error.hpp"
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

namespace {
// A beat, as each end sends it and the other's channel drops it.
const std::string kBeat = R"({"op":"beat"})";

// A beat, spelled as sent or otherwise (a relay that writes JSON its own way).
bool is_beat(const std::string& line) {
  if (line == kBeat) return true;
  if (line.find("beat") == std::string::npos) return false;
  try {
    const nlohmann::json j = nlohmann::json::parse(line);
    return j.is_object() && j.size() == 1 && j.contains("op") && j["op"] == "beat";
  } catch (const std::exception&) {
    return false;
  }
}
}  // namespace

nlohmann::json Heartbeat::to_json() const {
  return {{"interval_s", interval_s},
          {"deadline_s", deadline_s()},
          {"grace_s", grace_s()},
          {"meaning",
           "each end sends a beat every interval_s and takes the other for gone after deadline_s of "
           "silence; a remote side still there grace_s later is ended as by SIGTERM"}};
}

Channel::Channel(int in, int out, Answer answer) : in_(in), out_(out), answer_(std::move(answer)) {
  if (pipe2(wake_, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  heard_ns_ = now_ns();
  thread_ = std::thread([this] { pump(); });
}

Channel::~Channel() {
  const char c = 0;
  while (::write(wake_[1], &c, 1) < 0 && errno == EINTR) {
  }
  thread_.join();
  close(wake_[0]);
  close(wake_[1]);
}

void Channel::beat(const Heartbeat& h, std::function<void()> on_silent) {
  std::lock_guard lk(m_);
  beat_ = h;
  beating_ = true;
  heard_ns_ = now_ns();  // the deadline runs from now
  on_silent_ = std::move(on_silent);
  const char c = 1;  // the thread's next wait is the new interval's
  while (::write(wake_[1], &c, 1) < 0 && errno == EINTR) {
  }
}

void Channel::send(const nlohmann::json& j) {
  std::lock_guard lk(write_m_);
  write_line(out_, j);
}

void Channel::finish(End why) {
  if (end_ != End::Open) return;
  end_ = why;
  cv_.notify_all();
}

// The channel's thread: reads what comes (before it judges silence: a process continued after a
// stop finds the other end's beats waiting), sends a beat when one is due — only when the
// line fits at once and no other line is being written, so that a full pipe to a frozen end never
// holds it up — and ends the channel as the input ends, overflows or falls silent.
void Channel::pump() {
  std::string buf;
  uint64_t next_beat = 0;
  for (;;) {
    uint64_t wait_ns = 100'000'000;
    {
      std::lock_guard lk(m_);
      if (end_ != End::Open) return;
      if (beating_) {
        const uint64_t now = now_ns();
        if (!next_beat) next_beat = now;
        wait_ns = std::min(wait_ns, next_beat > now ? next_beat - now : 0);
      }
    }
    pollfd p[2] = {{in_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    const int r = poll(p, 2, int((wait_ns + 999'999) / 1'000'000));
    if (r < 0 && errno != EINTR) {
      std::lock_guard lk(m_);
      return finish(End::Eof);
    }
    if (r > 0 && p[1].revents) {
      char c = 0;
      if (::read(wake_[0], &c, 1) == 1 && c == 0) return;  // the destructor's word
      next_beat = 0;                                       // beat() changed the interval
    }
    if (r > 0 && p[0].revents) {
      char tmp[65536];
      const ssize_t n = ::read(in_, tmp, sizeof tmp);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      const uint64_t read_ns = now_ns();
      std::vector<nlohmann::json> answers;
      {
        std::lock_guard lk(m_);
        if (n <= 0) return finish(End::Eof);
        bytes_in_ += uint64_t(n);
        heard_ns_ = read_ns;
        buf.append(tmp, size_t(n));
        size_t from = 0;
        for (size_t nl; (nl = buf.find('\n', from)) != std::string::npos; from = nl + 1) {
          std::string line = buf.substr(from, nl - from);
          if (is_beat(line)) continue;
          if (answer_)
            if (auto a = answer_(line)) {
              answers.push_back(std::move(*a));
              continue;
            }
          lines_.emplace_back(std::move(line), read_ns);
        }
        buf.erase(0, from);
        if (from) cv_.notify_all();
        if (buf.size() > kMaxLine) return finish(End::Overlong);
      }
      for (auto& a : answers) try {
          send(a);
        } catch (const std::exception&) {  // the input's end says the rest
        }
    }
    std::function<void()> silent;
    {
      std::lock_guard lk(m_);
      if (!beating_) continue;
      const uint64_t now = now_ns();
      if (now - heard_ns_ > uint64_t(beat_.deadline_s() * 1e9)) {
        finish(End::Silent);
        silent = on_silent_;
      } else if (now >= next_beat) {
        next_beat = now + uint64_t(beat_.interval_s * 1e9);
        std::unique_lock w(write_m_, std::try_to_lock);
        pollfd o{out_, POLLOUT, 0};
        if (w && poll(&o, 1, 0) == 1 && (o.revents & POLLOUT)) {
          const std::string line = kBeat + "\n";
          if (::send(out_, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno == ENOTSOCK)
            (void)!::write(out_, line.data(), line.size());  // a pipe (stdout there): PIPE_BUF is atomic
        }
      }
    }
    if (silent) silent();
    if (end() != End::Open) return;
  }
}

bool Channel::next(std::string& line, uint64_t deadline, uint64_t* arrived_ns) {
  std::unique_lock lk(m_);
  for (;;) {
    if (!lines_.empty()) {
      line = std::move(lines_.front().first);
      if (arrived_ns) *arrived_ns = lines_.front().second;
      lines_.pop_front();
      return true;
    }
    if (end_ != End::Open) return false;
    const uint64_t now = now_ns();
    if (now >= deadline) return false;
    cv_.wait_for(lk, std::chrono::nanoseconds(std::min<uint64_t>(deadline - now, 100'000'000)));
  }
}

Channel::End Channel::end() const {
  std::lock_guard lk(m_);
  return end_;
}

std::string Channel::end_text() const {
  std::lock_guard lk(m_);
  switch (end_) {
    case End::Open:
      return "";
    case End::Eof:
      return "its end of the channel closed";
    case End::Silent:
      return fmt::format(
          "nothing came from it for {:.1f} s (a heartbeat is due every {:g} s): the link to it is down or "
          "it is frozen",
          double(now_ns() - heard_ns_) * 1e-9, beat_.interval_s);
    case End::Overlong:
      return fmt::format("it sent a line of over {} MiB", kMaxLine >> 20);
  }
  return "";
}

uint64_t Channel::bytes_in() const {
  std::lock_guard lk(m_);
  return bytes_in_;
}

namespace {
std::string field(const std::string& where, const char* key) {
  return where.empty() ? key : where + "." + key;
}
[[noreturn]] void bad(const nlohmann::json& j, const char* key, const std::string& where,
                      const std::string& want) {
  const std::string got = j.contains(key) ? brief(j[key].dump(), 60) : "missing";
  throw BadReply(fmt::format("{} is {}: want {}", field(where, key), got, want));
}
// The field `key` of the object `j`; nullptr when it is missing and the caller has a fallback. `j`
// no object, or the field missing without a fallback, is a BadReply naming what is wanted.
const nlohmann::json* present(const nlohmann::json& j, const char* key, bool has_fallback,
                              const std::string& where, const std::string& want) {
  if (!j.is_object()) throw BadReply(fmt::format("{} is not an object", where));
  if (j.contains(key)) return &j[key];
  if (!has_fallback) bad(j, key, where, want);
  return nullptr;
}
}  // namespace

int64_t whole(const nlohmann::json& j, const char* key, int64_t lo, int64_t hi,
              std::optional<int64_t> fallback, const std::string& where) {
  const std::string want = fmt::format("a whole number from {} to {}", lo, hi);
  const nlohmann::json* field_value = present(j, key, fallback.has_value(), where, want);
  if (!field_value) return *fallback;
  const nlohmann::json& v = *field_value;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u <= uint64_t(INT64_MAX) && int64_t(u) >= lo && int64_t(u) <= hi) return int64_t(u);
  } else if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i >= lo && i <= hi) return i;
  }
  bad(j, key, where, want);
}

uint64_t whole_u64(const nlohmann::json& j, const char* key, uint64_t hi, std::optional<uint64_t> fallback,
                   const std::string& where) {
  const std::string want = fmt::format("a whole number from 0 to {}", hi);
  const nlohmann::json* field_value = present(j, key, fallback.has_value(), where, want);
  if (!field_value) return *fallback;
  const nlohmann::json& v = *field_value;
  if (v.is_number_unsigned() && v.get<uint64_t>() <= hi) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0 && uint64_t(v.get<int64_t>()) <= hi)
    return uint64_t(v.get<int64_t>());
  bad(j, key, where, want);
}

double real(const nlohmann::json& j, const char* key, double lo, double hi, std::optional<double> fallback,
            const std::string& where) {
  const std::string want = fmt::format("a number from {:g} to {:g}", lo, hi);
  const nlohmann::json* field_value = present(j, key, fallback.has_value(), where, want);
  if (!field_value) return *fallback;
  const nlohmann::json& v = *field_value;
  if (v.is_number()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d >= lo && d <= hi) return d;
  }
  bad(j, key, where, want);
}

std::vector<uint64_t> wholes(const nlohmann::json& j, const char* key, size_t max_n, uint64_t hi,
                             const std::string& where) {
  if (!j.is_object()) throw BadReply(fmt::format("{} is not an object", where));
  std::vector<uint64_t> out;
  if (!j.contains(key)) return out;
  const nlohmann::json& v = j[key];
  if (!v.is_array() || v.size() > max_n)
    bad(j, key, where, fmt::format("a list of at most {} whole numbers", max_n));
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const nlohmann::json one = {{"v", v[i]}};
    out.push_back(whole_u64(one, "v", hi, std::nullopt, fmt::format("{}[{}]", field(where, key), i)));
  }
  return out;
}

std::string text(const nlohmann::json& j, const char* key, size_t max, std::optional<std::string> fallback,
                 const std::string& where) {
  const nlohmann::json* v = present(j, key, fallback.has_value(), where, "a string");
  if (!v) return *fallback;
  if (!v->is_string() || v->get_ref<const std::string&>().size() > max)
    bad(j, key, where, fmt::format("a string of at most {} bytes", max));
  return v->get<std::string>();
}

const nlohmann::json& object(const nlohmann::json& j, const char* key, const std::string& where) {
  static const nlohmann::json empty = nlohmann::json::object();
  if (!j.is_object()) throw BadReply(fmt::format("{} is not an object", where));
  if (!j.contains(key)) return empty;
  if (!j[key].is_object()) bad(j, key, where, "an object");
  return j[key];
}

nlohmann::json cpu_json(const CpuUsage& c) {
  return {{"user_s", c.user_s}, {"sys_s", c.sys_s}, {"ctx_vol", c.ctx_vol}, {"ctx_invol", c.ctx_invol}};
}

CpuUsage cpu_of(const nlohmann::json& j, double max_s, const std::string& where) {
  CpuUsage c;
  c.user_s = real(j, "user_s", 0, max_s, 0.0, where);
  c.sys_s = real(j, "sys_s", 0, max_s, 0.0, where);
  if (c.user_s + c.sys_s > max_s)
    throw BadReply(
        fmt::format("{}.user_s + sys_s is {:g} s: want at most {:g} s", where, c.user_s + c.sys_s, max_s));
  c.ctx_vol = whole(j, "ctx_vol", 0, INT64_MAX, 0, where);
  c.ctx_invol = whole(j, "ctx_invol", 0, INT64_MAX, 0, where);
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
    const int fd = transport::connected_ipv4(SOCK_DGRAM, address, port, "the remote side");
    path = network_path(fd);
    ::close(fd);
  } catch (const std::exception&) {
  }
  return path;
}

nlohmann::json network_path_at(const std::string& address) {
  nlohmann::json path = nlohmann::json::object();
  try {
    const int fd = transport::bound_ipv4(SOCK_DGRAM, address);
    path = network_path(fd);
    ::close(fd);
  } catch (const std::exception&) {
  }
  return path;
}

}  // namespace detail
}  // namespace ipclab::remote
