// Result files are written through a temporary and rename: a crash never leaves half a file.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "core/error.hpp"
#include "core/output/output.hpp"

#include <fmt/format.h>

namespace ipclab::output {

void write_file_atomic(const std::string& path, const std::string& content) {
  std::string tmp = fmt::format("{}.tmp.{}", path, getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw UsageError(fmt::format("cannot write '{}': {}; choose a writable path", path, strerror(errno)));
  const char* p = content.data();
  size_t left = content.size();
  while (left) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw std::system_error(e, std::generic_category(), "write " + tmp);
    }
    p += n;
    left -= size_t(n);
  }
  ::fsync(fd);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw std::system_error(e, std::generic_category(), "rename to " + path);
  }
}

}  // namespace ipclab::output
