"""Adaptive waits calibrated in time (core/machine/waits.hpp), by their behaviour: with both sides on one
CPU an adaptive wait does not spin (a spinner keeps its peer from running: 20-40x slower than a
futex before the calibration), so its round trip stays within 2x of a wait that sleeps at once;
across CPUs it spins for what a wake-up costs here, and the record says what it measured.
Interleaved runs, medians of repetitions: the bounds are ones a loaded machine holds.
"""
import json
import os
import subprocess

import pytest

BINARY = os.environ.get("IPCLAB_BIN", "")
RUN = ["--duration", "0.3", "--warmup", "0.05", "--repetitions", "3", "--interleave"]


def run(tmp_path, mech, *params):
    out = tmp_path / "r.json"
    args = [BINARY, "run", mech, *[x for p in params for x in ("-p", p)], *RUN, "--json", str(out)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())["benchmarks"]


def median_p50(benchmarks, wait):
    p50 = sorted(b["latency_ns"]["p50"] for b in benchmarks
                 if b.get("run_type", "iteration") == "iteration" and b["params"]["wait"] == wait)
    assert len(p50) == 3, benchmarks
    return p50[1]


@pytest.mark.parametrize("mech,waits", [("messaging/shm_spsc", "adaptive,futex"),
                                        ("messaging/shm_mpmc", "adaptive,futex"),
                                        ("pingpong/thread", "adaptive,futex")])
def test_an_adaptive_wait_on_one_cpu_does_not_spin_for_its_peer(tmp_path, mech, waits):
    params = ["placement=same", f"wait={waits}"]
    if mech.startswith("messaging/"):
        params += ["pattern=roundtrip", "size=64"]
    bs = run(tmp_path, mech, *params)
    adaptive, futex = median_p50(bs, "adaptive"), median_p50(bs, "futex")
    assert adaptive <= 2 * futex, f"adaptive p50 {adaptive} ns, futex {futex} ns"
    budget = next(b for b in bs if b["params"]["wait"] == "adaptive")["extra"]["wait_budget"]
    assert budget["same_cpu"] is True and budget["spins"] == 0, budget
    assert budget["pause_ns"] > 0 and budget["wake_same_ns"] > 0 and budget["yield_ns"] > 0, budget


def test_across_cpus_the_budget_is_what_a_wake_up_costs_here(tmp_path):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: nothing runs across CPUs here")
    bs = run(tmp_path, "messaging/shm_spsc", "placement=cross", "wait=adaptive", "pattern=roundtrip", "size=64")
    budget = bs[0]["extra"]["wait_budget"]
    assert budget["same_cpu"] is False, budget
    assert budget["wake_cross_ns"] > 0 and budget["spins"] > 0, budget
    # The spins take as long as the measured wake-up (pause_ns x spins, to rounding).
    assert abs(budget["spin_ns"] - budget["wake_cross_ns"]) <= budget["pause_ns"] + 1, budget
