// Result files: written to a temporary of this run (created exclusively, never through a
// symlink, journaled so that a killed run's temporary is swept), made durable, then renamed
// over the target: a crash never leaves half a file. Targets are checked before the run.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/error.hpp"
#include "core/ipc_names.hpp"
#include "core/output/output.hpp"

#include <fmt/format.h>

namespace ipclab::output {

namespace {

std::string folder_of(const std::string& path) {
  auto dir = std::filesystem::path(path).parent_path();
  return dir.empty() ? "." : dir.string();
}

// True when `s` is valid UTF-8 without control characters: what a JSON record, a console line
// and the run's journal can all carry as it is (the JSON library is the UTF-8 judge).
bool plain_text(const std::string& s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

}  // namespace

void check_target(const std::string& option, const std::string& path) {
  if (path.empty()) throw UsageError(fmt::format("{} needs a file name, e.g. {} results.json", option, option));
  if (!plain_text(path))
    throw UsageError(fmt::format("{}: the path is not plain UTF-8 text (a control character or a stray "
                                 "byte); choose a plain file name", option));
  const std::string dir = folder_of(path);
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UsageError(fmt::format("{} {}: folder {} does not exist; create it first", option, path, dir));
  if (access(dir.c_str(), W_OK | X_OK) != 0)
    throw UsageError(fmt::format("{} {}: folder {} is not writable ({}); choose a writable folder", option,
                                 path, dir, strerror(errno)));
  if (lstat(path.c_str(), &st) != 0) return;  // a new file
  if (S_ISDIR(st.st_mode))
    throw UsageError(fmt::format("{} {} names a folder; give a file name, e.g. {}/results.json", option, path, path));
  if (S_ISLNK(st.st_mode))
    throw UsageError(fmt::format("{} {} is a symbolic link; ipclab writes no file through a link: name "
                                 "the file itself", option, path));
  if (!S_ISREG(st.st_mode))
    throw UsageError(fmt::format("{} {} is not a regular file; choose another name", option, path));
}

void write_file_atomic(const std::string& path, const std::string& content) {
  const std::string dir = folder_of(path);
  std::string tmp;
  const int fd = ipc::create_file(dir, std::filesystem::path(path).filename().string(), 0644, tmp);
  auto fail = [&](const char* what) {
    const int e = errno;
    ::close(fd);
    ipc::remove(ipc::Kind::File, tmp);
    throw std::system_error(e, std::generic_category(), fmt::format("{} {}", what, tmp));
  };
  for (size_t done = 0; done < content.size();) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write");
    done += size_t(n);
  }
  if (::fsync(fd) != 0) fail("fsync");
  ::close(fd);
  try {
    ipc::commit_file(tmp, path, true);
  } catch (...) {
    ipc::remove(ipc::Kind::File, tmp);
    throw;
  }
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace ipclab::output
