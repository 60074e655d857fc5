#include "core/peers/daemon.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "core/base/clock.hpp"
#include "core/base/error.hpp"
#include "core/measure/session.hpp"
#include "core/measure/watchdog.hpp"
#include "core/ownership/deadline.hpp"
#include "core/ownership/journal.hpp"

namespace ipclab {

Daemon::Daemon(Options o) : opt_(std::move(o)) {
  if (opt_.argv.empty() || access(opt_.argv[0].c_str(), X_OK) != 0)
    throw Skip(fmt::format("{}: {} is not installed", opt_.name, opt_.argv.empty() ? "?" : opt_.argv[0]));
  const int log = ipc::create_file(ipc::run_dir(), opt_.name + ".log", 0600, log_path_);
  try {
    proc_ = Process::exec(
        {.cpu = opt_.cpu, .stdin_fd = -1, .stdout_fd = log, .stderr_fd = log, .keep_fds = opt_.keep_fds},
        opt_.argv);
  } catch (...) {
    close(log);
    ipc::remove(ipc::Kind::File, log_path_);
    throw;
  }
  close(log);
  const Deadline::Waiting waiting(fmt::format("{} ({}) to get ready", opt_.name, opt_.argv[0]),
                                  opt_.timeout_s);
  const uint64_t deadline = now_ns() + uint64_t(opt_.timeout_s * 1e9);
  for (;;) {
    const std::string text = read_log();
    if (const size_t at = text.find(opt_.ready_text); at != std::string::npos) {
      const size_t begin = text.rfind('\n', at), end = text.find('\n', at);
      ready_line_ = text.substr(begin == std::string::npos ? 0 : begin + 1,
                                end == std::string::npos ? std::string::npos : end - (begin + 1));
      return;
    }
    std::string why;
    if (!proc_.alive())
      why = proc_.death();
    else if (now_ns() > deadline)
      why = fmt::format("not ready within {:.0f} s", opt_.timeout_s);
    if (!why.empty()) {
      const std::string tail = log_tail();
      stop();
      throw std::runtime_error(fmt::format("{} {} before it served{}{}", opt_.name, why,
                                           tail.empty() ? "" : ": ", printable(tail)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

Daemon::~Daemon() { stop(); }

std::string Daemon::read_log() const {
  std::string text;
  const int fd = open(log_path_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, size_t(n));
  close(fd);
  return text;
}

std::string Daemon::log_tail(int lines) const {
  const std::string text = read_log();
  std::vector<std::string> all;
  for (size_t pos = 0; pos < text.size();) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    if (nl > pos) all.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  std::string out;
  for (size_t i = all.size() > size_t(lines) ? all.size() - size_t(lines) : 0; i < all.size(); ++i)
    out += (out.empty() ? "" : " | ") + all[i];
  return out;
}

void Daemon::attach(Session& s) {
  s.add_peer({.role = opt_.name, .index = 0, .process = &proc_, .cpu = opt_.cpu});
}

void Daemon::stop() {
  proc_.stop(opt_.grace_s);
  if (!log_path_.empty()) ipc::remove(ipc::Kind::File, log_path_);
  log_path_.clear();
}

}  // namespace ipclab
