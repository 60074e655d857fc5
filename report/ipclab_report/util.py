"""Small shared helpers: the usage error, atomic writes, number formatting."""

from __future__ import annotations

import argparse
import errno
import math
import os
import stat
import tempfile
import textwrap


class UsageError(Exception):
    """A problem the user fixes by changing the command line or the input: one line, exit 2."""


def printable(text) -> str:
    """`text` on one line of a terminal: control characters, line separators and stray bytes
    (surrogate escapes) as escapes, as the harness's printable() shows them."""
    out = []
    for ch in str(text):
        c = ord(ch)
        if ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif 0xDC80 <= c <= 0xDCFF:  # a byte that was not UTF-8 (os.fsdecode's surrogateescape)
            out.append(f"\\x{c - 0xDC00:02x}")
        elif c < 0x20 or c == 0x7F:
            out.append(f"\\x{c:02x}")
        elif 0x80 <= c <= 0x9F or c in (0x2028, 0x2029) or 0xD800 <= c <= 0xDFFF:
            out.append(f"\\u{{{c:04x}}}")
        else:
            out.append(ch)
    return "".join(out)


def brief(text, limit: int = 200) -> str:
    """A user's value as an error message echoes it: printable, and cut to about `limit`
    characters ("…(+N more)"), so that a 100 KB argument gives a readable line. The twin of the
    harness's brief() (src/core/base/error.hpp): every message that shows user text goes through it."""
    shown = printable(text)
    if len(shown) <= limit:
        return shown
    return f"{shown[:limit]}…(+{len(shown) - limit} more)"


# The kernel's own file systems, where no result file can be made even by root.
KERNEL_FILE_SYSTEMS = {"sysfs", "proc", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs", "configfs",
                       "bpf", "pstore", "efivarfs"}


def _file_system_of(directory: str):
    """(type, read-only) of the mount holding `directory`, from /proc/self/mountinfo; None if unknown."""
    real = os.path.realpath(directory)
    best = None
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                fields = left.split()
                point = fields[4].replace("\\040", " ")
                if (real == point or real.startswith(point.rstrip("/") + "/")) and \
                        (best is None or len(point) >= len(best[0])):
                    best = (point, right.split()[0], "ro" in fields[5].split(","))
    except (OSError, IndexError):
        return None
    return best[1:] if best else None


def check_target(option: str, path: str) -> None:
    """Refuses, before any work, a result path that could not or must not be written: empty, in
    a missing or unwritable folder (probed with an unnamed file: nothing is created), a link, a
    folder or a special file. The same rules as the harness's check_target (atomic_file.cpp)."""
    if not path:
        raise UsageError(f"{option} needs a file name, e.g. {option} report.html")
    shown = brief(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UsageError(f"{option} {shown}: folder {brief(directory)} does not exist; create it first")
    why = None
    try:
        os.close(os.open(directory, os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o600))
    except OSError as e:
        why = e.strerror
        if e.errno in (errno.EOPNOTSUPP, errno.EISDIR):  # no unnamed files here: the mount decides
            fs = _file_system_of(directory)
            if fs and fs[1]:
                why = os.strerror(errno.EROFS)
            elif fs and fs[0] in KERNEL_FILE_SYSTEMS:
                why = os.strerror(errno.EACCES)
            else:
                why = None if os.access(directory, os.W_OK | os.X_OK) else os.strerror(errno.EACCES)
    if why:
        raise UsageError(f"{option} {shown}: folder {brief(directory)} is not writable ({why}); "
                         "choose a writable folder")
    try:
        os.lstat(path)
    except FileNotFoundError:
        return  # a new file
    except OSError as e:
        raise UsageError(f"{option} {shown}: {e.strerror}; choose another name") from None
    if os.path.islink(path):
        raise UsageError(f"{option} {shown} is a symbolic link; ipclab writes no file through a link: "
                         "name the file itself")
    if os.path.isdir(path):
        raise UsageError(f"{option} {shown} names a folder; give a file name")
    if os.path.lexists(path) and not os.path.isfile(path):
        raise UsageError(f"{option} {shown} is not a regular file; choose another name")


def file_kind(mode: int) -> str:
    """What a file of st_mode `mode` is, for a message: 'a FIFO', 'a folder', 'a device', ..."""
    for test, kind in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a folder"),
                       (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISREG, "a file")):
        if test(mode):
            return kind
    return "not a regular file"


def open_regular(path: str, what: str, remedy: str, *, follow: bool = True):
    """(fd, stat) of the regular file at `path`, for reading: opened with O_NONBLOCK, so that a
    FIFO planted there is refused rather than waited on for a writer, and checked with fstat, so
    that nothing but a regular file is read (not a FIFO, a folder, a device, a socket); with
    `follow` False, O_NOFOLLOW refuses a symbolic link too, as the harness opens its own files
    (open_own_file, src/core/base/fs.cpp). FileNotFoundError propagates (the caller says what a
    missing file means); every other problem is a UsageError of one line: '`what` PATH is a FIFO,
    not a regular file; `remedy`'. The caller closes the fd."""
    shown = f"{what} {brief(path)}".strip()
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as e:
        kind = None
        if e.errno in (errno.ELOOP, errno.ENXIO, errno.EOPNOTSUPP):  # a link (O_NOFOLLOW), a socket
            try:
                kind = file_kind(os.lstat(path).st_mode)
            except OSError:
                pass
        if kind and kind != "a file":
            raise UsageError(f"{shown} is {kind}, not a regular file; {remedy}") from None
        raise UsageError(f"{shown}: cannot read ({e.strerror}); check the path and its permissions") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{shown} is {file_kind(st.st_mode)}, not a regular file; {remedy}")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_regular(path: str, what: str, remedy: str, *, follow: bool = True, limit: int | None = None,
                 over_limit: str = "") -> bytearray:
    """The bytes of the regular file at `path`, opened as open_regular opens it. `limit`: a file
    of more bytes is refused before any is read, and so is one that grows past it while read
    ('... is 1.2 GiB, over the 1 GiB the report reads; `over_limit`'): what it holds is never
    more than `limit`. FileNotFoundError propagates; any other problem is a one-line UsageError."""
    shown = f"{what} {brief(path)}".strip()
    fd, st = open_regular(path, what, remedy, follow=follow)

    def too_large(size):
        return UsageError(f"{shown} is {fmt_memory(size)}, over the {fmt_memory(limit)} the report reads; "
                          f"{over_limit or remedy}")

    with os.fdopen(fd, "rb") as f:
        if limit is not None and st.st_size > limit:
            raise too_large(st.st_size)
        data = bytearray()
        try:
            while chunk := f.read(1 << 24):
                if limit is not None and len(data) + len(chunk) > limit:
                    raise too_large(len(data) + len(chunk))
                data += chunk
        except OSError as e:
            raise UsageError(f"{shown}: cannot read ({e.strerror}); check the path and its permissions") from None
    return data


def target_identity(path: str) -> str:
    """What a result path names: the real path of its folder and its file name."""
    return os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(path))), os.path.basename(path))


def check_distinct(targets) -> None:
    """`targets`: (what, path) of each output of one command; two naming one file are refused."""
    seen = {}
    for what, path in targets:
        key = target_identity(path)
        if key in seen:
            raise UsageError(f"{seen[key]} and {what} name the same file, and one result would be lost; "
                             "give each output its own path")
        seen[key] = what


def write_atomic(path: str, data: str | bytes) -> None:
    """Write `data` to `path` via a temp file in the same directory and a rename.

    A crash at any point leaves either the old file or the complete new one, never half a file.
    """
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UsageError(f"output directory {directory} does not exist; create it or choose another -o path")
    if os.path.islink(path) or (os.path.exists(path) and not os.path.isfile(path)):
        raise UsageError(f"{path} is a link, a folder or a special file; ipclab writes no file through it: name a file")
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix="-" + os.path.basename(path), dir=directory)
    try:
        with os.fdopen(fd, mode, **({} if mode == "wb" else {"encoding": "utf-8"})) as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def fmt_time_ns(ns) -> str:
    """1234.5 -> '1.23 µs'."""
    if not is_number(ns):
        return "—"
    a = abs(ns)
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if a >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def text_table(head, body, right=()) -> list:
    """The lines of a plain-text table: `head` and each row of `body` are lists of cells, the
    columns padded to their widest cell, those whose index is in `right` aligned to the right,
    a dashed line under the head."""
    widths = [max([len(h)] + [len(row[i]) for row in body]) for i, h in enumerate(head)]

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return [line(head), line(["-" * w for w in widths])] + [line(r) for r in body]


def fmt_si(v, unit: str = "") -> str:
    """1234567 -> '1.23 M'."""
    if not is_number(v):
        return "—"
    a = abs(v)
    for scale, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= scale:
            return f"{v / scale:.3g} {prefix}{unit}"
    return f"{v:.3g}{unit if unit.startswith('/') else ' ' + unit}".rstrip()


def fmt_float(v, digits: int = 3) -> str:
    if not is_number(v):
        return "—"
    return f"{v:.{digits}g}"


def fmt_number(v) -> str:
    """A figure without a unit prefix, for tables people read: whole numbers exact with thousands
    separators ('10,000'), others to three significant digits without an exponent ('38.8', '1,203')."""
    if not is_number(v):
        return "—"
    if v == int(v) or abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def fmt_memory(v) -> str:
    """Memory sizes: 8 << 30 -> '8 GiB', 25276514304 -> '23.5 GiB'."""
    if not is_number(v):
        return "—"
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if v >= (1 << shift):
            return f"{v / (1 << shift):.3g} {unit}"
    return f"{v:g} B"


def fmt_bytes_param(v) -> str:
    """Message/block sizes: 4096 -> '4Ki', 64 -> '64'."""
    if not is_number(v) or v != int(v):
        return str(v)
    v = int(v)
    for shift, suffix in ((30, "Gi"), (20, "Mi"), (10, "Ki")):
        if v >= (1 << shift) and v % (1 << shift) == 0:
            return f"{v >> shift}{suffix}"
    return str(v)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's help with the description and epilog kept line by line (examples, tables), each
    line wrapped to the terminal's width ($COLUMNS, else the terminal, else 80), continuing two
    columns under its own indentation."""

    def _fill_text(self, text, width, indent):
        out = []
        for line in text.splitlines():
            lead = " " * (len(line) - len(line.lstrip(" ")))
            out.append(textwrap.fill(line.strip(), width, initial_indent=indent + lead,
                                     subsequent_indent=indent + lead + "  ", break_on_hyphens=False)
                       if line.strip() else "")
        return "\n".join(out)


DURATION_UNITS = (("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0))


def parse_duration(text):
    """A time as ipclab's options read it (core/plan/estimate.hpp's parse_duration): seconds, bare
    or with a unit ms, s, m or h ("0.5", "250ms", "90s", "5m"), in seconds; None when `text` is
    not one (no blanks, nan or inf)."""
    scale = 1.0
    for unit, factor in DURATION_UNITS:
        if text.endswith(unit) and len(text) > len(unit):
            text, scale = text[:-len(unit)], factor
            break
    if not text or text != text.strip() or text.lower().lstrip("+-") in ("nan", "inf", "infinity") or "_" in text:
        return None
    try:
        v = float(text)
    except ValueError:
        return None
    return v * scale if math.isfinite(v) else None

