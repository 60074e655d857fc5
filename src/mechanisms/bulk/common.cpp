#include "mechanisms/bulk/common.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>
#include <system_error>

#include "core/model/std_params.hpp"
#include "core/transport/fd_transport.hpp"
#include "mechanisms/messaging/common.hpp"

namespace ipclab::bulk {

using messaging::retry_errno;
using transport::check_rc;

std::vector<ParamSpec> suite_params(std::vector<ParamSpec> extra) {
  auto pattern = std_params::throughput_or_roundtrip();
  auto mode = std_params::mode({"threads"}, {"threads", "processes"});
  std::vector<ParamSpec> v = {
      pattern,
      {.name = "size",
       .type = ParamType::Size,
       .def = "1M",
       .help = "bytes per message (both sides touch every byte with verify=full)",
       .quick = {"64K", "1M", "16M"},
       .full = {"64K", "1M", "16M", "64M"},
       .min = 4096,
       .max = kMaxSize},
      mode,
      std_params::placement({"same", "cross", "unpinned"}, {"same", "cross"}),
      std_params::verify(),
  };
  for (auto& e : extra) v.push_back(std::move(e));
  return v;
}

std::string check(const Caps& caps, const Params& p) {
  const int64_t size = p.i64("size");
  if (size > caps.max_size)
    return fmt::format("size {} is over this mechanism's limit of {} ({}); use a smaller size",
                       size_text(size), size_text(caps.max_size), caps.size_limit_why);
  if (!caps.processes && p.str("mode") == "processes") return caps.processes_why + "; use mode=threads";
  return "";
}

void notify_pair(int sv[2]) {
  check_rc(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), "socketpair");
}

void send_record(int sock, const void* data, size_t len, int fd) {
  iovec iov{const_cast<void*>(data), len};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  if (fd >= 0) {
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  for (;;) {
    const ssize_t n = ::sendmsg(sock, &m, MSG_NOSIGNAL);
    if (n == ssize_t(len)) return;
    if (n >= 0) throw std::runtime_error(fmt::format("short notification: {} of {} bytes", n, len));
    retry_errno("sendmsg", false);
  }
}

int recv_record(int sock, void* data, size_t len) {
  iovec iov{data, len};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof control;
  ssize_t n;
  while ((n = ::recvmsg(sock, &m, MSG_CMSG_CLOEXEC)) < 0) retry_errno("recvmsg", false);
  int fd = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  if (n == 0) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error("peer closed the channel");
  }
  if (size_t(n) != len || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error(fmt::format("notification of {} bytes, expected {}", n, len));
  }
  return fd;
}

void write_all(int fd, const void* data, size_t len) {
  const char* p = static_cast<const char*>(data);
  while (len) {
    const ssize_t n = ::write(fd, p, len);
    if (n < 0) {
      retry_errno("write", false);
      continue;
    }
    p += n;
    len -= size_t(n);
  }
}

void read_all(int fd, void* data, size_t len) {
  char* p = static_cast<char*>(data);
  while (len) {
    const ssize_t n = ::read(fd, p, len);
    if (n < 0) {
      retry_errno("read", false);
      continue;
    }
    if (n == 0) throw std::runtime_error("peer closed the channel");
    p += n;
    len -= size_t(n);
  }
}

Pages::Pages(size_t bytes) : bytes_(bytes) {
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap");
  mem_ = static_cast<std::byte*>(m);
}

Pages::~Pages() { munmap(mem_, bytes_); }

Notes::~Notes() {
  for (int fd : fds_)
    if (fd >= 0) ::close(fd);
}

Note Notes::data(int* fd) { return next(Note::Data, fd); }

Note Notes::credit() { return next(Note::Credit, nullptr); }

Note Notes::next(Note::Kind kind, int* fd) {
  std::vector<Note>& mine = kind == Note::Data ? data_ : credits_;
  if (!mine.empty()) {
    const Note n = mine.front();
    mine.erase(mine.begin());
    if (kind == Note::Data) {
      const int f = fds_.front();
      fds_.erase(fds_.begin());
      if (fd)
        *fd = f;
      else if (f >= 0)
        ::close(f);
    }
    return n;
  }
  for (;;) {
    Note n;
    const int f = recv_record(sock_, &n, sizeof n);
    if (n.kind != Note::Data && n.kind != Note::Credit) {
      if (f >= 0) ::close(f);
      throw std::runtime_error(fmt::format("a note of unknown kind {}", n.kind));
    }
    if (n.kind == kind) {
      if (fd)
        *fd = f;
      else if (f >= 0)
        ::close(f);
      return n;
    }
    if (n.kind == Note::Data) {
      data_.push_back(n);
      fds_.push_back(f);
    } else {
      if (f >= 0) ::close(f);
      credits_.push_back(n);
    }
  }
}

size_t grow_pipe(int fd, size_t want) {
  const int64_t max = messaging::read_proc_int("/proc/sys/fs/pipe-max-size", 1 << 20);
  const size_t ask = std::min<size_t>(want, size_t(max));
  const int got = ::fcntl(fd, F_SETPIPE_SZ, int(ask));
  if (got >= 0) return size_t(got);
  // A user over /proc/sys/fs/pipe-user-pages-soft gets EPERM: the size it had remains.
  const int e = errno;
  const int now = check_rc(::fcntl(fd, F_GETPIPE_SZ), "F_GETPIPE_SZ");
  messaging::warn_once(
      "pipe-size", fmt::format("a pipe stays at {} bytes: F_SETPIPE_SZ {}: {}", now, ask, std::strerror(e)));
  return size_t(now);
}

}  // namespace ipclab::bulk
