"""Names and folders ipclab shares with the rest of the machine: iceoryx's fixed names (used only
under the machine-wide lock, in any PID namespace, and swept after a run killed outright), files in
folders others can write to (a FIFO planted at the fileio test file's name), a -p dir on a kernel
file system, and a TMPDIR too long for a Unix socket's path or holding XML's special characters."""
import fcntl
import grp
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import BINARY

UID = os.geteuid()
QUICK = ["--duration", "0.05", "--warmup", "0", "--repetitions", "1"]
SHORT = ["--duration", "0.3", "--warmup", "0.05", "--repetitions", "1", "-p", "placement=unpinned"]
ROUDI = "/usr/bin/iox-roudi"
LOCK = "/tmp/ipclab-shared.iceoryx.lock"
FIXED = ["/tmp/roudi", "/tmp/roudi.lock", "/tmp/iox-unique-roudi.lock", "/dev/shm/iceoryx_mgmt",
         "/dev/shm/" + grp.getgrgid(os.getegid()).gr_name]
TEST_FILE = "ipclab-fileio-v1-1048576.dat"  # fileio's test file of -p file_size=1M


def usage_error(p):
    lines = [line for line in p.stderr.splitlines() if not line.startswith("warning: ")]
    assert p.returncode == 2, p.stderr
    assert len(lines) == 1 and lines[0].startswith("ipclab: "), p.stderr
    return lines[0]


def state(tmpdir):
    return Path(tmpdir) / f"ipclab-{UID}"


def state_is_empty(tmpdir):
    s = state(tmpdir)
    return not s.exists() or list(s.iterdir()) == []


# ---- iceoryx: machine-wide names under the machine-wide lock ----

def roudis():
    """Live RouDi processes (a zombie that its new parent has not reaped yet is gone already)."""
    out = subprocess.run(["pgrep", "-x", "iox-roudi"], capture_output=True, text=True).stdout
    live = []
    for pid in map(int, out.split()):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    live.append(pid)
        except (OSError, IndexError):
            pass
    return live


def iceoryx_left():
    return [p for p in FIXED + [LOCK] if os.path.lexists(p)] + \
           [f"/tmp/{n}" for n in os.listdir("/tmp") if n.startswith("iox.ipclab.")]


@pytest.fixture
def iceoryx(lab):
    if not os.access(ROUDI, os.X_OK):
        pytest.skip("iceoryx's RouDi (package iceoryx) is not installed")
    if roudis() or iceoryx_left():
        pytest.skip(f"another RouDi or its names are here ({roudis()}, {iceoryx_left()})")
    yield lab
    deadline = time.monotonic() + 5
    while roudis() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert roudis() == [], "a RouDi was left running"
    assert iceoryx_left() == []


def records(path):
    return [b for b in json.loads(Path(path).read_text())["benchmarks"] if b["run_type"] == "iteration"]


def private_tmpdir(root, name):
    d = Path(root) / name
    d.mkdir(mode=0o700)
    return d


def test_concurrent_iceoryx_runs_in_separate_pid_namespaces_never_race(iceoryx, tmp_path):
    probe = subprocess.run(["unshare", "-p", "-f", "--mount-proc", "true"], capture_output=True, text=True)
    if UID != 0 or probe.returncode != 0:
        pytest.skip(f"needs root and PID namespaces (unshare -p: {probe.stderr.strip() or 'not root'})")
    runs = []
    for i in range(2):  # each with a TMPDIR of its own: the lock is the machine's, not TMPDIR's
        tmp = private_tmpdir(tmp_path, f"t{i}")
        out = tmp_path / f"r{i}.json"
        cmd = ["unshare", "-p", "-f", "--mount-proc", BINARY, "run", "libs/iceoryx", "-p", "size=64",
               "-p", "pattern=roundtrip", *SHORT, "--json", str(out)]
        env = dict(os.environ, TMPDIR=str(tmp))
        env.pop("IPCLAB_FAULT", None)
        runs.append((tmp, out, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                                env=env)))
    results = []
    for tmp, out, p in runs:
        try:
            stdout, stderr = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        results.append((tmp, out, p.returncode, stdout + stderr))
    statuses = []
    for tmp, out, rc, text in results:
        assert rc == 0, text  # neither RouDi aborted, neither side died of a removed segment
        assert "SIGSEGV" not in text and "died of signal" not in text, text
        [b] = records(out)
        statuses.append(b["status"])
        if b["status"] == "skipped":  # it waited its bounded time for the other run, then said so
            assert "in use by ipclab run" in b["error"] and LOCK in b["error"], b["error"]
        else:
            assert b["status"] == "ok", b["error"]
            assert b["ops"] > 0 and b["integrity"]["lost"] == b["integrity"]["corrupt"] == 0
        assert state_is_empty(tmp)
    assert "ok" in statuses, statuses


def test_a_run_waits_a_bounded_time_for_the_lock_then_skips_naming_its_holder(iceoryx, tmp_path):
    fd = os.open(LOCK, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, b"ipclab run 4242.feedf00d (uid 0)\n")
        fcntl.flock(fd, fcntl.LOCK_EX)
        out = tmp_path / "r.json"
        t0 = time.monotonic()
        r = iceoryx.run("run", "libs/iceoryx", "-p", "size=64", "-p", "pattern=roundtrip", *SHORT,
                        "--json", out, timeout=60)
        waited = time.monotonic() - t0
        assert r.returncode == 0, r.stderr
        [b] = records(out)
        assert b["status"] == "skipped"
        assert "in use by ipclab run 4242.feedf00d" in b["error"], b["error"]
        assert 9 < waited < 40
        assert roudis() == [] and [p for p in FIXED if os.path.lexists(p)] == []
        assert os.fstat(fd).st_ino == os.stat(LOCK).st_ino  # the holder's file is left as it is
    finally:
        os.unlink(LOCK)
        os.close(fd)
    assert state_is_empty(iceoryx.tmpdir)


def test_a_fifo_planted_at_the_lock_skips_without_blocking_and_stays(iceoryx, tmp_path):
    os.mkfifo(LOCK, 0o600)
    try:
        out = tmp_path / "r.json"
        r = iceoryx.run("run", "libs/iceoryx", "-p", "size=64", "-p", "pattern=roundtrip", *SHORT,
                        "--json", out, timeout=60)
        assert r.returncode == 0, r.stderr
        [b] = records(out)
        assert b["status"] == "skipped"
        assert LOCK in b["error"] and "not a lock file of yours" in b["error"], b["error"]
        assert os.path.exists(LOCK) and Path(LOCK).is_fifo()
        assert roudis() == []
    finally:
        os.unlink(LOCK)
    assert state_is_empty(iceoryx.tmpdir)


@pytest.mark.parametrize("target", ["ipclab", "group"])
def test_kill_9_of_ipclab_takes_its_roudi_and_the_next_run_sweeps_the_names(iceoryx, tmp_path, target):
    p = iceoryx.start("run", "libs/iceoryx", "-p", "size=64", "-p", "pattern=roundtrip", "--duration", "30",
                      "--warmup", "0.05", "--repetitions", "1", "-p", "placement=unpinned")
    try:
        deadline = time.monotonic() + 20
        while not (roudis() and os.path.exists("/dev/shm/iceoryx_mgmt")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert roudis(), "RouDi did not start"
        time.sleep(1.0)  # inside the measured window
        if target == "ipclab":
            os.kill(p.pid, signal.SIGKILL)  # ipclab alone: RouDi must die with it (PR_SET_PDEATHSIG)
        else:
            os.killpg(p.pid, signal.SIGKILL)  # its process group, RouDi included
    finally:
        if p.poll() is None:
            p.kill()
        p.communicate()
    deadline = time.monotonic() + 5
    while roudis() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert roudis() == [], "RouDi outlived the ipclab that started it"
    assert os.path.exists("/dev/shm/iceoryx_mgmt")  # killed with it, RouDi removed nothing
    # The next run (another TMPDIR's state folder is not this user's run: use the same TMPDIR)
    # sweeps the dead run's names under the lock, then runs.
    out = tmp_path / "r.json"
    r = iceoryx.run("run", "libs/iceoryx", "-p", "size=64", "-p", "pattern=roundtrip", *SHORT, "--json", out,
                    timeout=120)
    assert r.returncode == 0, r.stderr
    assert "removed what run" in r.stderr and "/iceoryx_mgmt" in r.stderr and LOCK in r.stderr, r.stderr
    [b] = records(out)
    assert b["status"] == "ok", b["error"]
    assert state_is_empty(iceoryx.tmpdir)


# ---- fileio: the test file's name and folder ----

def test_a_fifo_planted_at_the_fileio_test_file_fails_the_run_at_once_naming_it(lab, tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    fifo = d / TEST_FILE
    os.mkfifo(fifo, 0o666)
    t0 = time.monotonic()
    r = lab.run("run", "fileio/psync", "-p", f"dir={d}", "-p", "file_size=1M", "-p", "qd=1", "-p", "pattern=seq",
                *QUICK, timeout=60)  # a hang shows as a TimeoutExpired here
    assert time.monotonic() - t0 < 30
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"{fifo} is not a test file of yours (a FIFO of uid {UID})" in r.stdout + r.stderr
    assert fifo.is_fifo() and sorted(os.listdir(d)) == [TEST_FILE]  # left alone, nothing written beside it
    assert state_is_empty(lab.tmpdir)


@pytest.mark.parametrize("folder,fs", [("/dev", "devtmpfs"), ("/proc", "proc"), ("/sys", "sysfs")])
def test_a_dir_on_a_kernel_file_system_is_refused_before_anything_is_written(lab, folder, fs):
    if not os.path.isdir(folder):
        pytest.skip(f"{folder} is not mounted here")
    before = set(os.listdir(folder)) if folder == "/dev" else None
    r = lab.run("run", "fileio/psync", "-p", f"dir={folder}", "-p", "file_size=1M", *QUICK)
    line = usage_error(r)
    assert f"-p dir={folder} is on" in line, line
    assert not os.path.lexists(f"{folder}/{TEST_FILE}")
    if before is not None:
        assert not [n for n in set(os.listdir(folder)) - before if "ipclab" in n]
    assert lab.leftovers() == []  # not even a state folder: refused before the run began


def test_a_default_fileio_folder_that_is_a_link_is_refused_with_exit_2(lab, tmp_path):
    # /var/tmp of a mount namespace of this test's own: the machine's real folder is untouched.
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True)
    if UID != 0 or probe.returncode != 0:
        pytest.skip(f"needs root and a mount namespace (unshare -m: {probe.stderr.strip() or 'not root'})")
    victim = tmp_path / "victim"
    victim.mkdir()
    script = ('mount -t tmpfs tmpfs /var/tmp && ln -s "$1" /var/tmp/ipclab-fileio && '
              '"$0" run fileio/psync -p file_size=1M -p qd=1 --duration 0.05 --warmup 0 --repetitions 1')
    r = subprocess.run(["unshare", "-m", "sh", "-c", script, BINARY, str(victim)], capture_output=True, text=True,
                       timeout=60, cwd=lab.work, env=lab.env())
    line = usage_error(r)
    assert "/var/tmp/ipclab-fileio is not a folder of yours" in line, line
    assert list(victim.iterdir()) == []
    assert lab.leftovers() == []


# ---- TMPDIR: Unix socket paths, and the D-Bus configuration ----

def long_tmpdir(root):
    d = Path(root)
    while len(str(d)) < 95:
        d = d / "deeper-and-deeper"
    d.mkdir(parents=True, mode=0o700)
    return d


@pytest.mark.parametrize("mech,args", [("libs/zmq", []), ("libs/zmq", ["-p", "endpoint=ipc"]),
                                       ("libs/nng", ["-p", "endpoint=ipc"]), ("libs/grpc", ["-p", "endpoint=ipc"]),
                                       ("libs/dbus", [])])
def test_a_tmpdir_too_long_for_a_unix_socket_is_refused_before_work(lab, tmp_path, mech, args):
    tmp = long_tmpdir(tmp_path / "t")
    r = lab.run("run", mech, *args, "-p", "size=64", *QUICK, env={"TMPDIR": str(tmp)})
    if "no benchmark matches" in r.stderr:
        pytest.skip(f"{mech} is not built")
    line = usage_error(r)
    assert f"TMPDIR={tmp} is too long" in line and "107" in line, line
    assert list(tmp.iterdir()) == []  # no state folder, no run folder


def test_a_tmpdir_too_long_for_a_socket_still_runs_tcp(lab, tmp_path):
    tmp = long_tmpdir(tmp_path / "t")
    r = lab.run("run", "libs/zmq", "-p", "endpoint=tcp", "-p", "size=64", "-p", "pattern=roundtrip", *QUICK,
                env={"TMPDIR": str(tmp)})
    if "no benchmark matches" in r.stderr:
        pytest.skip("libs/zmq is not built")
    assert r.returncode == 0, r.stderr
    assert state_is_empty(tmp)


def test_dbus_runs_with_a_tmpdir_holding_xml_and_address_special_characters(lab, tmp_path):
    if not os.access("/usr/bin/dbus-daemon", os.X_OK):
        pytest.skip("dbus-daemon is not installed")
    # Short enough for the bus's socket path (pytest's own folders are long).
    tmp = Path(tempfile.mkdtemp(prefix="a&b<c>'d,e;", dir="/tmp"))
    try:
        out = tmp_path / "r.json"
        r = lab.run("run", "libs/dbus", "-p", "size=64", "-p", "pattern=roundtrip,throughput", *SHORT, "--json", out,
                    env={"TMPDIR": str(tmp)})
        if "no benchmark matches" in r.stderr:
            pytest.skip("libs/dbus is not built")
        assert r.returncode == 0, r.stderr
        recs = records(out)
        assert len(recs) == 2
        for b in recs:
            assert b["status"] == "ok", b["error"]
        assert state_is_empty(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
