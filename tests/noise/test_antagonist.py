"""--antagonist end to end (docs/noise.md): what a run under an antagonist records, the idle stand-in,
bad input refused before any work, classes this machine lacks and a missing stress-ng skipped with
their reasons. No figure is timed: only what ran, where, and that it made progress.

The kill paths (SIGKILL and SIGTERM of ipclab mid-window, an antagonist killed from outside) are in
tests/fault/test_antagonist_kill.py.

Run by ctest (cli.antagonist) with the binary in IPCLAB_BIN; by hand:
    IPCLAB_BIN=build/release/ipclab python3 -m pytest -q tests/noise
"""
import json
import os
import shutil
import subprocess

import pytest

BINARY = os.environ.get("IPCLAB_BIN", "")
STRESS_NG = shutil.which("stress-ng")

pytestmark = pytest.mark.skipif(not BINARY, reason="IPCLAB_BIN is not set (ctest sets it)")
needs_stress_ng = pytest.mark.skipif(not STRESS_NG, reason="stress-ng is not installed (scripts/setup.sh)")
needs_two_cpus = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two allowed CPUs")

# One short point: both sides of a pipe round trip on the first allowed CPU.
FIRST = min(os.sched_getaffinity(0))
POINT = ["messaging/pipe", "-p", "placement=same", "-p", "pattern=roundtrip", "--cpus", str(FIRST),
         "--duration", "0.2", "--warmup", "0.05", "--repetitions", "1"]


@pytest.fixture
def sandbox(tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir(mode=0o700)
    env = dict(os.environ, TMPDIR=str(tmpdir), XDG_STATE_HOME=str(tmp_path / "state"), IPCLAB_NO_STORE="1")
    env.pop("IPCLAB_FAULT", None)
    return tmp_path, env


def run(sandbox, *args, env=None):
    root, base = sandbox
    return subprocess.run([BINARY, "run", *args], cwd=root, env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=120)


def record(sandbox, *args, env=None):
    """The one repetition's record of a run of POINT with `args`, and the finished process."""
    out = sandbox[0] / "r.json"
    p = run(sandbox, *POINT, *args, "--json", out, env=env)
    assert out.exists(), p.stderr
    recs = [r for r in json.loads(out.read_text())["benchmarks"] if r.get("run_type") != "aggregate"]
    assert len(recs) == 1
    return recs[0], p


@needs_stress_ng
@needs_two_cpus
def test_a_cpu_antagonist_on_the_other_cpus_is_recorded_with_what_ran(sandbox):
    md = sandbox[0] / "r.md"
    rec, p = record(sandbox, "--antagonist", "cpu@others", "--markdown", md)
    assert p.returncode == 0, p.stderr
    assert rec["status"] == "ok", rec.get("error")
    [a] = rec["extra"]["antagonists"]
    others = sorted(os.sched_getaffinity(0) - {FIRST})
    assert a["kind"] == "cpu" and a["where"] == "others" and a["level"] == 100 and a["text"] == "cpu@others:100"
    assert a["cpus"] == others
    assert a["program"] == "stress-ng"
    assert a["argv"][0].endswith("stress-ng")
    assert a["argv"][1:5] == ["--cpu", str(len(others)), "--cpu-load", "100"]
    taskset = a["argv"][a["argv"].index("--taskset") + 1]
    assert taskset.replace("-", ",").split(",")[0] == str(others[0])
    assert a["version"].startswith("stress-ng, version ")
    assert a["bogo_ops"] > 0 and a["bogo_ops_per_s"] > 0 and a["run_s"] > 0
    assert a["window_cpu_s"] > 0 and a["windows"] == 1
    # The run says that its figures are under noise: on stderr as it starts, under its table, in
    # its Markdown file; and the context names it.
    assert "antagonists cpu@others:100 run through every measured window" in p.stderr
    assert "Every figure above was measured under antagonists cpu@others:100" in " ".join(p.stdout.split())
    assert "Under antagonists: cpu@others:100 — every figure below" in md.read_text()
    assert json.loads((sandbox[0] / "r.json").read_text())["context"]["antagonists"] == ["cpu@others:100"]
    # Nothing of it is left in the run's folder, nor anywhere under TMPDIR.
    assert not [f for f in (sandbox[0] / "tmp").rglob("*") if "stress-ng" in f.name]


@needs_two_cpus
def test_the_idle_stand_in_uses_no_cpu(sandbox):
    rec, p = record(sandbox, "--antagonist", "none")
    assert p.returncode == 0, p.stderr
    [a] = rec["extra"]["antagonists"]
    assert a["kind"] == "none" and a["level"] is None and a["argv"] == [] and a["version"] is None
    assert a["bogo_ops"] is None
    # Idle in pause(): its whole life's CPU (fork and exit included) is a few milliseconds at most.
    assert a["cpu_s"] < 0.02 and a["window_cpu_s"] < 0.01
    assert a["run_s"] > 0.2


@pytest.mark.parametrize("given,says", [
    ("bogus", "unknown KIND 'bogus'"),
    ("cpu@nowhere", "unknown WHERE 'nowhere'"),
    ("cpu:0", "a number from 1 to 100"),
    ("cpu:101", "a number from 1 to 100"),
    ("cpu:lots", "a number from 1 to 100"),
    ("cache:2", "cache takes no LEVEL"),
    ("none:1", "none takes no LEVEL"),
    ("", "unknown KIND ''"),
    ("quota@same:20", "quota acts on the sides themselves and takes no WHERE"),
    ("quota:0", "a number from 1 to"),
])
def test_bad_input_is_one_line_exit_2_and_creates_nothing(sandbox, given, says):
    out = sandbox[0] / "never.json"
    p = run(sandbox, *POINT, "--antagonist", "cpu@others", "--antagonist", given, "--json", out)
    assert p.returncode == 2
    lines = [line for line in p.stderr.splitlines() if not line.startswith("warning: ")]
    assert len(lines) == 1 and says in lines[0] and "--antagonist" in lines[0], p.stderr
    assert not out.exists()
    assert not list((sandbox[0] / "tmp").iterdir())  # no run folder, no state folder


def lacking_class():
    """A WHERE class this machine lacks for a side on FIRST: smt without an SMT sibling, cross_numa
    on one node (None when it has both)."""
    try:
        siblings = open(f"/sys/devices/system/cpu/cpu{FIRST}/topology/thread_siblings_list").read()
    except OSError:
        siblings = str(FIRST)
    if "," not in siblings and "-" not in siblings:
        return "smt", "has no SMT sibling"
    nodes = [n for n in os.listdir("/sys/devices/system/node") if n.startswith("node")] \
        if os.path.isdir("/sys/devices/system/node") else []
    if len(nodes) <= 1:
        return "cross_numa", "one node"
    return None


@needs_stress_ng
def test_a_class_this_machine_lacks_skips_the_point_with_its_reason(sandbox):
    lacking = lacking_class()
    if not lacking:
        pytest.skip("this machine has SMT siblings and NUMA nodes")
    where, says = lacking
    rec, p = record(sandbox, "--antagonist", f"cpu@{where}")
    assert p.returncode == 0, p.stderr
    assert rec["status"] == "skipped" and f"antagonist @{where}" in rec["error"] and says in rec["error"]


@needs_stress_ng
def test_sides_left_unpinned_skip_a_class_relative_to_them(sandbox):
    out = sandbox[0] / "r.json"
    p = run(sandbox, "messaging/pipe", "-p", "placement=unpinned", "-p", "pattern=roundtrip", "--duration", "0.1",
            "--warmup", "0", "--repetitions", "1", "--antagonist", "cpu@same", "--json", out)
    assert p.returncode == 0, p.stderr
    [rec] = json.loads(out.read_text())["benchmarks"]
    assert rec["status"] == "skipped" and "the sides are unpinned" in rec["error"]


@needs_two_cpus
def test_without_stress_ng_the_point_is_skipped_with_the_install_hint(sandbox, tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    # Found neither on PATH nor in the sbin folders find_program also looks in.
    if any(os.access(f"{d}/stress-ng", os.X_OK) for d in ("/usr/sbin", "/sbin")):
        pytest.skip("stress-ng is in an sbin folder, which ipclab always searches")
    rec, p = record(sandbox, "--antagonist", "cpu@others", env={"PATH": str(empty)})
    assert p.returncode == 0, p.stderr
    assert rec["status"] == "skipped"
    assert "stress-ng is not installed (apt-get install stress-ng" in rec["error"]


def test_each_repetition_is_paired_with_a_quiet_one_in_abba_order_and_the_median_says_the_inflation(sandbox):
    # The idle stand-in: the A/A check's shape (its figures are this machine's noise, not asserted).
    out = sandbox[0] / "r.json"
    args = [a if a != "1" else "4" for a in POINT]  # four repetitions: four pairs
    p = run(sandbox, *args, "--antagonist", "none", "--json", out)
    assert p.returncode == 0, p.stderr
    assert "each repetition is paired with a quiet one (ABBA)" in p.stderr, p.stderr
    doc = json.loads(out.read_text())
    assert doc["context"]["quiet_pairs"] is True
    its = [r for r in doc["benchmarks"] if r.get("run_type") != "aggregate"]
    (agg,) = [r for r in doc["benchmarks"] if r.get("run_type") == "aggregate"]
    assert [r["extra"]["noise_pair"]["order"] for r in its] == ["quiet, noisy", "noisy, quiet"] * 2
    for r in its:
        q = r["extra"]["noise_pair"]["quiet"]
        assert q["status"] == "ok" and q["time_per_op_ns"] > 0 and q["ops_per_s"] > 0, q
        assert q["latency_ns"]["p50"] <= q["latency_ns"]["p99"] <= q["latency_ns"]["p999"], q
        assert [a["kind"] for a in r["extra"]["antagonists"]] == ["none"], "the noisy one ran under it"
    inf = agg["extra"]["inflation"]
    assert inf["pairs"] == 4, inf
    for k in ("time_per_op", "p50", "p99", "p999", "throughput"):
        lo, hi = inf[k]["ci"]
        assert 0 < lo <= inf[k]["ratio"] <= hi, (k, inf[k])
    # The time per op's ratio is the median of the pairs' own.
    ratios = sorted(r["time_per_op_ns"] / r["extra"]["noise_pair"]["quiet"]["time_per_op_ns"] for r in its)
    assert inf["time_per_op"]["ratio"] == pytest.approx((ratios[1] + ratios[2]) / 2)


def test_unpaired_runs_no_quiet_repetition_and_needs_an_antagonist(sandbox):
    rec, p = record(sandbox, "--antagonist", "none", "--unpaired")
    assert p.returncode == 0, p.stderr
    assert "noise_pair" not in rec["extra"] and "paired with a quiet one" not in p.stderr
    p = run(sandbox, *POINT, "--unpaired", "--json", sandbox[0] / "never.json")
    assert p.returncode == 2 and p.stderr.strip().startswith("ipclab: --unpaired pairs nothing without"), p.stderr
    assert not (sandbox[0] / "never.json").exists()


@needs_stress_ng
@needs_two_cpus
@pytest.mark.parametrize("kind", ["cpu", "cache", "membw", "irq", "fork", "io"])
def test_every_stress_ng_kind_runs_at_its_default_level_and_makes_progress(sandbox, kind):
    # Its default LEVEL as stress-ng takes it (irq's million Hz once went out as "1e+06", refused).
    rec, p = record(sandbox, "--antagonist", kind, "--unpaired")
    assert p.returncode == 0 and rec["status"] == "ok", (p.stderr, rec.get("error"))
    (a,) = rec["extra"]["antagonists"]
    assert a["kind"] == kind and a["bogo_ops_per_s"] > 0, a
    assert all("e+" not in arg for arg in a["argv"]), a["argv"]
