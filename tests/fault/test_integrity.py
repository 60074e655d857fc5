"""Integrity by sequence number, as a hostile user tests it: messages stolen from, put back into and
injected into a live queue by another process, while ipclab runs. Each message's sequence number
decides its verdict: a stolen request is lost 1 (and the run fails naming it), a repeated message is
duplicated 1, a message put back behind later ones is reordered 1, a junk message is corrupt 1 — and
the stream goes on in step instead of counting every later message; received <= sent always.
A peer that keeps its own count (Go, Rust) is watched for progress like every other side.
"""
import ctypes
import ctypes.util
import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from test_stall import QUICK, assert_stopped_named, failed_line, finish, frozen_process_run, iteration

SIZE = 64
MSG_NOERROR = 0o10000


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def _deadline(seconds):
    t = time.time() + seconds  # mq_timed* take CLOCK_REALTIME absolute times
    return Timespec(int(t), int((t % 1) * 1e9))


class PosixQueue:
    """One of the run's POSIX queues, opened read-write by another process (this one)."""

    rt = None

    def __init__(self, name):
        if PosixQueue.rt is None:
            rt = ctypes.CDLL(ctypes.util.find_library("rt") or ctypes.util.find_library("c"), use_errno=True)
            rt.mq_open.restype = ctypes.c_int
            rt.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int]
            rt.mq_timedreceive.restype = ctypes.c_ssize_t
            rt.mq_timedreceive.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p,
                                           ctypes.POINTER(Timespec)]
            rt.mq_timedsend.restype = ctypes.c_int
            rt.mq_timedsend.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint,
                                        ctypes.POINTER(Timespec)]
            PosixQueue.rt = rt
        self.mqd = self.rt.mq_open(("/" + name).encode(), os.O_RDWR)
        assert self.mqd >= 0, os.strerror(ctypes.get_errno())

    def take(self, timeout=5.0):
        """Receives one message, waiting in line with the run's own receiver (a waiting receiver
        is handed the next message in the order it began to wait)."""
        buf = ctypes.create_string_buffer(1 << 16)
        n = self.rt.mq_timedreceive(self.mqd, buf, len(buf), None, ctypes.byref(_deadline(timeout)))
        assert n >= 0, os.strerror(ctypes.get_errno())
        return buf.raw[:n]

    def put(self, data, timeout=5.0):
        rc = self.rt.mq_timedsend(self.mqd, data, len(data), 0, ctypes.byref(_deadline(timeout)))
        assert rc == 0, os.strerror(ctypes.get_errno())

    def close(self):
        self.rt.mq_close(self.mqd)


def posix_queues(pid, count, timeout=10):
    """The POSIX queues of the run of ipclab `pid` in the order it created them (names
    /ipclab.<pid>.<tag>.<counter>.<kind>), once `count` exist; found through an mqueue filesystem
    mounted at a private folder."""
    mnt = Path(tempfile.mkdtemp(prefix="ipclab-mq-"))
    if subprocess.run(["mount", "-t", "mqueue", "none", str(mnt)], capture_output=True).returncode != 0:
        mnt.rmdir()
        pytest.skip("cannot mount an mqueue filesystem here (needs root)")
    try:
        deadline = time.monotonic() + timeout
        names = []
        while len(names) < count and time.monotonic() < deadline:
            names = [n for n in os.listdir(mnt) if n.startswith(f"ipclab.{pid}.") and n.endswith(".mq")]
            time.sleep(0.01)
        assert len(names) >= count, f"the run's POSIX queues did not appear: {names}"
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
        mnt.rmdir()
    names.sort(key=lambda n: int(n.split(".")[-2]))
    return [PosixQueue(n) for n in names]


class SysvQueue:
    """One of the run's SysV message queues (msgsnd/msgrcv with mtype 1, as the run uses)."""

    libc = None

    def __init__(self, msqid):
        if SysvQueue.libc is None:
            libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
            libc.msgrcv.restype = ctypes.c_ssize_t
            libc.msgrcv.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_long, ctypes.c_int]
            libc.msgsnd.restype = ctypes.c_int
            libc.msgsnd.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            SysvQueue.libc = libc
        self.msqid = msqid

    def take(self, timeout=None):
        buf = ctypes.create_string_buffer(8 + (1 << 16))
        n = self.libc.msgrcv(self.msqid, buf, len(buf) - 8, 0, MSG_NOERROR)
        assert n >= 0, os.strerror(ctypes.get_errno())
        return buf.raw[8:8 + n]

    def put(self, data, timeout=None):
        buf = ctypes.create_string_buffer((1).to_bytes(8, "little") + data)
        assert self.libc.msgsnd(self.msqid, buf, len(data), 0) == 0, os.strerror(ctypes.get_errno())

    def close(self):
        pass


def sysv_queues(pid, count, timeout=10):
    """The SysV queues of the run of ipclab `pid` (ipclab's key tag 0x1C, last sent to or received
    from by that process) in creation order (their ids), once `count` carry traffic."""
    deadline = time.monotonic() + timeout
    ids = []
    while len(ids) < count and time.monotonic() < deadline:
        with open("/proc/sysvipc/msg") as f:
            next(f)
            rows = [l.split() for l in f]
        # key msqid perms cbytes qnum lspid lrpid ...
        ids = sorted(int(r[1]) for r in rows
                     if (int(r[0]) >> 24) & 0xFF == 0x1C and pid in (int(r[5]), int(r[6])))
        time.sleep(0.01)
    assert len(ids) >= count, f"the run's SysV queues did not appear: {ids}"
    return [SysvQueue(i) for i in ids]


class Fifo:
    """One of the run's named pipes, opened read-write (so opening never blocks)."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_RDWR)

    def take(self, timeout=None):
        return os.read(self.fd, SIZE)  # a write of SIZE <= PIPE_BUF bytes is one whole message

    def put(self, data, timeout=None):
        assert os.write(self.fd, data) == len(data)

    def close(self):
        os.close(self.fd)


def fifos(lab, count, timeout=10):
    deadline = time.monotonic() + timeout
    found = []
    while len(found) < count and time.monotonic() < deadline:
        found = [p for p in lab.tmpdir.rglob("ipclab.*.fifo")]
        time.sleep(0.01)
    assert len(found) >= count, f"the run's FIFOs did not appear: {found}"
    found.sort(key=lambda p: int(p.name.split(".")[-2]))
    return [Fifo(p) for p in found]


def queues(lab, pid, mech, count):
    if mech == "messaging/posix_mq":
        return posix_queues(pid, count)
    if mech == "messaging/sysv_mq":
        return sysv_queues(pid, count)
    return fifos(lab, count)


def meddled_run(lab, mech, pattern, meddle, *, window=1.0, delay=0.3):
    """Runs `mech` with `pattern` for `window` s; `delay` s after its queues appear, calls
    `meddle(queues)` (requests first in a round trip). Returns (rc, stderr, the integrity record)."""
    out = lab.work / "r.json"
    proc = lab.start("run", mech, "-p", f"pattern={pattern}", "-p", f"size={SIZE}", *QUICK,
                     "--duration", str(window), "--json", out)
    try:
        qs = queues(lab, proc.pid, mech, 2 if pattern == "roundtrip" else 1)
        time.sleep(delay)
        try:
            meddle(qs)
        finally:
            for q in qs:
                q.close()
        rc, _, err = finish(proc)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    rec = iteration(out)
    i = rec["integrity"]
    assert i["received"] <= i["sent"], i
    assert rec["status"] == ("failed" if rc else "ok"), rec
    return rc, err, i


ROUNDTRIP_QUEUES = ["messaging/posix_mq", "messaging/sysv_mq", "messaging/fifo"]


@pytest.mark.parametrize("mech", ROUNDTRIP_QUEUES)
def test_a_stolen_request_is_one_lost_and_fails_the_run_naming_it(lab, mech):
    stolen = []
    rc, err, i = meddled_run(lab, mech, "roundtrip", lambda qs: stolen.append(qs[0].take()))
    assert len(stolen[0]) == SIZE
    assert rc == 1, err
    line = failed_line(err)
    # The client waits for an echo that never comes: a stall, and the request named as lost.
    assert "stalled" in line and "1 lost" in line, line
    assert re.search(r"request \d+ of client 0 unanswered", line), line
    assert i["lost"] == 1 and i["duplicated"] == 0 and i["corrupt"] == 0, i
    assert i["sent"] - i["received"] == 1, i


JUNK = bytes([0xFE]) + bytes(range(1, SIZE))  # no message of any run, nor a stop marker


def put_back_six(qs):
    """Takes one message and puts it back six times: the message, and five copies."""
    m = qs[0].take()
    for _ in range(6):
        qs[0].put(m)


def inject_three(qs):
    for _ in range(3):
        qs[0].put(JUNK)


@pytest.mark.parametrize("mech,pattern", [(m, "roundtrip") for m in ROUNDTRIP_QUEUES] +
                         [(m, "throughput") for m in ("messaging/posix_mq", "messaging/sysv_mq")])
@pytest.mark.parametrize("meddle", [put_back_six, inject_three])
def test_each_meddled_message_counts_once_and_the_stream_goes_on(lab, mech, pattern, meddle):
    rc, err, i = meddled_run(lab, mech, pattern, meddle)
    assert rc == 1, err
    line = failed_line(err)
    if meddle is put_back_six:
        # Five repeats. In throughput the message put back usually arrives after later ones (a late
        # first arrival: reordered), unless the queue was empty when it was taken.
        assert re.search(r"integrity: 0 lost, 5 duplicated, [01] reordered, 0 corrupt", line), line
        assert i["duplicated"] == 5 and i["corrupt"] == 0, i
        assert i["reordered"] == 0 if pattern == "roundtrip" else i["reordered"] <= 1, i
    else:
        assert "integrity: 0 lost, 0 duplicated, 0 reordered, 3 corrupt" in line, line
        assert i["corrupt"] == 3 and i["duplicated"] == 0, i
    assert i["lost"] == 0 and i["received"] == i["sent"], i


# ---- peers that keep their own count ------------------------------------------------------------

BUILD = Path(os.environ.get("IPCLAB_BIN", "")).parent


@pytest.mark.parametrize("mech,peer", [("runtime/switch_go", "peers/go/runtime-peer"),
                                       ("runtime/switch_tokio_ct", "cargo/release/ipclab-peer-tokio")])
def test_a_frozen_runtime_peer_fails_the_run_naming_it(lab, mech, peer):
    # A count-based peer times its own n operations and prints one record at the end: frozen for
    # 2.5 s of its run, it used to end "ok" with a slower figure. Its time on CPU stands still.
    if not (BUILD / peer).exists():
        pytest.skip(f"{peer} is not built")
    rc, err, pid, wall = frozen_process_run(
        lab, [mech, "-p", f"n={1 << 30}"], child=0, hold=2.5, delay=0.3, window=3,
        comm=Path(peer).name[:15])
    assert_stopped_named(rc, err, "peer", pid, wall, 3)
