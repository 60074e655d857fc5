"""servers with several reactors (`-p reactors=`, docs/servers.md) as a user runs them: on two CPUs,
reactors=2 of each multi-reactor model serves every client, and its record has two reactor sides
pinned to distinct CPUs of --cpus with clean integrity; a model of one reactor refuses reactors=2
up front (exit 2, one line naming the fix).

Run by ctest (`servers.peer`) with the binary in IPCLAB_BIN; by hand:
    IPCLAB_BIN=build/release/ipclab python3 -m pytest -q tests/servers/test_servers_reactors.py
"""
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ipclab_fixture import ipclab  # noqa: E402,F401  (the fixture: run ipclab, get its records)

CPUS = sorted(os.sched_getaffinity(0))


@pytest.mark.parametrize("model", ["epoll_reuseport", "uring"])
def test_two_reactors_on_distinct_cpus_serve_every_client(ipclab, model):
    if len(CPUS) < 2:
        pytest.skip("two reactors on distinct CPUs need two CPUs")
    cpus = CPUS[:2]
    rc, err, recs = ipclab(f"servers/{model}", "-p", "reactors=2", "-p", "concurrency=200",
                           "--cpus", ",".join(map(str, cpus)), "--duration", "0.2", "--warmup", "0")
    assert len(recs) == 1, err
    rec = recs[0]
    if rec["status"] == "skipped":
        pytest.skip(rec["error"])
    assert rc == 0 and rec["status"] == "ok", (err, rec.get("error"))
    assert rec["params"]["reactors"] == 2 and "/reactors:2/" in rec["name"]
    i = rec["integrity"]
    assert i["lost"] == i["duplicated"] == i["corrupt"] == 0 and i["received"] == i["sent"] > 0, i
    # Waves of 200 until the window held --duration: every client of every wave served.
    waves = rec["extra"]["waves"]
    assert waves >= 1 and rec["extra"]["processed"] == 200 * waves == rec["ops"], rec["extra"]
    assert rec["extra"]["rejected"] == rec["extra"]["lost"] == 0
    sides = rec["placement"]["sides"]
    reactors = sorted((s for s in sides if s["role"] == "reactor"), key=lambda s: s["index"])
    # cross: the load generator on the first CPU, the reactors from the second on, round-robin.
    assert [s["pinned"] for s in reactors] == [[cpus[1]], [cpus[0]]], sides
    assert [s["pinned"] for s in sides if s["role"] == "client"] == [[cpus[0]]], sides
    assert [s["pinned"] for s in sides if s["role"] == "server"] == [[]], sides
    assert "reactor_note" in rec["extra"]  # a reactor shares the load generator's CPU here


@pytest.mark.parametrize("model", ["epoll_lt", "poll", "blocking_1th", "peer"])
def test_a_model_of_one_reactor_refuses_two(ipclab, model):
    rc, err, recs = ipclab(f"servers/{model}", "-p", "reactors=2", "--duration", "0.05")
    lines = [l for l in err.splitlines() if not l.startswith("warning: ")]
    assert rc == 2 and len(lines) == 1, err
    assert lines[0].startswith("ipclab: ") and "use reactors=1" in lines[0] and "epoll_reuseport" in lines[0], lines
    assert recs == []
