"""The quota antagonist's cgroups (core/measure/quota.hpp) follow the ownership rules: a dead run's
journaled cgroup is removed by the next run's sweep, a cgroup of ipclab's name that no journal of
that run lists is never touched, one that holds a task is left with its journal; and with
`--antagonist quota:LEVEL`, a run leaves no cgroup when it ends, and one killed with SIGKILL inside
its window leaves one the next run sweeps.

Needs root and a writable cgroup hierarchy with the cpu controller (skipped otherwise)."""
import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from test_ownership import wait_until_dead

UID = os.geteuid()
QUICK = ["--duration", "0.05", "--warmup", "0", "--repetitions", "1"]


def cpu_cgroup():
    """This process's cgroup folder in the hierarchy of the cpu controller (v1 first, else v2),
    read from /proc/self/cgroup and /proc/self/mountinfo as ipclab reads them; None when none."""
    lines = Path("/proc/self/cgroup").read_text().splitlines()
    v1 = [l.split(":", 2)[2] for l in lines if l.split(":", 2)[0] != "0" and "cpu" in l.split(":", 2)[1].split(",")]
    v2 = [l.split(":", 2)[2] for l in lines if l.startswith("0::")]
    path = v1[0] if v1 else v2[0] if v2 else None
    if path is None:
        return None
    for m in Path("/proc/self/mountinfo").read_text().splitlines():
        head, _, tail = m.partition(" - ")
        h, t = head.split(), tail.split()
        fits = (t[0] == "cgroup" and "cpu" in t[2].split(",")) if v1 else t[0] == "cgroup2"
        if not fits:
            continue
        root, mount = h[3], h[4]
        if root == "/":
            rest = path
        elif path == root or path.startswith(root + "/"):
            rest = path[len(root):] or "/"
        else:
            continue
        folder = Path(mount + (rest if rest != "/" else ""))
        if v1 and not (folder / "cpu.cfs_quota_us").exists():
            return None
        if not v1 and "cpu" not in (folder / "cgroup.subtree_control").read_text().split():
            return None  # the v2 case ipclab handles by walking up; these tests use the simple one
        return folder
    return None


@pytest.fixture
def cgroup_home():
    home = cpu_cgroup()
    if UID != 0 or home is None or not os.access(home, os.W_OK):
        pytest.skip("needs root and a writable cgroup hierarchy with the cpu controller")
    before = {p.name for p in home.iterdir() if p.name.startswith("ipclab-")}
    yield home
    left = {p.name for p in home.iterdir() if p.name.startswith("ipclab-")} - before
    for name in left:  # never left for the next test, whatever this one asserted
        try:
            (home / name).rmdir()
        except OSError:
            pass
    assert not left, f"cgroups left behind: {sorted(left)}"


def state(lab):
    return lab.tmpdir / f"ipclab-{UID}"


def dead_run(lab, journal_lines):
    """A dead run's folder in the lab's state folder: its journal, unlocked (no one holds it)."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    run_id = f"{dead.pid}.{random.getrandbits(32):08x}"
    folder = state(lab) / f"run.{run_id}"
    folder.mkdir(parents=True, mode=0o700)
    os.chmod(state(lab), 0o700)
    (folder / "journal").write_text("".join(l.format(id=run_id) + "\n" for l in journal_lines))
    os.chmod(folder / "journal", 0o600)
    return run_id, folder


def test_the_sweep_removes_a_dead_runs_cgroup_and_nothing_it_does_not_list(lab, cgroup_home):
    run_id, folder = dead_run(lab, [])
    mine = cgroup_home / f"ipclab-{run_id}-0"
    unlisted = cgroup_home / f"ipclab-{run_id}-1"  # named as the run's, but not in its journal
    other = cgroup_home / "ipclab-999999.deadbeef-0"  # in its journal, but named as another run's
    for c in (mine, unlisted, other):
        c.mkdir()
    try:
        (folder / "journal").write_text(f"+cgroup {mine}\n+cgroup {other}\n")
        p = lab.run("run", "harness/null", *QUICK)
        assert p.returncode == 0, p.stderr
        assert not mine.exists(), p.stderr
        assert f"cgroup {mine}" in p.stderr, p.stderr
        assert unlisted.exists() and other.exists()
        assert not folder.exists()
    finally:
        for c in (unlisted, other):
            if c.exists():
                c.rmdir()


def test_the_sweep_moves_nothing_out_of_a_dead_runs_cgroup(lab, cgroup_home):
    run_id, folder = dead_run(lab, [])
    full = cgroup_home / f"ipclab-{run_id}-0"
    full.mkdir()
    (folder / "journal").write_text(f"+cgroup {full}\n")
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        (full / "cgroup.procs").write_text(str(sleeper.pid))
        p = lab.run("run", "harness/null", *QUICK)
        assert p.returncode == 0, p.stderr
        assert full.exists() and str(sleeper.pid) in (full / "cgroup.procs").read_text().split()
        assert f"kept the cgroup {full}" in p.stderr, p.stderr
        assert folder.exists(), "the dead run's journal went before its cgroup"
        sleeper.kill()
        sleeper.wait()
        p = lab.run("run", "harness/null", *QUICK)
        assert p.returncode == 0, p.stderr
        assert not full.exists() and not folder.exists(), p.stderr
    finally:
        sleeper.kill()
        sleeper.wait()
        if full.exists():
            full.rmdir()


# With the option wired (`--antagonist quota:LEVEL`, issue 55): the cgroup of a live run.

QUOTA_RUN = ["run", "messaging/pipe", "--antagonist", "quota:20"]


def quota_option_or_skip(lab):
    p = lab.run(*QUOTA_RUN, "--plan")
    if p.returncode == 2 and ("antagonist" in p.stderr or "quota" in p.stderr):
        pytest.skip(f"--antagonist quota is not wired into this build: {p.stderr.strip()}")
    assert p.returncode == 0, p.stderr


def ours(home):
    return sorted(p.name for p in home.iterdir() if p.name.startswith("ipclab-"))


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_a_quota_run_records_its_throttling_and_leaves_no_cgroup(lab, cgroup_home, mode):
    quota_option_or_skip(lab)
    before = ours(cgroup_home)
    out = lab.work / "r.json"
    p = lab.run(*QUOTA_RUN, "-p", f"mode={mode}", "--duration", "0.5", "--warmup", "0.1", "--repetitions", "1",
                "--json", out)
    assert p.returncode == 0, p.stderr
    assert ours(cgroup_home) == before
    recs = [r for r in json.loads(out.read_text())["benchmarks"] if r.get("status") == "ok"]
    assert recs, p.stdout
    [q] = [a for a in recs[0]["extra"]["antagonists"] if a["kind"] == "quota"]
    assert q["text"] == "quota:20" and q["windows"] == 1, q
    assert q["quota_us"] == 20000 and q["period_us"] == 100000
    assert q["nr_periods"] >= 1 and q["nr_periods"] >= q["nr_throttled"]
    assert Path(q["path"]).name.startswith("ipclab-")
    sides = q["sides"]["processes"] if mode == "processes" else q["sides"]["threads"]
    assert len(sides) == 2 or q["sides"]["whole_process"], q


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["KILL", "TERM"])
def test_a_run_killed_inside_its_quota_window_leaves_nothing_once_the_next_has_swept(lab, cgroup_home, sig):
    quota_option_or_skip(lab)
    before = set(ours(cgroup_home))
    p = lab.start(*QUOTA_RUN, "-p", "mode=processes", "--duration", "5", "--warmup", "0", "--repetitions", "1",
                  "--unpaired")
    deadline = time.monotonic() + 30
    while not set(ours(cgroup_home)) - before and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.02)
    made = set(ours(cgroup_home)) - before
    assert made, "the run never made its cgroup"
    p.send_signal(sig)
    p.communicate(timeout=60)
    if sig == signal.SIGTERM:  # the signal's clean-up removes it at once
        assert set(ours(cgroup_home)) == before
    wait_until_dead(lab)
    q = lab.run("run", "harness/null", *QUICK)
    assert q.returncode == 0, q.stderr
    assert set(ours(cgroup_home)) == before, q.stderr
    if sig == signal.SIGKILL:
        assert all(f"cgroup {cgroup_home / name}" in q.stderr for name in made), q.stderr
    assert lab.leftovers() == [f"ipclab-{UID}"], lab.leftovers()
