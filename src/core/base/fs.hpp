#pragma once
// Files and folders, the careful way: a folder made private whatever the umask, a file opened in a
// folder others may write to without following a link or blocking on a FIFO, the file systems
// that hold no user's files, a small file's first line. The rest of core and the mechanisms use
// these rather than open()/mkdir() of their own wherever a path comes from the user or a shared
// folder.
#include <string>

namespace ipclab {

/// Reads a small file's first line ("" when missing).
std::string read_first_line(const std::string& path);

/// Creates folder `path` with mode 0700 whatever the umask; false when something of that name
/// already exists (left as it is: the caller judges it). Throws std::system_error otherwise.
bool make_private_dir(const std::string& path);

/// The name of the file system `path` (an existing folder) is on when it is one that holds no
/// files of a user's — devices (devtmpfs), the kernel's views (proc, sysfs, cgroup, debugfs,
/// tracefs, securityfs, configfs, pstore, bpf, mqueue, efivarfs, ...) — else "". The one check of
/// every place that refuses such a folder for files (result files, -p dir).
std::string special_file_system(const std::string& path);

/// Opens an existing file at `path` in a folder others may write to (TMPDIR, /tmp, /dev/shm, -p
/// dir) with `flags` (O_RDONLY, O_RDWR, O_DIRECT...), never following a link and never blocking on
/// a FIFO or device planted there (O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC; O_NONBLOCK is cleared once
/// the type is known), and keeps it only when it is a regular file of this user's. Returns the fd;
/// -1 with errno from open() when there is nothing to open; -1 with errno EPERM and `why` saying
/// what is there when it is something else ("a FIFO of uid 0", "a file of uid 65534").
int open_own_file(const std::string& path, int flags, std::string* why = nullptr);

}  // namespace ipclab
