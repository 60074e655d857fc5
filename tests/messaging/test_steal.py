"""Steal time end to end (docs/methodology.md, "Steal time"): every record of a real run carries
the steal of its window's CPUs — the pinned CPU with placement=same, every CPU the process may use
unpinned, a peer that times its own window over its whole run — with sane values, consistent with
its own figures, in the JSON and the CSV; a flagged repetition carries its warning; `ipclab env`
says what runs the vCPUs and how much steal they saw since boot, as /proc/stat says.

Run by ctest (messaging.steal) with the binary in IPCLAB_BIN; by hand:
    IPCLAB_BIN=build/release/ipclab python3 -m pytest -q tests/messaging/test_steal.py
"""
import csv
import json
import os
import subprocess
import tempfile

import pytest

BINARY = os.environ.get("IPCLAB_BIN", "")
TICK = 1.0 / os.sysconf("SC_CLK_TCK")
FLAG_SHARE = 0.05  # kStealFlagShare

pytestmark = pytest.mark.skipif(not BINARY, reason="IPCLAB_BIN is not set (ctest sets it)")


def run(*args):
    with tempfile.TemporaryDirectory() as d:
        out, table, md = (os.path.join(d, f) for f in ("r.json", "r.csv", "r.md"))
        p = subprocess.run([BINARY, "run", *args, "--duration", "0.3", "--warmup", "0.05", "--repetitions", "2",
                            "--json", out, "--csv", table, "--markdown", md],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        return json.load(open(out)), list(csv.DictReader(open(table))), open(md).read(), p.stderr


def test_every_record_carries_the_steal_of_its_cpus():
    doc, rows, md, stderr = run("messaging/pipe", "-p", "pattern=roundtrip", "-p", "size=64",
                                "-p", "placement=same,unpinned")
    allowed = sorted(os.sched_getaffinity(0))
    records = doc["benchmarks"]
    assert len(records) == 6 and all(r["status"] == "ok" for r in records), records
    for r in records:
        c = r["cpu"]
        cpus = c["steal_cpus"]
        assert cpus == ([allowed[0]] if r["params"]["placement"] == "same" else allowed), (r["name"], cpus)
        assert c["steal_s"] >= 0 and c["steal_per_op_ns"] >= 0
        assert 0 <= c["steal_share"] <= 1
        if r["run_type"] != "iteration":
            assert "warnings" not in r
            continue
        # An iteration's figures are its window's: per op, and over its wall time x the CPUs read.
        assert c["steal_per_op_ns"] == pytest.approx(c["steal_s"] * 1e9 / r["ops"])
        capacity = r["wall_s"] * len(cpus)
        assert c["steal_share"] == pytest.approx(min(1.0, c["steal_s"] / capacity))
        # Steal comes in whole ticks of the CPUs read.
        assert c["steal_s"] / TICK == pytest.approx(round(c["steal_s"] / TICK), abs=1e-6)
        # Flagged exactly when even a tick less per CPU is above 5%, and then with its warning.
        flagged = "steal" in r.get("flags", [])
        assert flagged == ((c["steal_s"] - len(cpus) * TICK) / capacity > FLAG_SHARE), r
        assert ("warnings" in r) == flagged
        if flagged:
            w = r["warnings"][0]
            assert f'{100 * c["steal_share"]:.1f}%' in w["message"] and "ipclab ab" in w["remedy"]
            assert f'{r["name"]} (repetition {r["repetition"]}): the hypervisor' in stderr
            assert f'(repetition {r["repetition"]}): the hypervisor' in md
            assert "steal" in next(a for a in records if a["run_type"] == "aggregate" and a["name"] == r["name"])["flags"]
    # The CSV's last columns are the same figures.
    assert list(rows[0].keys())[-3:] == ["steal_s", "steal_per_op_ns", "steal_share"]
    for row, r in zip(rows, records):
        for k in ("steal_s", "steal_per_op_ns", "steal_share"):
            assert float(row[k]) == pytest.approx(r["cpu"][k], rel=1e-5, abs=1e-12)


def test_a_peer_that_times_its_own_window_carries_its_runs_share():
    # The Go runtime peer times its n switches itself: its steal is read over its whole run.
    doc, rows, _, _ = run("runtime/switch_go", "-p", "n=20000")
    r = doc["benchmarks"][0]
    if r["status"] == "skipped":
        pytest.skip(r["error"])
    assert r["status"] == "ok", r
    c = r["cpu"]
    assert c["steal_cpus"] and 0 <= c["steal_share"] <= 1 and c["steal_s"] >= 0, r
    assert c["steal_share"] == pytest.approx(min(1.0, c["steal_s"] / (r["wall_s"] * len(c["steal_cpus"])))), r
    assert "whole run" in r["extra"]["steal_source"], r


def read_proc_stat_cpu_line():
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu "):
                return [int(x) for x in line.split()[1:]]
    return []


def test_env_says_what_runs_the_vcpus():
    p = subprocess.run([BINARY, "env", "--json"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    ctx = json.loads(p.stdout)
    v = ctx["vcpus"]
    assert v["emulation"] in ("none", "kvm", "tcg", "other")
    messages = " ".join(w["message"] for w in ctx["warnings"])
    assert ("QEMU's translator (TCG" in messages) == (v["emulation"] == "tcg")
    with open("/proc/cpuinfo") as f:
        hypervisor_flag = any(ln.startswith("flags") and " hypervisor" in ln for ln in f)
    if hypervisor_flag:
        assert v["emulation"] != "none" and v["hypervisor"]
    f = read_proc_stat_cpu_line()
    if len(f) < 8:
        assert v["steal_since_boot"] is None and v["overcommitted"] is None
        return
    s = v["steal_since_boot"]
    # As /proc/stat says now (a moment after ipclab read it: its figures only grow).
    busy = f[0] + f[1] + f[2] + f[5] + f[6] + f[7]
    assert 0 <= s["steal_s"] <= f[7] * TICK and 0 < s["busy_s"] <= busy * TICK
    assert s["share_of_busy"] == pytest.approx(s["steal_s"] / s["busy_s"])
    assert s["share_of_busy"] == pytest.approx(f[7] / busy, abs=0.01)
    assert v["overcommitted"] == (s["share_of_busy"] > FLAG_SHARE)
    assert ("overcommitted" in messages) == v["overcommitted"]
    # The readable table says it too.
    text = subprocess.run([BINARY, "env"], capture_output=True, text=True, timeout=120).stdout
    assert f'vCPUs        {v["emulation"]}' in text


def test_where_the_time_went_irq_softirq_and_the_run_queue_wait():
    # A busy loop pinned to the sides' CPU: the two sides of a same-CPU round trip wait on the run
    # queue for it (and for each other), so their run-queue wait is above zero; the CPU's interrupt
    # time is read beside its steal, in ticks, and the aggregate carries the medians per op.
    cpu = sorted(os.sched_getaffinity(0))[0]
    hog = subprocess.Popen(["python3", "-c", f"import os; os.sched_setaffinity(0, {{{cpu}}})\nwhile True: pass"])
    try:
        doc, rows, md, stderr = run("messaging/pipe", "-p", "pattern=roundtrip", "-p", "size=64",
                                    "-p", "placement=same", "--cpus", str(cpu))
    finally:
        hog.kill()
        hog.wait()
    for r in doc["benchmarks"]:
        c = r["cpu"]
        for k in ("irq_s", "softirq_s"):
            assert c[k] is not None and 0 <= c[k] <= r["wall_s"] + 2 * TICK, (k, c)
        assert c["run_queue_wait_s"] > 0, c
        # Two threads over the window: neither can wait longer than the window (a tick of slack for
        # the reads at its ends).
        assert c["run_queue_wait_s"] <= 2 * r["wall_s"] + 2 * TICK, (c, r["wall_s"])
        assert c["run_queue_wait_per_op_ns"] == pytest.approx(c["run_queue_wait_s"] * 1e9 / r["ops"]), c
    agg = [r for r in doc["benchmarks"] if r.get("run_type") == "aggregate"][0]
    its = [r for r in doc["benchmarks"] if r.get("run_type") != "aggregate"]
    per_op = sorted(r["cpu"]["run_queue_wait_s"] / r["ops"] for r in its)
    assert agg["cpu"]["run_queue_wait_s"] / agg["ops"] == pytest.approx((per_op[0] + per_op[1]) / 2), agg["cpu"]
