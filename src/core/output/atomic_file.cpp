// Result files: written to a temporary of this run (created exclusively, never through a
// symlink, journaled so that a killed run's temporary is swept), made durable, then renamed
// over the target: a crash never leaves half a file. Targets are checked before the run. The
// reporters of such files (JSON, Markdown) share the steps here: check, temporary, commit.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "core/base/error.hpp"
#include "core/base/fs.hpp"
#include "core/output/reporter.hpp"
#include "core/ownership/journal.hpp"
#include "core/stats/statistics.hpp"

#include <fmt/format.h>

namespace ipclab::output {

void check_target(const std::string& option, const std::string& path) {
  if (path.empty())
    throw UsageError(fmt::format("{} needs a file name, e.g. {} results.json", option, option));
  // Printable UTF-8 only: a path a JSON record, a console line and the run's journal carry as is.
  if (printable(path) != path)
    throw UsageError(
        fmt::format("{}: the path is not plain UTF-8 text (a control character or a stray "
                    "byte); choose a plain file name",
                    option));
  const std::string dir = folder_of(path);
  const std::string shown = brief(path), shown_dir = brief(dir);
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw UsageError(
        fmt::format("{} {}: folder {} does not exist; create it first", option, shown, shown_dir));
  // Probed with an unnamed file (O_TMPFILE: nothing appears, nothing is left), which also finds
  // what access() does not for root: a read-only or special file system. Where the file system
  // cannot make unnamed files, the mount decides (read-only, or a kernel's own file system such
  // as /sys or /proc, where no result file can be made), then access().
  const int probe = ::open(dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  int probe_errno = errno;
  if (probe >= 0) ::close(probe);
  if (probe < 0 && (probe_errno == EOPNOTSUPP || probe_errno == EISDIR)) {
    struct statfs fs {};
    if (::statfs(dir.c_str(), &fs) == 0 && ((fs.f_flags & ST_RDONLY) || !special_file_system(dir).empty()))
      probe_errno = (fs.f_flags & ST_RDONLY) ? EROFS : EACCES;
    else if (access(dir.c_str(), W_OK | X_OK) == 0)
      probe_errno = 0;
  }
  if (probe < 0 && probe_errno != 0)
    throw UsageError(fmt::format("{} {}: folder {} is not writable ({}); choose a writable folder", option,
                                 shown, shown_dir, strerror(probe_errno)));
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;  // a new file
    throw UsageError(fmt::format("{} {}: {}; choose another name", option, shown, strerror(errno)));
  }
  if (S_ISDIR(st.st_mode))
    throw UsageError(
        fmt::format("{} {} names a folder; give a file name, e.g. {}/results.json", option, shown, shown));
  if (S_ISLNK(st.st_mode))
    throw UsageError(
        fmt::format("{} {} is a symbolic link; ipclab writes no file through a link: name "
                    "the file itself",
                    option, shown));
  if (!S_ISREG(st.st_mode))
    throw UsageError(fmt::format("{} {} is not a regular file; choose another name", option, shown));
}

std::string target_identity(const std::string& path) {
  std::error_code ec;
  const auto abs = std::filesystem::absolute(path, ec);
  if (ec) return path;
  const auto parent = std::filesystem::weakly_canonical(abs.parent_path(), ec);
  return ec ? abs.lexically_normal().string() : (parent / abs.filename()).lexically_normal().string();
}

AtomicFile::AtomicFile(const std::string& path) : path_(path) {
  fd_ = ipc::create_file(folder_of(path), std::filesystem::path(path).filename().string(), 0644, tmp_);
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!tmp_.empty()) ipc::remove(ipc::Kind::File, tmp_);
}

void AtomicFile::commit(const std::string& content) {
  for (size_t done = 0; done < content.size();) {
    const ssize_t n = ::write(fd_, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::system_error(errno, std::generic_category(), "write " + tmp_);
    done += size_t(n);
  }
  if (::fsync(fd_) != 0) throw std::system_error(errno, std::generic_category(), "fsync " + tmp_);
  ::close(fd_);
  fd_ = -1;
  ipc::commit_file(tmp_, path_, true);
  tmp_.clear();
  const int dfd = ::open(folder_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomic(const std::string& path, const std::string& content) {
  AtomicFile(path).commit(content);
}

AtomicReporter::AtomicReporter(std::string option, std::string path, bool folder_is_new)
    : option_(std::move(option)), path_(std::move(path)) {
  if (!folder_is_new) check_target(option_, path_);
}

// The target is this run's alone from here to its end: a second run naming the same file (by
// whatever path) is refused here, before it runs anything, rather than replacing the first one's
// results at its end. A machine-wide lock named after the file's identity (ipc::try_lock_shared:
// journaled, released and removed at the run's end, swept after a crash). --csv needs none: its
// rows are appended whole under the file's own lock.
void hold_target(const std::string& option, const std::string& path) {
  const std::string identity = target_identity(path);
  std::string held_by;
  const int fd = ipc::try_lock_shared(fmt::format("out.{:016x}", seed_of(identity)), held_by);
  if (fd == -1)
    throw UsageError(
        fmt::format("{} {} is being written by {}; wait until that run ends, or give this "
                    "run another path",
                    option, brief(path), printable(held_by)));
  if (fd == -2)
    throw UsageError(
        fmt::format("{} {}: its lock cannot be taken: {}; remove that file if it is no one's, "
                    "or run as its owner",
                    option, brief(path), printable(held_by)));
}

// The temporary now, before the run: a place the checks could not judge (a special or read-only
// file system) is refused before the run rather than after it.
void AtomicReporter::open() {
  hold_target(option_, path_);
  try {
    file_ = std::make_unique<AtomicFile>(path_);
  } catch (const std::system_error& e) {
    throw UsageError(
        fmt::format("{} {}: {}; choose a writable folder", option_, brief(path_), e.code().message()));
  }
}

void AtomicReporter::begin(const nlohmann::json& context, const std::vector<PlannedBenchmark>&) {
  context_ = context;
}

void AtomicReporter::commit(const std::string& content) {
  try {
    file_->commit(content);
  } catch (const std::system_error& e) {
    file_.reset();  // its temporary goes now: no partial file stays
    throw RunError(fmt::format("{} {}: not written: {}", option_, path_, write_failure(e.code().value())));
  }
  fmt::print(stderr, "wrote {}\n", path_);
}

}  // namespace ipclab::output
