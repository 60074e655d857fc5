"""Placement classes: `-p placement=smt|llc|cross_llc|cross_numa` puts the two sides on a pair of
--cpus that sysfs relates so (one core, one last-level cache, one NUMA node, two nodes) — the one
nearest the class's median measured round trip, recorded with that round trip — and a class this
machine lacks skips the benchmark with the reason (naming `ipclab topo`). What the machine has is
read here from sysfs independently, so each class is checked either way. `--cpu-matrix` runs a
round trip once per pair.
"""
import json
import os
from pathlib import Path

import pytest

from conftest import kernel_list

QUICK = ["--duration", "0.05", "--warmup", "0", "--repetitions", "1"]
SYS = Path("/sys/devices/system")


def cpu_facts(c):
    base = SYS / "cpu" / f"cpu{c}"
    read = lambda p, d: (base / p).read_text().strip() if (base / p).exists() else d
    llc, best = None, -1
    for idx in sorted((base / "cache").glob("index*")):
        if (idx / "type").read_text().strip() == "Instruction":
            continue
        level = int((idx / "level").read_text())
        if level > best:
            best, llc = level, min(kernel_list((idx / "shared_cpu_list").read_text()))
    node = 0
    for n in SYS.glob("node/node[0-9]*"):
        if c in kernel_list((n / "cpulist").read_text()):
            node = int(n.name[4:])
    return {"package": read("topology/physical_package_id", "0"), "core": read("topology/core_id", str(c)),
            "llc": llc, "node": node}


def relation(a, b):
    if (a["package"], a["core"]) == (b["package"], b["core"]):
        return "smt"
    if a["llc"] == b["llc"]:
        return "llc"
    return "cross_llc" if a["node"] == b["node"] else "cross_numa"


def class_pairs(cls):
    cpus = sorted(os.sched_getaffinity(0))
    facts = {c: cpu_facts(c) for c in cpus}
    return [(a, b) for i, a in enumerate(cpus) for b in cpus[i + 1:] if relation(facts[a], facts[b]) == cls]


@pytest.mark.parametrize("cls", ["smt", "llc", "cross_llc", "cross_numa"])
def test_a_placement_class_takes_a_pair_of_that_class_or_is_refused(lab, cls):
    out = lab.work / "r.json"
    r = lab.run("run", "anchors/c2c", "-p", f"placement={cls}", *QUICK, "--json", out)
    pairs = class_pairs(cls)
    assert r.returncode == 0, r.stderr
    result = json.loads(out.read_text())
    rec = [b for b in result["benchmarks"] if b["run_type"] == "iteration"][0]
    pl = rec["placement"]
    if rec["status"] == "skipped":
        # Missing here: sysfs has no such pair (a hidden sibling pair found by measurement would
        # have placed smt, and it needs three pairs or more to be judged).
        assert not pairs, (cls, pairs, rec["error"])
        assert f"placement {cls} needs" in rec["error"] and "ipclab topo" in rec["error"], rec["error"]
        return
    assert rec["status"] == "ok", rec
    assert pl["layout"] == cls
    a, b = pl["pair"]
    assert [s["pinned"] for s in pl["sides"]] == [[a], [b]], pl
    if pl["basis"] == "sysfs":
        assert (min(a, b), max(a, b)) in pairs, (pl, pairs)
    else:
        assert cls == "smt" and pl["basis"].startswith("measured: behaves as SMT siblings"), pl
    assert pl["c2c_ns"] > 0, pl
    # The run's environment holds the matrix it chose by, the chosen pair among it.
    c2c = result["context"]["cpu"]["topology"]["c2c"]
    assert any({p["a"], p["b"]} == {a, b} for p in c2c["pairs"]), c2c


def test_a_cpu_matrix_runs_a_round_trip_on_every_pair(lab):
    cpus = sorted(os.sched_getaffinity(0))[:3]
    if len(cpus) < 2:
        pytest.skip("one CPU here: a matrix needs two")
    out = lab.work / "m.json"
    r = lab.run("run", "pingpong/thread", "-p", "wait=spin", "-p", "round_trips=2000", "--cpu-matrix", "every",
                "--cpus", ",".join(map(str, cpus)), *QUICK, "--json", out)
    assert r.returncode == 0, r.stderr
    result = json.loads(out.read_text())
    assert result["context"]["cpu_matrix"] == "every"
    recs = [b for b in result["benchmarks"] if b["run_type"] == "iteration"]
    want = [(a, b) for i, a in enumerate(cpus) for b in cpus[i + 1:]]
    assert [tuple(x["placement"]["pair"]) for x in recs] == want
    for x in recs:
        a, b = x["placement"]["pair"]
        assert x["status"] == "ok", x
        assert x["params"]["cpus"] == f"{a},{b}" and x["params"]["placement"] == "cross"
        assert x["name"].endswith(f"/cpus:{a},{b}")
        assert x["extra"]["cpu_matrix"] == "every_pair"
        assert [s["pinned"] for s in x["placement"]["sides"] if s["role"] == "host"] == [[a]]
        assert [s["pinned"] for s in x["placement"]["sides"] if s["role"] == "guest"] == [[b]]
        assert x["placement"]["c2c_ns"] > 0


@pytest.mark.parametrize("args, words", [
    (["pingpong/thread", "--cpu-matrix", "all"], "use every"),
    (["pingpong/thread", "--cpu-matrix", "every", "-p", "placement=same"], "drop -p placement"),
    (["harness/null", "--cpu-matrix", "every"], "two-sided round trips"),
])
def test_a_cpu_matrix_asked_wrongly_is_refused_before_anything_runs(lab, args, words):
    r = lab.run("run", *args, *QUICK, "--json", lab.work / "x.json")
    assert r.returncode == 2, r.stderr
    assert words in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not (lab.work / "x.json").exists()
