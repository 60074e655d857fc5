"""ipclab on machines of other shapes, emulated: each shape of tests/guest/guest.py boots once, runs
tests/guest/inside.py with the build under test (the bundle build, x86-64-v2: IPCLAB_GUEST_BIN,
default build/bundle/ipclab), and the tests below judge what it left against the guest's own sysfs.
Run by `make test-guests` (its own CI step). Skipped, with the reason, where QEMU, virtme-ng,
busybox or a kernel image is missing (scripts/setup.sh installs them)."""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import guest  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
BINARY = os.environ.get("IPCLAB_GUEST_BIN") or os.path.join(ROOT, "build", "bundle", "ipclab")
CLASSES = ("smt", "llc", "cross_llc", "cross_numa")
_booted = {}


class Guest:
    """What one boot left: the guest's sysfs, and each step's output."""

    def __init__(self, shape, out, wall):
        self.shape, self.out, self.wall = shape, out, wall
        self.sysfs = json.load(open(os.path.join(out, "sysfs.json")))
        self.cpus = {int(c): v for c, v in self.sysfs["cpus"].items()}

    def text(self, step, ext):
        with open(os.path.join(self.out, f"{step}.{ext}")) as f:
            return f.read()

    def rc(self, step):
        return self.text(step, "rc").strip()

    def ok(self, step):
        assert self.rc(step) == "0", f"{step}: exit {self.rc(step)}: {self.text(step, 'err')[-2000:]}"

    def records(self, step):
        self.ok(step)
        with open(os.path.join(self.out, f"{step}.json")) as f:
            return [b for b in json.load(f)["benchmarks"] if b.get("run_type", "iteration") == "iteration"]

    def plan(self, step):
        self.ok(step)
        return [json.loads(line) for line in self.text(step, "out").splitlines() if line.strip()]

    def relation(self, a, b):
        """The pair's relation as the guest's sysfs states it: smt, llc, cross_llc or cross_numa."""
        ca, cb = self.cpus[a], self.cpus[b]
        if ca["node"] != cb["node"]:
            return "cross_numa"
        if b in ca["siblings"]:
            return "smt"
        if b in ca["llc"]:
            return "llc"
        return "cross_llc"

    def relations(self):
        return {self.relation(a, b) for a in self.cpus for b in self.cpus if a < b}


def _run(name, out):
    """Boot shape `name`, run inside.py in it, and return what it left (a Guest); GuestError when
    it did not boot, did not finish, or inside.py failed."""
    argv = ["/usr/bin/python3", os.path.join(HERE, "inside.py"), BINARY, out, name]
    try:
        rc, wall, console = guest.boot(guest.SHAPES[name], out, argv)
    except guest.GuestError as e:
        # An emulated boot may fail before the guest runs anything (seen in 72 CPUs under
        # multi-threaded TCG, nothing printed): boot it once more, and say so. A guest that booted
        # and failed is never booted again.
        if "did not boot" not in str(e):
            raise
        print(f"\nguest {name}: {e}; booting it once more")
        rc, wall, console = guest.boot(guest.SHAPES[name], out, argv)
    steps = os.path.join(out, "steps.json")
    if rc != 0 or not os.path.exists(steps):
        raise guest.GuestError(f"guest {name}: inside.py exit {rc}, steps.json "
                               f"{'written' if os.path.exists(steps) else 'missing'}; console: {console[-3000:]}")
    with open(steps) as f:
        print(f"\nguest {name}: {wall:.0f} s; " + ", ".join(f"{s['name']} {s['s']} s" for s in json.load(f)))
    return Guest(name, out, wall)


@pytest.fixture(scope="session")
def booted(tmp_path_factory):
    why = guest.missing()
    if why:
        pytest.skip(why)
    if not os.access(BINARY, os.X_OK):
        pytest.skip(f"no ipclab at {BINARY}: `make test-guests` builds it (the bundle build)")

    def get(name):
        if name not in _booted:
            try:
                _booted[name] = _run(name, str(tmp_path_factory.mktemp(f"guest-{name}")))
            except guest.GuestError as e:
                _booted[name] = e
        if isinstance(_booted[name], Exception):
            pytest.fail(str(_booted[name]))
        return _booted[name]

    return get


# What each shape must show, from its definition (guest.SHAPES); sysfs is checked against it too,
# so that a QEMU or kernel that built another shape fails here rather than passing vacuously.
EXPECT = {
    "A": {"packages": 2, "nodes": 2, "llcs": 2, "smt": True},
    "B": {"packages": 1, "nodes": 1, "llcs": 2, "smt": False},
    "C": {"packages": 4, "nodes": 4, "llcs": 4, "smt": True},
}


@pytest.mark.parametrize("shape", ["A", "B", "C"])
def test_topo_finds_the_guests_packages_nodes_llcs_and_smt_pairs(booted, shape):
    g = booted(shape)
    s = guest.SHAPES[shape]
    assert len(g.cpus) == s.cpus == g.sysfs["nproc"]
    assert len({c["package"] for c in g.cpus.values()}) == EXPECT[shape]["packages"]
    assert len({c["node"] for c in g.cpus.values()}) == EXPECT[shape]["nodes"]
    assert len({tuple(c["llc"]) for c in g.cpus.values()}) == EXPECT[shape]["llcs"]
    assert all(len(c["siblings"]) == s.threads for c in g.cpus.values())
    topo = json.loads(g.text("topo", "out"))
    g.ok("topo")
    want = EXPECT[shape]
    assert (topo["packages"], topo["nodes"], topo["llcs"], topo["smt"]) == (
        want["packages"], want["nodes"], want["llcs"], want["smt"])
    assert topo["cores"] == s.cpus // s.threads
    assert len(topo["cpus"]) == s.cpus
    llc_of = {}
    for c in topo["cpus"]:
        mine = g.cpus[c["cpu"]]
        assert (c["package"], c["node"], sorted(c["siblings"])) == (mine["package"], mine["node"],
                                                                    sorted(mine["siblings"])), c
        llc_of[c["cpu"]] = c["llc"]
    # ipclab names an LLC by one of its CPUs: the same partition as sysfs's shared_cpu_list.
    for a in g.cpus:
        for b in g.cpus:
            assert (llc_of[a] == llc_of[b]) == (b in g.cpus[a]["llc"]), (a, b)


@pytest.mark.parametrize("shape", ["A", "B"])
def test_every_placement_class_resolves_to_a_pair_of_that_relation_or_is_skipped_with_its_reason(booted, shape):
    g = booted(shape)
    have = g.relations()
    records = g.records("classes")
    assert len(records) == 2 * len(CLASSES)
    for r in records:
        cls = r["params"]["placement"]
        if cls in have:
            assert r["status"] == "ok", (cls, r["error"])
            a, b = r["placement"]["pair"]
            assert g.relation(a, b) == cls, (cls, a, b)
            observed = sorted(cpu for side in r["placement"]["sides"] for cpu in side["observed"])
            assert observed == sorted([a, b]), r["placement"]
            i = r["integrity"]
            assert i["sent"] == i["received"] > 0 and i["lost"] == i["duplicated"] == i["corrupt"] == 0, i
        else:
            assert r["status"] == "skipped", (cls, r["placement"])
            assert f"placement {cls} needs" in r["error"] and "give --cpus" in r["error"], r["error"]
    # What the shapes are for: A has every class but cross_llc (one LLC per node), B only llc and cross_llc.
    assert have == ({"smt", "llc", "cross_numa"} if shape == "A" else {"llc", "cross_llc"})


@pytest.mark.parametrize("shape", ["A", "B"])
def test_an_antagonist_lands_on_the_cpus_its_class_names_or_the_point_is_skipped_with_why(booted, shape):
    g = booted(shape)
    side = min(g.cpus)
    for where in ("smt", "llc", "cross_numa", "others"):
        (r,) = g.records("antagonist_" + where)
        others = [c for c in g.cpus if c != side]
        fits = others if where == "others" else [c for c in others if g.relation(side, c) == where]
        if not fits:
            assert r["status"] == "skipped" and f"antagonist @{where}" in r["error"], (where, r["error"])
            continue
        assert r["status"] == "ok", (where, r["error"])
        (a,) = r["extra"]["antagonists"]
        assert a["kind"] == "none" and a["cpus"], a
        assert set(a["cpus"]) <= set(fits), (where, a["cpus"], fits)
        if where == "others":
            assert sorted(a["cpus"]) == sorted(fits), a["cpus"]
    # A has SMT pairs, an LLC per node and two nodes; B one node of two LLCs without SMT.
    ran = {w for w in ("smt", "llc", "cross_numa") if g.records("antagonist_" + w)[0]["status"] == "ok"}
    assert ran == ({"smt", "llc", "cross_numa"} if shape == "A" else {"llc"}), ran


@pytest.mark.parametrize("shape", ["A", "B"])
def test_cpu_matrix_class_gives_one_pair_per_class(booted, shape):
    g = booted(shape)
    records = g.records("matrix")
    classes = [r["extra"]["cpu_class"] for r in records]
    assert sorted(classes) == sorted(g.relations()), classes
    for r in records:
        a, b = r["placement"]["pair"]
        assert r["status"] == "ok" and g.relation(a, b) == r["extra"]["cpu_class"], r["placement"]


def _top(n, per_cpu, most):
    v, out = 1, []
    top = max(1, min(n // per_cpu, most))
    while v <= top:
        out.append(v)
        v *= 2
    return out if out[-1] == top else out + [top]


# The grids the quick preset derives from the CPU count: (step, parameter, CPUs per value, its max).
GRIDS = [("pingpong", "pairs", 2, "pingpong/thread"), ("mpmc", "producers", 2, "messaging/shm_mpmc"),
         ("mpmc", "consumers", 2, "messaging/shm_mpmc"), ("servers", "reactors", 1, "servers/epoll_reuseport"),
         ("echo", "reactors", 2, "echo/epoll")]


@pytest.fixture(scope="session")
def param_max():
    """Each parameter's declared maximum, from the build under test's registry."""
    reg = json.loads(subprocess.run([BINARY, "list", "--json"], capture_output=True, text=True, check=True).stdout)
    out = {}
    for m in reg["mechanisms"]:
        for p in m["params"]:
            out[(f"{m['suite']}/{m['name']}", p["name"])] = p.get("max", 1 << 20)
    return out


@pytest.mark.parametrize("shape", ["A", "B", "C"])
def test_the_grids_scale_to_the_cpus(booted, param_max, shape):
    g = booted(shape)
    n = len(g.cpus)
    for step, param, per_cpu, mech in GRIDS:
        values = sorted({int(b["params"][param]) for b in g.plan("plan_" + step)})
        assert values == _top(n, per_cpu, param_max[(mech, param)]), (step, param, values)


@pytest.mark.parametrize("shape", ["A", "B"])
def test_every_point_of_the_grids_runs_with_its_integrity_checked(booted, shape):
    g = booted(shape)
    for step, *_ in GRIDS:
        planned = {b["name"] for b in g.plan("plan_" + step)}
        records = g.records("grid_" + step)
        assert {r["name"] for r in records} == planned, step
        for r in records:
            i = r["integrity"]
            assert r["status"] == "ok", (r["name"], r["error"])
            assert i["sent"] == i["received"] > 0, (r["name"], i)
            assert i["lost"] == i["duplicated"] == i["corrupt"] == 0, (r["name"], i)


@pytest.mark.parametrize("shape", ["A", "B"])
def test_results_survive_on_the_guests_9p_folder_and_on_tmpfs(booted, shape):
    g = booted(shape)
    assert g.sysfs["mounts"][g.out] == "9p"
    for where in ("tmpfs", "9p"):
        g.ok("files_" + where)
    nine = os.path.join(g.out, "out_9p")
    tmpfs = {name: g.text("files_tmpfs", name) for name in ("results.json", "results.csv", "results.md")}
    for name in ("results.json", "results.csv", "results.md"):
        assert os.path.getsize(os.path.join(nine, name)) > 0 and tmpfs[name], name
    for text in (open(os.path.join(nine, "results.json")).read(), tmpfs["results.json"]):
        recs = [b for b in json.loads(text)["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
        assert sorted(b["mechanism"] for b in recs) == ["pipe", "shm_spsc"]
        assert all(b["status"] == "ok" and b["integrity"]["lost"] == 0 for b in recs)
    for text in (open(os.path.join(nine, "results.csv")).read(), tmpfs["results.csv"]):
        assert len(text.strip().splitlines()) == 3
    # Nothing but the three results in the 9p folder: no journal or reservation left there.
    assert sorted(os.listdir(nine)) == ["results.csv", "results.json", "results.md"]


def test_adaptive_waits_complete_when_the_vcpus_are_descheduled(booted):
    """Guest A: 8 emulated vCPUs on the host's few, each descheduled at every turn. The calibrated
    (adaptive) and counted (adaptive_futex) waits complete, with every message accounted for."""
    g = booted("A")
    for step in ("waits", "waits_shm"):
        for r in g.records(step):
            i = r["integrity"]
            assert r["status"] == "ok" and r["ops"] > 0, (r["name"], r["error"])
            assert i["sent"] == i["received"] and i["lost"] == i["duplicated"] == i["corrupt"] == 0, i


def test_the_quick_preset_plans_within_its_budget_on_72_cpus_or_says_what_fits(booted):
    g = booted("C")
    g.ok("dry_run")
    out = g.text("dry_run", "out")
    line = next(line for line in out.splitlines() if line.startswith("budget 5m (the preset's): "))
    m = re.search(r"estimate (?:(\d+)m)?(?:(\d+)s)?$", line)
    assert m and int(m.group(1) or 0) * 60 + int(m.group(2) or 0) <= 300, line
    assert g.rc("dry_run_small") == "2"
    err = g.text("dry_run_small", "err").strip()
    assert len(err.splitlines()) == 1 and "budget 1m" in err and "give a larger budget, e.g. --budget" in err, err


def test_sides_on_cpus_past_64_record_where_they_ran(booted):
    g = booted("C")
    last = len(g.cpus) - 1
    [r] = g.records("high_cpus")
    assert r["status"] == "ok" and r["placement"]["pair"] == [last - 1, last], r["placement"]
    assert sorted(c for side in r["placement"]["sides"] for c in side["observed"]) == [last - 1, last]


def test_the_measured_matrix_is_sampled_beyond_64_cpus(booted):
    g = booted("C")
    g.ok("topo_measured")
    c2c = json.loads(g.text("topo_measured", "out"))["c2c"]
    assert c2c["sampled"] is True
    per = {}
    for p in c2c["pairs"]:
        assert p["relation"] and p["c2c_ns"] > 0, p  # each pair measured, none given up on
        per[p["relation"]] = per.get(p["relation"], 0) + 1
    # Up to 8 pairs of each relation sysfs shows, and every relation present.
    assert all(0 < k <= 8 for k in per.values()), per
    assert len(per) >= len(g.relations()), (per, g.relations())


def test_cpu_matrix_on_72_cpus(booted):
    g = booted("C")
    assert g.rc("matrix_every") == "2"
    err = g.text("matrix_every", "err").strip()
    assert len(err.splitlines()) == 1 and "at most 64" in err and "--cpu-matrix class" in err, err
    planned = g.plan("matrix_class_plan")
    pairs = [tuple(int(x) for x in b["params"]["cpus"].split(",")) for b in planned]
    assert sorted(g.relation(a, b) for a, b in pairs) == sorted(g.relations()), pairs


@pytest.mark.parametrize("shape", ["A", "B", "C"])
def test_shared_memory_lands_on_the_node_memory_asks(booted, shape):
    """-p memory= (core/machine/numa.hpp) for each suite's shared-memory mechanism: the pages on the
    node the policy names, as the guest's kernel reports them, the sides' nodes as its sysfs states
    them. One node: writer is refused (nothing to choose), first_touch and node:0 say node 0."""
    g = booted(shape)
    nodes = sorted({c["node"] for c in g.cpus.values()})
    records = g.records("memory")
    mechanisms = ["eventfd", "memfd", "shm_bulk", "shm_spsc", "thread"]
    if len(nodes) == 1:
        assert g.rc("memory_one_node") == "2"
        err = [line for line in g.text("memory_one_node", "err").splitlines() if not line.startswith("warning: ")]
        assert len(err) == 1 and "nothing to choose; use memory=first_touch or memory=node:0" in err[0], err
        assert sorted(r["mechanism"] for r in records) == sorted(mechanisms * 2)
        for r in records:
            assert r["status"] == "ok", (r["name"], r["error"])
            assert list(r["extra"]["memory_nodes"]) == ["0"], (r["name"], r["extra"])
            assert r["extra"].get("memory_as_asked", True) is True, (r["name"], r["extra"])
        return
    assert sorted(r["mechanism"] for r in records) == sorted(mechanisms * 4)
    for r in records:
        assert r["status"] == "ok", (r["name"], r["error"])
        x, asked = r["extra"], r["params"]["memory"]
        w, rd = r["placement"]["pair"]
        wn, rn = g.cpus[w]["node"], g.cpus[rd]["node"]
        assert (wn, rn) == (nodes[0], nodes[1]), r["placement"]
        assert x["memory_sides"] == {"writer": {"cpu": w, "node": wn}, "reader": {"cpu": rd, "node": rn}}, x
        assert x["memory_as_asked"] is True and x["memory_pages"]["absent"] == 0, (r["name"], x)
        held = sorted(int(n) for n in x["memory_nodes"])
        if asked == "interleave":
            assert x["memory_policy"] == "interleave" and x["memory_policy_nodes"] == nodes, x
            if x["memory_pages"]["queried"] >= 2 * len(nodes):
                assert held == nodes, (r["name"], x["memory_nodes"])
                assert x["memory_holder"] == ("both" if len(nodes) == 2 else "mixed"), (r["name"], x)
            else:  # a page or two (one pair's pingpong region): on nodes interleaved over
                assert set(held) <= set(nodes), (r["name"], x["memory_nodes"])
            continue
        node = {"writer": wn, "reader": rn}.get(asked)
        node = int(asked.split(":")[1]) if node is None else node
        assert x["memory_policy"] == "bind" and x["memory_policy_nodes"] == [node], (r["name"], x)
        assert held == [node], (r["name"], x["memory_nodes"])
        assert x["memory_holder"] == ("writer" if node == wn else "reader" if node == rn else "neither"), x


def _leftovers(private_root):
    names = set(os.listdir(private_root))
    procs = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if b"qemu-system" in open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")[0]:
                    procs.append(int(d))
            except OSError:
                pass
    return names, procs


def test_a_guest_that_cannot_boot_says_why_in_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    if guest.missing():
        pytest.skip(guest.missing())
    private_root = tmp_path / "tmp"
    private_root.mkdir()
    monkeypatch.setenv("TMPDIR", str(private_root))
    tempfile.tempdir = None  # read TMPDIR again
    before = _leftovers(private_root)
    # No kernel there.
    with pytest.raises(guest.GuestError) as e:
        guest.boot(guest.SHAPES["B"], str(tmp_path), ["/bin/true"], kernel=str(tmp_path / "vmlinuz-none"))
    assert "no kernel image at" in str(e.value) and "\n" not in str(e.value)
    # QEMU refuses the machine (a NUMA node naming CPUs the guest does not have).
    start = time.monotonic()
    with pytest.raises(guest.GuestError) as e:
        guest.boot(guest.SHAPES["B"], str(tmp_path), ["/bin/true"], extra_qemu="-numa node,nodeid=0,cpus=0-99")
    assert "did not boot" in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert time.monotonic() - start < 60
    # A guest that boots but does not finish in time: stopped, one line, nothing left.
    with pytest.raises(guest.GuestError) as e:
        guest.boot(guest.SHAPES["B"], str(tmp_path), ["/bin/sleep", "600"], timeout_s=5)
    assert "did not finish within 5 s" in str(e.value) and "\n" not in str(e.value), str(e.value)
    tempfile.tempdir = None
    assert _leftovers(private_root) == before
    assert sorted(os.listdir(tmp_path)) == ["tmp"]


@pytest.mark.parametrize("shape", ["A", "B", "C"])
def test_env_says_the_cpus_are_emulated(booted, shape):
    """QEMU's translator runs these vCPUs: env names it, and warns that timings mean nothing."""
    g = booted(shape)
    g.ok("env")
    out = g.text("env", "out") + g.text("env", "err")
    assert any(line.startswith("vCPUs") and "tcg" in line for line in out.splitlines()), out[-3000:]
    assert "the CPUs are emulated by QEMU's translator (TCG" in " ".join(out.split()), out[-3000:]  # lines wrap
