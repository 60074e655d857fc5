"""Small shared helpers: the usage error, atomic writes, number formatting."""

from __future__ import annotations

import math
import os
import tempfile


class UsageError(Exception):
    """A problem the user fixes by changing the command line or the input: one line, exit 2."""


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
