#include "core/fdio.hpp"

#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <system_error>

#include "core/session.hpp"

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

}  // namespace ipclab
