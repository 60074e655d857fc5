"""echo with several reactors (`-p reactors=`, docs/echo.md) as a user runs it: on two CPUs,
reactors=2 of echo/epoll and echo/uring runs two reactor threads against two client threads, every
echo verified, and its record has two reactor sides pinned to distinct CPUs; the servers of one
reactor refuse reactors=2, and reactors=k refuses fewer than k connections (exit 2, one line).

Run by ctest (`echo.reactors`) with the binary in IPCLAB_BIN; by hand:
    IPCLAB_BIN=build/release/ipclab python3 -m pytest -q tests/echo/test_echo_reactors.py
"""
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ipclab_fixture import ipclab  # noqa: E402,F401  (the fixture: run ipclab, get its records)

CPUS = sorted(os.sched_getaffinity(0))


@pytest.mark.parametrize("server", ["epoll", "uring"])
def test_two_reactors_on_distinct_cpus_echo_verified_bytes(ipclab, server):
    if len(CPUS) < 2:
        pytest.skip("two reactors on distinct CPUs need two CPUs")
    cpus = CPUS[:2]
    rc, err, recs = ipclab(f"echo/{server}", "-p", "reactors=2", "-p", "connections=8",
                           "--cpus", ",".join(map(str, cpus)), "--duration", "0.2", "--warmup", "0.05")
    assert recs, err
    for rec in recs:
        if rec["status"] == "skipped":
            continue
        assert rec["status"] == "ok", (err, rec["name"], rec.get("error"))
        assert rec["params"]["reactors"] == 2 and "/reactors:2/" in rec["name"]
        i = rec["integrity"]
        assert i["lost"] == i["duplicated"] == i["corrupt"] == 0 and i["received"] == i["sent"] == rec["ops"] > 0, i
        sides = rec["placement"]["sides"]
        pinned = lambda role: [s["pinned"] for s in sorted(sides, key=lambda s: s["index"]) if s["role"] == role]
        # Client thread j on the (j+1)-th CPU, reactor i on the (i+3)-th, round-robin over --cpus.
        assert pinned("client") == [[cpus[0]], [cpus[1]]], sides
        assert pinned("reactor") == [[cpus[0]], [cpus[1]]], sides
        assert pinned("server") == [[]], sides
    assert rc == 0, err


@pytest.mark.parametrize("args, expect", [
    (["echo/asio", "-p", "reactors=2"], "use reactors=1"),
    (["echo/go", "-p", "reactors=2"], "use reactors=1"),
    (["echo/epoll", "-p", "reactors=4", "-p", "connections=2"], "connections >= 4"),
    (["echo/epoll", "-p", "reactors=0"], "reactors"),
    (["echo/epoll", "-p", "reactors=33"], "reactors"),
], ids=["asio", "go", "fewer-connections", "zero", "over-max"])
def test_reactors_are_refused_where_they_cannot_run(ipclab, args, expect):
    rc, err, recs = ipclab(*args, "--duration", "0.05")
    lines = [l for l in err.splitlines() if not l.startswith("warning: ")]
    assert rc == 2 and len(lines) == 1, err
    assert lines[0].startswith("ipclab: ") and expect in lines[0], lines
    assert recs == []
