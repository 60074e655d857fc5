#!/usr/bin/env python3
"""A passthrough FUSE file system over a folder (fusepy over libfuse 2), standing in for the file
systems that lack renameat2's RENAME_NOREPLACE (NFS, 9p, most FUSE file systems): libfuse 2 has
no rename flags, so the kernel answers renameat2 with flags EINVAL here. `--no-link` refuses
link(2) as well (EPERM, as vfat does). Usage: fuse_passthrough.py ROOT MOUNTPOINT [--no-link] (runs in the foreground until unmounted).
Debian: python3-fusepy (scripts/setup.sh)."""
import errno
import os
import sys

try:  # Debian names the module fusepy; PyPI's package names it fuse
    from fusepy import FUSE, FuseOSError, Operations
except ImportError:
    from fuse import FUSE, FuseOSError, Operations


class Passthrough(Operations):
    def __init__(self, root, links):
        self.root = root
        self.links = links

    def _p(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def __call__(self, op, path, *args):
        try:
            return super().__call__(op, path, *args)
        except OSError as e:
            raise FuseOSError(e.errno or errno.EIO)

    def access(self, path, mode):
        if not os.access(self._p(path), mode):
            raise FuseOSError(errno.EACCES)

    def chmod(self, path, mode):
        os.chmod(self._p(path), mode)

    def chown(self, path, uid, gid):
        os.chown(self._p(path), uid, gid)

    def create(self, path, mode, fi=None):
        return os.open(self._p(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)

    def flush(self, path, fh):
        return 0

    def fsync(self, path, datasync, fh):
        os.fsync(fh)
        return 0

    def getattr(self, path, fh=None):
        st = os.lstat(self._p(path))
        return {k: getattr(st, k) for k in ("st_atime", "st_ctime", "st_gid", "st_mode", "st_mtime",
                                            "st_nlink", "st_size", "st_uid")}

    def link(self, target, source):
        if not self.links:
            raise FuseOSError(errno.EPERM)
        os.link(self._p(source), self._p(target))

    def mkdir(self, path, mode):
        os.mkdir(self._p(path), mode)

    def open(self, path, flags):
        return os.open(self._p(path), flags)

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self._p(path))

    def readlink(self, path):
        return os.readlink(self._p(path))

    def release(self, path, fh):
        os.close(fh)
        return 0

    def rename(self, old, new):
        os.rename(self._p(old), self._p(new))

    def rmdir(self, path):
        os.rmdir(self._p(path))

    def statfs(self, path):
        st = os.statvfs(self._p(path))
        return {k: getattr(st, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail",
                                            "f_ffree", "f_files", "f_flag", "f_frsize", "f_namemax")}

    def symlink(self, target, source):
        os.symlink(source, self._p(target))

    def truncate(self, path, length, fh=None):
        os.truncate(self._p(path), length)

    def unlink(self, path):
        os.unlink(self._p(path))

    def utimens(self, path, times=None):
        os.utime(self._p(path), times)

    def write(self, path, data, offset, fh):
        return os.pwrite(fh, data, offset)


if __name__ == "__main__":
    root, mountpoint = sys.argv[1], sys.argv[2]
    # No attribute or name caching: libfuse 2's high-level API gives a hard link a node of its own,
    # so a size cached for one name would go stale while the file grows through the other.
    FUSE(Passthrough(root, "--no-link" not in sys.argv[3:]), mountpoint, foreground=True, nothreads=True,
         attr_timeout=0, entry_timeout=0, negative_timeout=0)
