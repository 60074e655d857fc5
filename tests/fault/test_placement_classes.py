"""Placement classes: `-p placement=smt|llc|cross_llc|cross_numa` puts the two sides on the first
pair of --cpus that sysfs relates so (one core, one last-level cache, one NUMA node, two nodes),
and a class this machine lacks skips the benchmark with the reason (naming `ipclab topo`). What
the machine has is read here from sysfs independently, so each class is checked either way.
"""
import json
import os
from pathlib import Path

import pytest

QUICK = ["--duration", "0.05", "--warmup", "0", "--repetitions", "1"]
SYS = Path("/sys/devices/system")


def kernel_list(text):
    out = []
    for part in text.strip().split(","):
        if part:
            lo, _, hi = part.partition("-")
            out += range(int(lo), int(hi or lo) + 1)
    return out


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


def first_pair(cls):
    cpus = sorted(os.sched_getaffinity(0))
    facts = {c: cpu_facts(c) for c in cpus}
    for i, a in enumerate(cpus):
        for b in cpus[i + 1:]:
            if relation(facts[a], facts[b]) == cls:
                return a, b
    return None


@pytest.mark.parametrize("cls", ["smt", "llc", "cross_llc", "cross_numa"])
def test_a_placement_class_takes_a_pair_of_that_class_or_is_refused(lab, cls):
    out = lab.work / "r.json"
    r = lab.run("run", "anchors/c2c", "-p", f"placement={cls}", *QUICK, "--json", out)
    pair = first_pair(cls)
    assert r.returncode == 0, r.stderr
    rec = [b for b in json.loads(out.read_text())["benchmarks"] if b["run_type"] == "iteration"][0]
    if pair is None:
        assert rec["status"] == "skipped", rec["status"]
        assert f"placement {cls} needs" in rec["error"] and "ipclab topo" in rec["error"], rec["error"]
        return
    assert rec["status"] == "ok", rec
    assert rec["placement"]["layout"] == cls
    assert [s["pinned"] for s in rec["placement"]["sides"]] == [[pair[0]], [pair[1]]], rec["placement"]
