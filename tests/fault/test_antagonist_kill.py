"""The kill paths of --antagonist (docs/noise.md): ipclab killed (SIGKILL) or stopped (SIGTERM) while
a window runs under stress-ng leaves no stress-ng process and none of its files; an antagonist killed
from outside during the window fails the point ("not measured under noise")."""
import json
import os
import shutil
import signal
import time

import pytest

pytestmark = [
    pytest.mark.skipif(not shutil.which("stress-ng"), reason="stress-ng is not installed (scripts/setup.sh)"),
    pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two allowed CPUs"),
]

FIRST = min(os.sched_getaffinity(0))


def point(seconds):
    # --unpaired: the noisy repetition alone (a quiet pair, run first, would hold the antagonist back
    # for a whole window); what these tests kill is the antagonist's.
    return ["run", "messaging/pipe", "-p", "placement=same", "-p", "pattern=roundtrip", "--cpus", str(FIRST),
            "--duration", str(seconds), "--warmup", "0", "--repetitions", "1", "--unpaired"]


def stat(pid):
    """(state, ppid, pgrp, comm) of a process, or None once it is gone."""
    try:
        s = open(f"/proc/{pid}/stat").read()
    except OSError:
        return None
    comm = s[s.index("(") + 1:s.rindex(")")]
    fields = s[s.rindex(")") + 2:].split()
    return fields[0], int(fields[1]), int(fields[2]), comm


def processes():
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = stat(int(name))
            if st:
                yield int(name), st


def group_of_child_stress_ng(parent, timeout=20):
    """The pids of the stress-ng that `parent` started — its leader and its running workers (each
    named stress-ng-<stressor>) — once a worker runs."""
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        leaders = [pid for pid, (state, ppid, _, comm) in processes() if ppid == parent and comm == "stress-ng"]
        for leader in leaders:
            group = [pid for pid, (state, _, pgrp, comm) in processes() if pgrp == leader and state not in "ZX"]
            if any(stat(pid) and stat(pid)[3].startswith("stress-ng-") for pid in group):
                return group
        time.sleep(0.02)
    raise AssertionError(f"ipclab (pid {parent}) started no stress-ng within {timeout} s")


def all_gone(pids, timeout=10):
    """True once every pid is gone or a zombie (an orphan's is init's to reap)."""
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        if all(stat(pid) is None or stat(pid)[0] in "ZX" for pid in pids):
            return True
        time.sleep(0.02)
    return False


def stress_ng_files(lab, own_only=False):
    """Files under the sandbox's TMPDIR of stress-ng's (its workers' tmp-stress-ng-* folders), and
    unless `own_only` those ipclab made for it (its report and output files)."""
    return [str(p) for p in lab.tmpdir.rglob("*")
            if p.name.startswith("tmp-stress-ng") or (not own_only and "stress-ng" in p.name)]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_ipclab_killed_mid_window_leaves_no_stress_ng_and_no_file_of_it(lab, sig):
    # io writes files in the run's folder: what a kill could leave.
    proc = lab.start(*point(30), "--antagonist", "io@others")
    try:
        group = group_of_child_stress_ng(proc.pid)
        time.sleep(0.3)  # into the window (no warm-up): the workers write
        os.kill(proc.pid, sig)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -sig
    assert all_gone(group), [(pid, stat(pid)) for pid in group if stat(pid) and stat(pid)[0] not in "ZX"]
    # stress-ng's workers remove their own folder as they die.
    until = time.monotonic() + 5
    while stress_ng_files(lab, own_only=True) and time.monotonic() < until:
        time.sleep(0.05)
    assert not stress_ng_files(lab, own_only=True)
    if sig == signal.SIGKILL:
        # The run's folder, with the files ipclab made for stress-ng, is the next run's to sweep.
        swept = lab.run("run", "harness/null", "--duration", "0.01", "--warmup", "0", "--repetitions", "1")
        assert swept.returncode == 0, swept.stderr
    # After SIGTERM ipclab stopped stress-ng before it removed its run's folder: nothing is left.
    assert not stress_ng_files(lab)
    assert not [p for p in lab.leftovers() if "/run." in p], lab.leftovers()


def test_an_antagonist_killed_from_outside_fails_the_point(lab):
    out = lab.work / "r.json"
    proc = lab.start(*point(3), "--antagonist", "cpu@others", "--json", out)
    try:
        group = group_of_child_stress_ng(proc.pid)
        time.sleep(0.3)
        workers = [pid for pid in group if stat(pid) and stat(pid)[3].startswith("stress-ng-")]
        os.kill(workers[0], signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1
    [rec] = json.loads(out.read_text())["benchmarks"]
    assert rec["status"] == "failed"
    assert rec["error"].startswith("not measured under noise: antagonist cpu@others:100 (stress-ng")
    assert "died" in rec["error"] or "exited" in rec["error"]  # the worker, or stress-ng left without it
    assert all_gone(group)
