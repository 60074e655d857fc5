"""No figure from a window too short to hold it (issue 52, docs/methodology.md): the runtime suite's
count-based benchmarks repeat their `n` until the measured window holds --duration (extra.passes),
a count-based peer is run again with a larger `n` until its own window does (extra.sized), each
carries its timed batches' means per op as its latency (kind batch_mean), and a
record whose window is shorter than the machine's floor (context.window_floor) is flagged
`short_window`, with the warning that says why and what to do. Every assertion is on the records'
own measured windows, not on the test's timing.

Run by ctest (`runtime.window`) with the binary in IPCLAB_BIN; by hand:
    IPCLAB_BIN=build/release/ipclab python3 -m pytest -q tests/runtime/test_window.py
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ipclab_fixture import BINARY, ipclab  # noqa: E402,F401  (the fixture: run ipclab, get its records)


def _run(tmp_path, *args):
    """`ipclab run args --json` with private state: (exit code, stdout + stderr, the whole document)."""
    if not BINARY or not os.access(BINARY, os.X_OK):
        pytest.skip("IPCLAB_BIN does not name the ipclab binary")
    (tmp_path / "tmp").mkdir(mode=0o700, exist_ok=True)
    out = tmp_path / "r.json"
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"), XDG_STATE_HOME=str(tmp_path / "state"))
    r = subprocess.run([BINARY, "run", *args, "--json", str(out)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout + r.stderr, json.loads(out.read_text()) if out.exists() else {}


def _assert_batch_means(rec):
    """A runtime record's latency is its timed batches' means per op: a non-empty histogram whose
    mean is the record's time per op, within the rounding of each batch to whole ns and the time
    between batches (the record's figures against each other, not a timing test)."""
    lat = rec["latency_ns"]
    assert lat["count"] > 0 and sum(lat["histogram"]["counts"]) == lat["count"], lat
    per_op = rec["wall_s"] * 1e9 / rec["ops"]
    assert per_op / 2 - 1 <= lat["mean"] <= 2 * per_op + 1, (lat["mean"], per_op)


def test_a_runtime_record_under_the_default_duration_holds_the_duration(tmp_path):
    # No --duration: the run's own (the context says what it ran), one repetition. The default n
    # (65,536 switches) once made a 0.1-0.25 ms window; the harness repeats it to fill the window.
    rc, err, doc = _run(tmp_path, "runtime/switch_ipcrt", "-p", "drive=block_on", "--repetitions", "1")
    assert rc == 0, err
    duration = doc["context"]["duration_s"]
    assert duration >= 0.2
    [rec] = [b for b in doc["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
    assert rec["status"] == "ok", rec
    assert rec["wall_s"] >= duration, (rec["wall_s"], duration)
    passes = rec["extra"]["passes"]
    assert passes > 1 and rec["ops"] == passes * 65536
    # Each pass is timed in batches of extra.batch_units switches: each batch's mean per op is one
    # sample of the latency (kind batch_mean).
    lat = rec["latency_ns"]
    units = rec["extra"]["batch_units"]
    assert lat["kind"] == "batch_mean" and lat["count"] == passes * -(-65536 // units), (lat, units)
    _assert_batch_means(rec)
    assert "short_window" not in rec.get("flags", [])
    floor = doc["context"]["window_floor"]
    assert 0 < floor["floor_s"] <= duration
    assert floor["floor_s"] == max(floor["timer_floor_s"], floor["scheduler_floor_s"])
    assert floor["tick_s"] > 0 and floor["clock_read_ns"] > 0


def test_a_record_from_a_too_short_window_is_flagged_with_its_remedy(tmp_path):
    # A window of 1 ms is under any floor this machine derives (its tick alone is 1-10 ms): flagged,
    # with a warning naming the window, the floor and the remedy; the median inherits the flag.
    rc, err, doc = _run(tmp_path, "runtime/switch_ipcrt", "-p", "drive=block_on", "--duration", "0.001",
                        "--warmup", "0", "--repetitions", "2")
    assert rc == 0, err
    floor = doc["context"]["window_floor"]["floor_s"]
    iters = [b for b in doc["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
    [agg] = [b for b in doc["benchmarks"] if b.get("run_type") == "aggregate"]
    assert len(iters) == 2
    for rec in iters:
        assert rec["status"] == "ok", rec
        assert rec["wall_s"] < floor
        assert "short_window" in rec["flags"]
        [w] = [w for w in rec["warnings"] if "under the" in w["message"]]
        assert f"{floor * 1e3:.3g} ms" in w["message"] and "--duration" in w["remedy"]
    assert "short_window" in agg["flags"]
    assert "ok, short window" in err   # the console's status says it


def test_a_count_based_peer_is_run_again_until_its_window_holds_the_duration(tmp_path, ipclab):
    # Go's switch at its default n (65,536 Gosched calls, well under 50 ms): run again with n grown.
    rc, err, recs = ipclab("runtime/switch_go", "-p", "drive=block_on", "--duration", "0.05", "--warmup", "0")
    assert rc == 0, err
    [rec] = recs
    if rec["status"] == "skipped":
        pytest.skip(rec.get("error", "the Go peer is not built"))
    assert rec["status"] == "ok", rec
    assert rec["wall_s"] >= 0.05, rec["wall_s"]
    sized = rec["extra"]["sized"]
    assert sized["n_asked"] == 65536 and sized["n_ran"] > 65536 and sized["runs"] >= 2
    assert rec["ops"] == sized["n_ran"]
    # The peer timed its n in batches (extra.batch_units each) and reported their means.
    assert rec["latency_ns"]["kind"] == "batch_mean"
    assert 1 <= rec["latency_ns"]["count"] <= rec["ops"] / rec["extra"]["batch_units"] + 1
    _assert_batch_means(rec)


def test_later_repetitions_start_from_the_count_the_first_found(tmp_path):
    # As google/benchmark keeps the iteration count its first repetition found: the later ones of
    # the point start from it (one run each, unless the rate fell), not from the asked n.
    rc, err, doc = _run(tmp_path, "runtime/switch_go", "-p", "drive=block_on", "--duration", "0.05", "--warmup",
                        "0", "--repetitions", "3")
    assert rc == 0, err
    iters = [r for r in doc["benchmarks"] if r.get("run_type", "iteration") == "iteration"]
    if iters[0]["status"] == "skipped":
        pytest.skip(iters[0].get("error", "the Go peer is not built"))
    assert len(iters) == 3 and all(r["status"] == "ok" for r in iters), iters
    first = iters[0]["extra"]["sized"]
    assert first["n_first"] == first["n_asked"] == 65536 and first["runs"] >= 2
    for rec in iters[1:]:
        sized = rec["extra"]["sized"]
        assert sized["n_first"] > sized["n_asked"], sized
        assert rec["wall_s"] >= 0.05 and rec["ops"] == sized["n_ran"]
