"""libs/iceoryx as a user runs it: the harness's own RouDi started and stopped with the run, both
sides as processes, a RouDi killed in the middle of a run, and iceoryx's fixed names when they are
someone else's. Every run has a TMPDIR of its own; afterwards nothing of it may remain — no RouDi,
no file under /tmp or /dev/shm, an empty state folder.

Run by ctest (`libs.cli`) with the binary in IPCLAB_BIN; by hand:
    IPCLAB_BIN=$PWD/build/release/ipclab python3 -m pytest -q tests/libs/test_iceoryx_cli.py
"""
import grp
import json
import os
import signal
import subprocess
import time

import pytest

from libs_cli import BINARY, SHORT
from libs_cli import ipclab as run_ipclab

FIXED = ["/tmp/roudi", "/tmp/roudi.lock", "/tmp/iox-unique-roudi.lock", "/dev/shm/iceoryx_mgmt",
         "/dev/shm/" + grp.getgrgid(os.getegid()).gr_name]


def ipclab(*args, tmp):
    return run_ipclab(*args, env={"TMPDIR": str(tmp)})


def roudis():
    out = subprocess.run(["pgrep", "-x", "iox-roudi"], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def ours_left():
    return [p for p in FIXED if os.path.lexists(p)] + \
           [f"/tmp/{n}" for n in os.listdir("/tmp") if n.startswith("iox.ipclab.")]


@pytest.fixture(autouse=True)
def clean_machine():
    if not os.access("/usr/bin/iox-roudi", os.X_OK):
        pytest.skip("iceoryx's RouDi (package iceoryx) is not installed")
    if roudis() or ours_left():
        pytest.skip(f"another RouDi or its names are here ({roudis()}, {ours_left()}): ipclab does not start its own")
    yield
    assert roudis() == [], "a RouDi was left running"
    assert ours_left() == []


def state_is_empty(tmp):
    state = tmp / f"ipclab-{os.geteuid()}"
    return not state.exists() or list(state.iterdir()) == []


def test_processes_deliver_every_message_in_place_through_the_runs_roudi(tmp_path):
    out = tmp_path / "r.json"
    r = ipclab("run", "libs/iceoryx", "-p", "mode=processes", "-p", "pattern=throughput,roundtrip",
               "-p", "size=64,64K", *SHORT, "--json", str(out), tmp=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    recs = [b for b in doc["benchmarks"] if b["run_type"] == "iteration"]
    assert len(recs) == 4
    for b in recs:
        assert b["status"] == "ok", b["error"]
        assert b["ops"] > 0
        assert b["integrity"]["lost"] == b["integrity"]["corrupt"] == b["integrity"]["duplicated"] == 0
        assert b["extra"]["library"] == "iceoryx " + doc["context"]["libraries"]["iceoryx"]
        assert b["extra"]["baseline"] == {"mechanism": "shm_spsc", "params": {"wait": "futex"}}
        assert "roudi" in b["extra"]["cpu_by_role"]
    # iceoryx's own log stays in RouDi's log file: nothing of it on ipclab's output.
    assert "RouDi" not in r.stderr and "Log level" not in r.stderr
    assert state_is_empty(tmp_path)


def test_a_roudi_killed_mid_run_fails_it_within_seconds_leaving_nothing(tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    p = subprocess.Popen([BINARY, "run", "libs/iceoryx", "-p", "pattern=roundtrip", "-p", "size=64",
                          "--duration", "20", "--warmup", "0.05", "--repetitions", "1", "-p", "placement=unpinned"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 10
        while not roudis() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert roudis(), "RouDi did not start"
        time.sleep(0.5)  # inside the measured window
        for pid in roudis():
            os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        out, err = p.communicate(timeout=30)
        assert time.monotonic() - killed < 5, "the run went on after RouDi died"
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 1, err
    assert "roudi 0 died of signal 9" in out + err
    assert state_is_empty(tmp_path)


def test_someone_elses_fixed_names_skip_the_benchmark_and_stay(tmp_path):
    # A stale /tmp/roudi.lock stands for another RouDi's names: ipclab must not start its own (RouDi
    # would remove them) and must leave the file as it is.
    stale = "/tmp/roudi.lock"
    with open(stale, "x") as f:
        f.write("not ipclab's\n")
    try:
        out = tmp_path / "r.json"
        r = ipclab("run", "libs/iceoryx", "-p", "size=64", "-p", "pattern=roundtrip", *SHORT, "--json", str(out),
                   tmp=tmp_path)
        assert r.returncode == 0, r.stderr
        [b] = [b for b in json.loads(out.read_text())["benchmarks"] if b["run_type"] == "iteration"]
        assert b["status"] == "skipped"
        assert "/tmp/roudi.lock" in b["error"] and "another RouDi" in b["error"]
        with open(stale) as f:
            assert f.read() == "not ipclab's\n"
        assert roudis() == []
    finally:
        os.unlink(stale)


def test_a_roudi_that_cannot_start_skips_with_its_reason(tmp_path):
    # /dev/shm of 1 MiB (a mount namespace of this test's own) cannot hold RouDi's management
    # segment: RouDi ends before it serves, and the benchmark is skipped with the last lines of its
    # log, leaving nothing behind.
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True)
    if os.geteuid() != 0 or probe.returncode != 0:
        pytest.skip(f"needs root and a mount namespace of its own (unshare -m: {probe.stderr.strip() or 'not root'})")
    out = tmp_path / "r.json"
    script = ('mount -t tmpfs -o size=1M tmpfs /dev/shm && "$0" run libs/iceoryx -p size=64 -p pattern=roundtrip '
              + " ".join(SHORT) + f' --json {out} && echo "left in /dev/shm: [$(ls -A /dev/shm)]"')
    r = subprocess.run(["unshare", "-m", "sh", "-c", script, BINARY], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "left in /dev/shm: []", r.stdout
    [b] = [b for b in json.loads(out.read_text())["benchmarks"] if b["run_type"] == "iteration"]
    assert b["status"] == "skipped"
    assert "RouDi could not start" in b["error"] and "shared memory" in b["error"]
    assert state_is_empty(tmp_path)
