"""Where shared memory lives (`-p memory=`, core/machine/numa.hpp): every record of a mechanism whose
two sides share memory states where the kernel holds the pages (extra.memory_nodes, pages per node,
as move_pages(2) reports them) and shows it in the tables, and a policy asked for lands where it
says. On a machine of one NUMA node: first_touch and node:0 say node 0. On a machine of two or more
with a CPU on each (a cross_numa pair), each policy lands on the writer's node, the reader's, both,
or the node given — the sides' nodes read here from sysfs, apart from ipclab.

    IPCLAB_BIN=build/release/ipclab python3 -m pytest -q -p no:cacheprovider tests/fault/test_memory_placement.py
"""
import json
import os
import re

import pytest

from conftest import kernel_list, usable_nodes

QUICK = ["--duration", "0.05", "--warmup", "0", "--repetitions", "1"]
NODES = usable_nodes()
ONE_NODE = len(NODES) < 2
SYS = "/sys/devices/system/node"

# Each suite's mechanisms whose sides share memory, with what they need to run briefly (the
# placement is the test's).
MECHANISMS = [
    ("messaging/shm_spsc", ["-p", "pattern=roundtrip"]),
    ("messaging/shm_mpmc", ["-p", "pattern=throughput", "-p", "mode=processes"]),
    ("messaging/eventfd", ["-p", "pattern=roundtrip"]),
    ("pingpong/thread", ["-p", "round_trips=500"]),
    ("pingpong/process", ["-p", "round_trips=500"]),
    ("bulk/shm_spsc", ["-p", "size=1M"]),
    ("bulk/shm_bulk", ["-p", "size=1M", "-p", "mode=processes"]),
    ("bulk/memfd", ["-p", "handoff=ring", "-p", "size=1M"]),
]


def records(path):
    return [b for b in json.loads(path.read_text())["benchmarks"] if b["run_type"] == "iteration"]


def node_of_cpu(cpu):
    """The NUMA node sysfs lists `cpu` under (0 when none lists it)."""
    for name in os.listdir(SYS) if os.path.isdir(SYS) else []:
        if name.startswith("node") and name[4:].isdigit():
            if cpu in kernel_list(open(f"{SYS}/{name}/cpulist").read()):
                return int(name[4:])
    return 0


@pytest.mark.parametrize("mech, args", MECHANISMS, ids=[m for m, _ in MECHANISMS])
def test_every_shared_memory_record_says_where_its_pages_are(lab, mech, args):
    node = NODES[0]
    out = lab.work / "r.json"
    md = lab.work / "r.md"
    r = lab.run("run", mech, *args, "-p", "placement=same", "-p", f"memory=first_touch,node:{node}",
                "--cpus", min(os.sched_getaffinity(0)), *QUICK, "--json", out, "--markdown", md)
    assert r.returncode == 0, r.stderr
    assert "memory=" not in r.stderr, r.stderr  # no warning of pages elsewhere
    recs = {b["params"]["memory"]: b for b in records(out)}
    assert sorted(recs) == sorted(["first_touch", f"node:{node}"]), list(recs)
    for asked, b in recs.items():
        x = b["extra"]
        assert b["status"] == "ok", b["error"]
        assert x["memory"] == asked
        pages = x["memory_pages"]
        held = x["memory_nodes"]
        assert pages["total"] > 0 and 0 < pages["queried"] <= pages["total"], pages
        assert sum(held.values()) + pages["absent"] == pages["queried"], (held, pages)
        assert all(int(n) in NODES for n in held), held
        if asked == "first_touch":
            assert x["memory_policy"] == "none" and "memory_as_asked" not in x, x
            if ONE_NODE:
                assert list(held) == ["0"], held
        else:
            # Bound and faulted in before the run: every page asked is in memory, on the node.
            assert x["memory_policy"] == "bind" and x["memory_policy_nodes"] == [node], x
            assert list(held) == [str(node)] and pages["absent"] == 0, (held, pages)
            assert x["memory_as_asked"] is True
            assert f"memory on node {node}" in " ".join(x["notes"]), x["notes"]
    # A person reads it in the tables: the console's and the Markdown's status, for the node asked.
    # (A status too long for its row continues on the lines below it, indented 4.)
    rows = [line for line in re.sub(r"\n {4}(?=\S)", "  ", r.stdout).splitlines() if line.startswith(mech)]
    assert any(f"memory on node {node}" in line and "memory:node" in line for line in rows), r.stdout
    assert f"memory on node {node}" in md.read_text()


def test_the_sides_placement_is_in_the_record(lab):
    cpu = min(os.sched_getaffinity(0))
    out = lab.work / "r.json"
    r = lab.run("run", "messaging/shm_spsc", "-p", "placement=same", "-p", f"memory=node:{NODES[0]}",
                "--cpus", str(cpu), *QUICK, "--json", out)
    assert r.returncode == 0, r.stderr
    [b] = records(out)
    side = {"cpu": cpu, "node": node_of_cpu(cpu)}
    assert b["extra"]["memory_sides"] == {"writer": side, "reader": side}, b["extra"]
    assert "memory_holder" not in b["extra"]  # both sides on one node: nobody's alone


# ---- two nodes or more (the lead's QEMU guest: CPUs 0-3 on node 0, 4-7 on node 1) ----------------

def cross_numa_pair():
    cpus = sorted(os.sched_getaffinity(0))
    for a in cpus:
        for b in cpus:
            if node_of_cpu(a) != node_of_cpu(b) and node_of_cpu(a) in NODES and node_of_cpu(b) in NODES:
                return a, b
    return None


@pytest.mark.skipif(ONE_NODE or cross_numa_pair() is None, reason="needs two NUMA nodes with memory, a CPU on each")
@pytest.mark.parametrize("mech, args", MECHANISMS, ids=[m for m, _ in MECHANISMS])
@pytest.mark.parametrize("memory", ["writer", "reader", "interleave", "node"])
def test_each_policy_lands_on_its_node(lab, mech, args, memory):
    a, b = cross_numa_pair()
    wn, rn = node_of_cpu(a), node_of_cpu(b)
    asked = f"node:{rn}" if memory == "node" else memory
    out = lab.work / "r.json"
    r = lab.run("run", mech, *args, "-p", "placement=cross_numa", "-p", f"memory={asked}",
                "--cpus", f"{a},{b}", *QUICK, "--json", out)
    assert r.returncode == 0, r.stderr
    assert "memory=" not in r.stderr, r.stderr  # no warning of pages elsewhere
    [rec] = records(out)
    assert rec["status"] == "ok", rec["error"]
    x = rec["extra"]
    assert rec["placement"]["layout"] == "cross_numa"
    assert x["memory_sides"]["writer"]["node"] == wn and x["memory_sides"]["reader"]["node"] == rn, x["memory_sides"]
    held = x["memory_nodes"]
    assert x["memory_as_asked"] is True, x
    assert x["memory_pages"]["absent"] == 0, x["memory_pages"]
    if memory == "writer":
        assert list(held) == [str(wn)] and x["memory_holder"] == "writer", x
    elif memory in ("reader", "node"):
        assert list(held) == [str(rn)] and x["memory_holder"] == "reader", x
    elif x["memory_pages"]["queried"] >= len(NODES):
        # Page by page over every node with memory: each holds some (the two sides' on two nodes).
        assert sorted(held) == sorted(str(n) for n in NODES), held
        if len(NODES) == 2:
            assert x["memory_holder"] == "both", x
    else:
        # Fewer pages than nodes (one pair's pingpong region is one page): one node takes it (which
        # one the kernel draws from the object's inode number as well as the page's offset).
        assert len(held) == 1 and int(next(iter(held))) in NODES, held
