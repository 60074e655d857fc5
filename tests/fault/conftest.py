"""Fault-injection tests: ipclab run end to end as a hostile user would run it (planted names,
signals, frozen peers, concurrent runs, bad input). Each test gets a private TMPDIR and working
folder, so that what a run creates — and what it leaves — can be listed exactly.

Run by ctest (`fault.*`) with the binary in IPCLAB_BIN; by hand:
    IPCLAB_BIN=build/release/ipclab python3 -m pytest -q tests/fault
"""
import os
import subprocess
from pathlib import Path

import pytest

BINARY = os.environ.get("IPCLAB_BIN", "")


def kernel_list(text):
    """The kernel's list format ("0-3,8"), as sysfs and /proc write it."""
    out = []
    for part in text.strip().split(","):
        if part:
            lo, _, hi = part.partition("-")
            out += range(int(lo), int(hi or lo) + 1)
    return out


def usable_nodes():
    """NUMA nodes this process may put memory on: those with memory (node/has_memory) that its
    cpuset allows (Mems_allowed_list); one, node 0, on a kernel without NUMA."""
    try:
        memory = kernel_list(open("/sys/devices/system/node/has_memory").read())
    except OSError:
        return [0]
    allowed = memory
    for line in open("/proc/self/status"):
        if line.startswith("Mems_allowed_list:"):
            allowed = kernel_list(line.split(":", 1)[1])
    return [n for n in memory if n in allowed]


def ipc_objects():
    """Every ipclab-named kernel object visible here: /dev/shm (segments, sem.*), /dev/mqueue
    when mounted, and SysV message queues whose key carries ipclab's tag."""
    found = set()
    for d in ("/dev/shm", "/dev/mqueue"):
        try:
            for n in os.listdir(d):
                if n.startswith("ipclab.") or n.startswith("sem.ipclab."):
                    found.add(f"{d}/{n}")
        except OSError:
            pass
    try:
        with open("/proc/sysvipc/msg") as f:
            next(f)
            for line in f:
                key = int(line.split()[0])
                if (key >> 24) & 0xFF == 0x1C:
                    found.add(f"sysv-msg:{key:#x}")
    except OSError:
        pass
    return found


class Lab:
    """One sandbox: `tmpdir` is the TMPDIR ipclab sees, `work` the working folder, `root`/state its
    XDG_STATE_HOME (where a run keeps its cost model)."""

    def __init__(self, root: Path):
        self.root = root
        self.tmpdir = root / "tmp"
        self.work = root / "work"
        self.tmpdir.mkdir(mode=0o700)
        self.work.mkdir()

    def env(self, **extra):
        e = dict(os.environ)
        e["TMPDIR"] = str(self.tmpdir)
        e["XDG_STATE_HOME"] = str(self.root / "state")  # the cost model (core/plan/estimate.hpp), not made yet
        e.pop("IPCLAB_FAULT", None)
        e.update({k: v for k, v in extra.items() if v is not None})
        return e

    def run(self, *args, env=None, timeout=120, **kw):
        """Runs ipclab to completion; returns the CompletedProcess (text mode)."""
        return subprocess.run([BINARY, *map(str, args)], cwd=self.work, env=self.env(**(env or {})),
                              capture_output=True, text=True, timeout=timeout, **kw)

    def start(self, *args, env=None, **kw):
        """Starts ipclab in its own process group; the caller signals and waits."""
        return subprocess.Popen([BINARY, *map(str, args)], cwd=self.work, env=self.env(**(env or {})),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True, **kw)

    def leftovers(self):
        """What ipclab left in this sandbox's TMPDIR (its state folder included)."""
        return sorted(str(p.relative_to(self.tmpdir)) for p in self.tmpdir.rglob("*"))


@pytest.fixture
def lab(tmp_path):
    if not BINARY or not os.access(BINARY, os.X_OK):
        pytest.skip("IPCLAB_BIN does not name the ipclab binary")
    before = ipc_objects()
    yield Lab(tmp_path)
    # No test may leave a kernel object behind (whatever it planted itself is its own to remove).
    left = ipc_objects() - before
    assert not left, f"kernel objects left behind: {sorted(left)}"
