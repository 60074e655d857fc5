"""The bulk suite end to end, as a user runs it: bad sizes refused before any work, a refused
zero-copy size naming RLIMIT_MEMLOCK, corruption caught in memory the receiver reads in place (and
may only read), the memcpy anchor's record, nothing left behind.

Run by ctest (`bulk.cli`) with the binary in IPCLAB_BIN; by hand:
    IPCLAB_BIN=$PWD/build/release/ipclab python3 -m pytest -q tests/bulk
"""
import json
import os
import shutil
import subprocess

import pytest

BINARY = os.environ.get("IPCLAB_BIN", "")
SHORT = ["--duration", "0.1", "--warmup", "0.02", "--repetitions", "1"]


def ipclab(*args, env=None, prefix=()):
    e = dict(os.environ)
    e.pop("IPCLAB_FAULT", None)
    e.update(env or {})
    return subprocess.run([*prefix, BINARY, *args], capture_output=True, text=True, timeout=300, env=e)


def records(path):
    return json.loads(path.read_text())["benchmarks"]


@pytest.fixture(autouse=True)
def binary():
    if not BINARY or not os.path.isabs(BINARY):
        pytest.fail("set IPCLAB_BIN to the absolute path of the ipclab binary")


@pytest.mark.parametrize("size", ["2K", "4G", "1Q"])
def test_a_size_outside_the_range_is_one_line_and_exit_2(tmp_path, size):
    out = tmp_path / "r.json"
    r = ipclab("run", "bulk/pipe", "-p", f"size={size}", *SHORT, "--json", str(out))
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "size" in r.stderr
    assert not out.exists()


def test_zero_copy_beyond_rlimit_memlock_is_refused_naming_it(tmp_path):
    # Without CAP_IPC_LOCK (root has it) the pinned pages count against RLIMIT_MEMLOCK.
    setpriv, prlimit = shutil.which("setpriv"), shutil.which("prlimit")
    if not setpriv or not prlimit:
        pytest.skip("setpriv or prlimit (util-linux) is missing: cannot drop CAP_IPC_LOCK")
    drop = [setpriv, "--inh-caps=-ipc_lock", "--bounding-set=-ipc_lock", prlimit, "--memlock=1048576:1048576"]
    r = ipclab("run", "bulk/zerocopy", "-p", "send=msg_zerocopy", "-p", "size=1M", *SHORT, prefix=drop)
    assert r.returncode == 2, r.stderr
    assert "RLIMIT_MEMLOCK" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    # The copying send pins nothing: the same limits let it run.
    r = ipclab("run", "bulk/zerocopy", "-p", "send=copy", "-p", "size=1M", "-p", "placement=unpinned", *SHORT,
               prefix=drop)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("mech", [["bulk/memfd", "-p", "handoff=seal"], ["bulk/shm_bulk", "-p", "copy=inplace"],
                                  ["bulk/vmsplice", "-p", "drain=splice"], ["bulk/process_vm", "-p", "direction=push"]])
def test_corruption_in_memory_read_in_place_fails_the_run(tmp_path, mech):
    out = tmp_path / "r.json"
    r = ipclab("run", *mech, "-p", "pattern=throughput", "-p", "size=64K", "-p", "placement=unpinned", *SHORT,
               "--json", str(out), env={"IPCLAB_FAULT": "corrupt:5"})
    assert r.returncode == 1, r.stderr
    [rec] = records(out)
    assert rec["status"] == "failed"
    assert rec["integrity"]["corrupt"] > 0, rec["integrity"]
    assert "corrupt" in rec["error"]


def test_memcpy_anchor_moves_its_bytes_and_bulk_records_state_the_fraction(tmp_path):
    out = tmp_path / "r.json"
    r = ipclab("run", "anchors/memcpy", "bulk/shm_bulk", "-p", "size=1M", "-p", "cache=warm", "-p", "op=copy",
               "-p", "copy=inplace", "-p", "pattern=throughput", "-p", "placement=same", *SHORT, "--json", str(out))
    assert r.returncode == 0, r.stderr
    recs = {b["suite"]: b for b in records(out) if b["run_type"] == "iteration"}
    anchor, bulk = recs["anchors"], recs["bulk"]
    assert anchor["bytes"] == anchor["ops"] * 1048576
    assert anchor["rates"]["bytes_per_s"] > 0
    b = bulk["extra"]["bulk"]
    # GiB/s from the record's own bytes and window, and its ratio to the memcpy floor measured beside it.
    assert b["GiB_per_s"] == pytest.approx(bulk["bytes"] / bulk["wall_s"] / 2**30, rel=1e-6)
    assert b["of_memcpy"] == pytest.approx(b["GiB_per_s"] / b["memcpy_GiB_per_s"])
    assert bulk["cpu"]["faults_per_op"] == pytest.approx(bulk["cpu"]["faults"] / bulk["ops"])


def test_nothing_is_left_behind(tmp_path):
    before = set(os.listdir("/dev/shm"))
    r = ipclab("run", "bulk", "-p", "size=64K", "-p", "placement=unpinned", "-p", "mode=threads,processes",
               *SHORT, "--json", str(tmp_path / "r.json"), env={"TMPDIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert set(os.listdir("/dev/shm")) <= before
    # ipclab's per-user state folder stays (core/ownership/journal.hpp), empty: each run removes its own.
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"ipclab-{os.geteuid()}", "r.json"]
    assert list((tmp_path / f"ipclab-{os.geteuid()}").iterdir()) == []
