#include "core/base/fdio.hpp"

#include <immintrin.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "core/base/cancel.hpp"

namespace ipclab {

void check_errno(const char* what) {
  if (errno == EINTR) {
    if (abort_requested()) throw Aborted();
    return;
  }
  throw std::system_error(errno, std::generic_category(), what);
}

void write_all(int fd, const std::byte* buf, size_t len) {
  while (len) {
    ssize_t n = ::write(fd, buf, len);
    if (n < 0) {
      check_errno("write");
      continue;
    }
    buf += n;
    len -= size_t(n);
  }
}

void read_exact(int fd, std::byte* buf, size_t len) {
  while (len) {
    ssize_t n = ::read(fd, buf, len);
    if (n < 0) {
      check_errno("read");
      continue;
    }
    if (n == 0) throw std::runtime_error("read: peer closed the connection");
    buf += n;
    len -= size_t(n);
  }
}

std::string read_from_start(int fd, char stop) {
  std::string text;
  char buf[8192];
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n <= 0) break;
    text.append(buf, size_t(n));
    at += n;
    if (stop && std::memchr(buf, stop, size_t(n))) break;
  }
  return text;
}

bool retry_errno(const char* what, bool nonblocking) {
  const int e = errno;
  if (e == EINTR || (nonblocking && (e == EAGAIN || e == EWOULDBLOCK))) {
    if (abort_requested()) throw Aborted();
    if (e != EINTR) _mm_pause();
    return true;
  }
  throw std::system_error(e, std::generic_category(), what);
}

}  // namespace ipclab
