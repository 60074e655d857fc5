"""Frozen peers and integrity counts: every suite that has peers fails a run whose side stops making
progress, within the window plus a few seconds, with one FAILED line naming the stalled side (the
stopped one, not the peer that waits on it), and leaves nothing behind. Processes are frozen with
SIGSTOP; thread-based runs, where SIGSTOP cannot stop one side alone, with IPCLAB_FAULT=stall.

The stall limit is max(--duration/4, 1 s) (docs/methodology.md): with the windows used here, 1 s.
"""
import ctypes
import ctypes.util
import json
import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

QUICK = ["--warmup", "0", "--repetitions", "1"]


# ---- helpers ---------------------------------------------------------------------------------

def children(pid, comm=None):
    """Live direct children of `pid` (from /proc/<pid>/task/*/children), in pid order; only those
    whose command name is `comm` when given (the harness also runs short-lived helpers)."""
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(c) for c in (task / "children").read_text().split()}
        except OSError:
            pass
    if comm is not None:
        def name(c):
            try:
                return Path(f"/proc/{c}/comm").read_text().strip()
            except OSError:
                return None
        found = {c for c in found if name(c) == comm}
    return sorted(found)


def age_s(pid):
    """How long process `pid` has lived (from /proc: its start time against the uptime); 0 once gone."""
    try:
        start_ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0
    return uptime - start_ticks / os.sysconf("SC_CLK_TCK")


def wait_children(pid, count, comm, timeout=15.0, settled=0.1):
    """Waits until `pid` has at least `count` children named `comm` that have lived `settled` s;
    returns them (in pid order). A command the harness runs through a shell bears its name for the
    moment between its fork and its exec: on a loaded machine long enough to be taken for a worker."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = [k for k in children(pid, comm) if age_s(k) >= settled]
        if len(kids) >= count:
            return kids
        time.sleep(0.01)
    pytest.fail(f"ipclab (pid {pid}) did not start {count} {comm} process(es) within {timeout} s")


def freeze(pid, hold, run):
    """SIGSTOPs `pid` for `hold` seconds, or until ipclab's process `run` (a Popen) has ended when
    that comes first, then SIGCONTs it (it may have been killed meanwhile)."""
    os.kill(pid, signal.SIGSTOP)
    try:
        run.wait(timeout=hold)
    except subprocess.TimeoutExpired:
        pass
    finally:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


def finish(proc, timeout=30):
    """Waits for a started ipclab; returns (rc, stdout, stderr)."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"ipclab did not end within {timeout} s: {err}")
    return proc.returncode, out, err


def failed_line(err):
    lines = [l for l in err.splitlines() if l.startswith("FAILED ")]
    assert len(lines) == 1, f"expected one FAILED line, got: {err!r}"
    return lines[0]


def named(line):
    """What a stall line names: its reason (after the benchmark's name), up to the rule."""
    return line.split("): ", 1)[1].split("(stall limit")[0]


def iteration(path):
    """The one iteration record of a --json result file."""
    doc = json.loads(Path(path).read_text())
    its = [b for b in doc["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
    assert len(its) == 1, its
    return its[0]


def frozen_process_run(lab, args, *, child, hold, window, delay=0.3, count=None, comm="ipclab"):
    """Starts ipclab with `args`; `delay` s after its `count` (default child + 1) children named
    `comm` appear, freezes child number `child` (in pid order) for `hold` s, or until the run has
    failed on it. Returns (rc, stderr, the frozen pid, wall seconds)."""
    t0 = time.monotonic()
    proc = lab.start("run", *args, *QUICK, "--duration", str(window))
    try:
        wait_children(proc.pid, count or child + 1, comm)
        time.sleep(delay)
        victim = wait_children(proc.pid, count or child + 1, comm)[child]
        freeze(victim, hold, proc)
        rc, _, err = finish(proc)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return rc, err, victim, time.monotonic() - t0


def assert_stopped_named(rc, err, role, pid, wall, window):
    assert rc == 1, err
    line = failed_line(err)
    assert re.search(rf"{role} \d+ \(pid {pid}\) is stopped \(state [Tt]\)", line), line
    # The watchdog, not the old join timeout (10 s + 3 x window), ended the run.
    assert wall < window + 4, f"took {wall:.1f} s: {line}"


# ---- frozen peers: processes (SIGSTOP) ----------------------------------------------------------

def test_pipe_processes_frozen_consumer(lab):
    rc, err, pid, wall = frozen_process_run(
        lab, ["messaging/pipe", "-p", "mode=processes", "-p", "pattern=throughput", "-p", "size=64"],
        child=1, hold=2.5, window=3)
    assert_stopped_named(rc, err, "consumer", pid, wall, 3)


@pytest.mark.parametrize("mech", ["pingpong/process", "pingpong/go"])
def test_pingpong_frozen_guest(lab, mech):
    if mech == "pingpong/go" and not Path(os.environ.get("IPCLAB_BIN", "")).parent.joinpath(
            "peers/go/pingpong-guest").exists():
        pytest.skip("the Go guest is not built")
    rc, err, pid, wall = frozen_process_run(
        lab, [mech, "-p", "round_trips=1000000000000"], child=0, hold=2.5, delay=0.5, window=3,
        comm="ipclab" if mech == "pingpong/process" else "pingpong-guest")
    assert_stopped_named(rc, err, "guest", pid, wall, 3)


def test_echo_epoll_frozen_server(lab):
    # The hostile tester's case: the server stopped for 3.7 s of a 4 s window (the client's own
    # 5 s stall detection let it pass as ok).
    rc, err, pid, wall = frozen_process_run(lab, ["echo/epoll", "-p", "connections=4"], child=0, hold=3.7,
                                            delay=0.2, window=4)
    assert_stopped_named(rc, err, "server", pid, wall, 4)


def test_servers_frozen_server(lab):
    # One wave of 3000 sessions on the one-thread blocking model takes long enough to freeze the
    # server mid-wave; the connects complete in the kernel, the replies stop.
    rc, err, pid, wall = frozen_process_run(
        lab, ["servers/blocking_1th", "-p", "concurrency=3000"], child=0, hold=2.5, delay=0.15, window=2)
    assert_stopped_named(rc, err, "server", pid, wall, 2)


def test_servers_rate_frozen_server(lab):
    # Open loop: new sessions keep arriving and connecting (the kernel completes them into the
    # backlog) while the server is stopped; only its replies count as its progress.
    rc, err, pid, wall = frozen_process_run(
        lab, ["servers/epoll_et", "-p", "pattern=rate", "-p", "rate=1k"], child=0, hold=2.5, delay=0.15, window=2)
    assert_stopped_named(rc, err, "server", pid, wall, 2)


def test_fileio_frozen_worker(lab):
    data = lab.root / "data"
    data.mkdir()
    rc, err, pid, wall = frozen_process_run(
        lab, ["fileio/psync", "-p", f"dir={data}", "-p", "file_size=16M", "-p", "pattern=rand", "-p", "qd=2"],
        child=0, hold=2.5, window=3)
    assert_stopped_named(rc, err, "worker", pid, wall, 3)


# ---- frozen peers: threads (IPCLAB_FAULT=stall) ---------------------------------------------------

def test_pipe_threads_stalled_consumer(lab):
    t0 = time.monotonic()
    r = lab.run("run", "messaging/pipe", "-p", "pattern=throughput", "-p", "size=64", *QUICK, "--duration", "4",
                env={"IPCLAB_FAULT": "stall:pipe:consumer:3000"})
    wall = time.monotonic() - t0
    assert r.returncode == 1, r.stderr
    line = failed_line(r.stderr)
    # The consumer spins (state R) while the producer waits on the full pipe: the consumer is named.
    assert re.search(r"stalled: consumer 0 \(thread \d+\) made no progress", line), line
    assert "producer" not in named(line), line
    assert wall < 4 + 4, f"took {wall:.1f} s"


def test_pipe_threads_stalled_client_in_roundtrip(lab):
    r = lab.run("run", "messaging/pipe", "-p", "pattern=roundtrip", "-p", "size=64", *QUICK, "--duration", "4",
                env={"IPCLAB_FAULT": "stall:messaging/pipe:client:3000"})
    assert r.returncode == 1, r.stderr
    line = failed_line(r.stderr)
    assert re.search(r"stalled: client 0 \(thread \d+\) made no progress", line), line
    assert "server" not in named(line), line


# ---- messages stolen from a live queue ---------------------------------------------------------

def _libc():
    lib = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    return lib


def _steal_posix(lab, count):
    """Mounts an mqueue filesystem at a private folder to find the run's queue, then receives
    `count` messages from it. Returns how many were taken."""
    mnt = Path(tempfile.mkdtemp(prefix="ipclab-mq-"))
    if subprocess.run(["mount", "-t", "mqueue", "none", str(mnt)], capture_output=True).returncode != 0:
        mnt.rmdir()
        pytest.skip("cannot mount an mqueue filesystem here (needs root)")
    try:
        deadline = time.monotonic() + 10
        names = []
        while not names and time.monotonic() < deadline:
            names = [n for n in os.listdir(mnt) if n.startswith("ipclab.")]
            time.sleep(0.01)
        assert names, "the run's POSIX queue did not appear"
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
        mnt.rmdir()
    rt = ctypes.CDLL(ctypes.util.find_library("rt") or ctypes.util.find_library("c"), use_errno=True)
    rt.mq_open.restype = ctypes.c_int
    rt.mq_open.argtypes = [ctypes.c_char_p, ctypes.c_int]
    rt.mq_receive.restype = ctypes.c_ssize_t
    rt.mq_receive.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p]
    mqd = rt.mq_open(("/" + names[0]).encode(), os.O_RDONLY | os.O_NONBLOCK)
    assert mqd >= 0, os.strerror(ctypes.get_errno())
    buf = ctypes.create_string_buffer(1 << 20)
    taken = 0
    try:
        while taken < count and time.monotonic() < deadline:
            if rt.mq_receive(mqd, buf, len(buf), None) >= 0:
                taken += 1
    finally:
        rt.mq_close(mqd)
    return taken


def _steal_sysv(lab, count):
    deadline = time.monotonic() + 10
    msqid = None
    while msqid is None and time.monotonic() < deadline:
        with open("/proc/sysvipc/msg") as f:
            next(f)
            for line in f:
                key, qid = int(line.split()[0]), int(line.split()[1])
                if (key >> 24) & 0xFF == 0x1C:
                    msqid = qid
        time.sleep(0.01)
    assert msqid is not None, "the run's SysV queue did not appear"
    libc = _libc()
    libc.msgrcv.restype = ctypes.c_ssize_t
    libc.msgrcv.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_long, ctypes.c_int]
    buf = ctypes.create_string_buffer(1 << 16)
    IPC_NOWAIT, MSG_NOERROR = 0o4000, 0o10000
    taken = 0
    while taken < count and time.monotonic() < deadline:
        if libc.msgrcv(msqid, buf, len(buf) - 8, 0, IPC_NOWAIT | MSG_NOERROR) >= 0:
            taken += 1
    return taken


@pytest.mark.parametrize("mech,steal", [("messaging/posix_mq", _steal_posix), ("messaging/sysv_mq", _steal_sysv)])
def test_stolen_messages_are_lost(lab, mech, steal):
    out = lab.work / "r.json"
    t0 = time.monotonic()
    proc = lab.start("run", mech, "-p", "pattern=throughput", "-p", "size=64", *QUICK, "--duration", "2",
                     "--json", out)
    time.sleep(0.4)
    taken = steal(lab, 20)
    rc, _, err = finish(proc)
    wall = time.monotonic() - t0
    assert taken == 20
    assert rc == 1, err
    line = failed_line(err)
    # The consumer waits for 20 messages no one will deliver: a stall (not the old ~11 s join
    # timeout), and the 20 counted as lost.
    assert re.search(r"stalled: consumer 0 .*made no progress", line), line
    assert wall < 2 + 4, f"took {wall:.1f} s"
    rec = iteration(out)
    i = rec["integrity"]
    assert rec["status"] == "failed"
    assert i["lost"] == 20, i
    assert i["sent"] - i["received"] - i["corrupt"] == 20, i
    assert i["duplicated"] == 0 and i["corrupt"] == 0, i


# ---- integrity counts -----------------------------------------------------------------------------

@pytest.mark.parametrize("pattern", ["throughput", "roundtrip"])
def test_corrupt_counted_once_per_flipped_message(lab, pattern):
    out = lab.work / "r.json"
    r = lab.run("run", "messaging/pipe", "-p", f"pattern={pattern}", "-p", "size=64", *QUICK, "--duration", "0.3",
                "--json", out, env={"IPCLAB_FAULT": "corrupt:50"})
    assert r.returncode == 1, r.stderr
    assert "corrupt" in failed_line(r.stderr)
    i = iteration(out)["integrity"]
    # The receiver flips every 50th data message it gets; every sent message reached it.
    assert i["sent"] > 1000, i
    assert i["corrupt"] == i["sent"] // 50, i
    assert i["lost"] == 0 and i["duplicated"] == 0, i
    if pattern == "throughput":
        assert i["received"] == i["sent"] - i["corrupt"], i


def test_clean_run_counts_nothing_missing(lab):
    out = lab.work / "r.json"
    r = lab.run("run", "messaging/pipe", "-p", "pattern=throughput", "-p", "size=64", *QUICK, "--duration", "0.3",
                "--json", out)
    assert r.returncode == 0, r.stderr
    i = iteration(out)["integrity"]
    assert i["sent"] > 0 and i["received"] == i["sent"], i
    assert i["lost"] == i["corrupt"] == i["duplicated"] == 0, i


@pytest.mark.parametrize("spec", ["corrupt:x", "corrupt:0", "stall:pipe:nobody:100", "stall:pipe:consumer",
                                  "slow:pipe", "ramp:pipe", "ramp:pipe:0", "bogus"])
def test_malformed_fault_spec_is_a_usage_error(lab, spec):
    r = lab.run("run", "harness/null", *QUICK, "--duration", "0.01", env={"IPCLAB_FAULT": spec})
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert spec in lines[0] and "corrupt:N" in lines[0] and "stall:MECH:ROLE:MS" in lines[0], lines[0]
    assert r.stdout == ""
