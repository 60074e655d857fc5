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
/// The folder a path names a file in: "." for a bare name, "/" for one at the root.
std::string folder_of(const std::string& path);
/// The whole of the regular file at `path`, opened without blocking (a FIFO or a device of that
/// name is refused, never waited on). Throws std::runtime_error naming what it is instead.
std::string read_regular_file(const std::string& path);

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

/// For an executable script ("#!INTERPRETER [ARG]", "#!/usr/bin/env NAME"): what is missing to run
/// it ("its interpreter python3 is not on PATH", "its interpreter /usr/bin/perl is missing"); ""
/// when nothing is (or `path` is no script). A host without python3 then skips the example servers
/// with the reason instead of failing them with exec's 127.
std::string missing_interpreter(const std::string& path);

/// How rename_noreplace() put a file in place.
enum class NoReplace {
  Rename2,  ///< renameat2(RENAME_NOREPLACE): one atomic step
  Link,     ///< link(2) to the new name (fails on an existing one), then unlink(2) of the old
  Reserve,  ///< the new name reserved with O_CREAT | O_EXCL, then rename(2) over that reservation
};
/// Renames `from` to `to` (the same folder) unless something named `to` exists: -1 with errno
/// EEXIST then, and `from` left as it is. renameat2's RENAME_NOREPLACE only where the file system
/// has it (rename(2) lists which: NFS, 9p and most FUSE file systems refuse it with EINVAL), else
/// link(2) + unlink(2), else (no hard links: vfat, some FUSE) an exclusive reservation of `to`
/// renamed over. Each way fails on an existing `to` and never replaces what it did not make.
/// System calls only, no allocation: async-signal-safe (the crash handler uses it). `used`, when
/// given, receives the way that worked. Returns 0, or -1 with errno.
int rename_noreplace(const char* from, const char* to, NoReplace* used = nullptr);
/// "RENAME_NOREPLACE", "link(2) and unlink(2)", "an O_EXCL reservation and rename(2)".
const char* describe(NoReplace way);

}  // namespace ipclab
