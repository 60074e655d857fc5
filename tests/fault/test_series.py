"""Time series, flags, confidence intervals and --repetitions auto, end to end: a fault that makes
a run's rate swing between two levels is flagged bimodal, one that slows it down over the window
non_steady; --repetitions auto stops at its minimum when the target is easy and records a miss
when it cannot be met.

    IPCLAB_BIN=build/release/ipclab python3 -m pytest -q -p no:cacheprovider tests/fault/test_series.py
"""
import json

PIPE = ["messaging/pipe", "-p", "size=64", "--warmup", "0.05"]


def records(path):
    return json.loads(path.read_text())["benchmarks"]


def iterations(path):
    return [r for r in records(path) if r["run_type"] == "iteration"]


def aggregate(path):
    aggs = [r for r in records(path) if r["run_type"] == "aggregate"]
    assert len(aggs) == 1, aggs
    return aggs[0]


def check_series(rec):
    """The shape of a record's series, and its slices' ops adding up to the record's exactly."""
    s = rec["series"]
    assert s["slices"] == 20
    assert len(s["t_ns"]) == 21 and s["t_ns"][0] == 0
    assert all(a < b for a, b in zip(s["t_ns"], s["t_ns"][1:])), s["t_ns"]
    for key in ("ops", "rate_per_s", "p50_ns", "p99_ns", "flags"):
        assert isinstance(s[key], list), key
    assert len(s["ops"]) == len(s["rate_per_s"]) == len(s["p50_ns"]) == 20
    assert sum(s["ops"]) == rec["ops"]
    assert set(s["trend"]) == {"slope_pct", "p"}
    return s


def test_a_periodic_stall_is_bimodal(lab):
    # The consumer freezes 50 ms of every 200 ms: of each four of the window's 50 ms slices, two
    # hold no stall and one loses at least half its time to it, wherever the stall falls against
    # the slice boundaries. (25 ms of every 100 ms split evenly over two slices when the window
    # opened half-way through a stall, leaving no slice apart: about half the runs here missed.)
    out = lab.work / "r.json"
    r = lab.run("run", *PIPE, "-p", "pattern=throughput", "--duration", "1", "--repetitions", "3",
                "--json", out, env={"IPCLAB_FAULT": "stall:pipe:consumer:50:200"})
    assert r.returncode == 0, r.stderr
    flagged = [check_series(i)["flags"] for i in iterations(out)]
    assert any("bimodal" in f for f in flagged), [i["series"]["clusters"] for i in iterations(out)]
    # The median carries it when most repetitions do (2 of 3).
    most = 2 * sum("bimodal" in f for f in flagged) > len(flagged)
    assert ("bimodal" in aggregate(out)["flags"]) == most, (flagged, aggregate(out)["flags"])


def test_a_ramp_is_non_steady(lab):
    # Every receive waits from 0 at the window's start up to 20 µs at its end: the rate falls to a
    # fraction of its start.
    out = lab.work / "r.json"
    r = lab.run("run", *PIPE, "-p", "pattern=throughput", "--duration", "0.5", "--repetitions", "1",
                "--json", out, env={"IPCLAB_FAULT": "ramp:pipe:20000"})
    assert r.returncode == 0, r.stderr
    (it,) = iterations(out)
    s = check_series(it)
    assert "non_steady" in s["flags"], s["trend"]
    assert s["trend"]["slope_pct"] < -10, s["trend"]


def test_a_steady_run_has_a_series_and_flags(lab):
    # No fault: normally no flag, but this machine's own noise may raise one now and then, so only
    # their shape is asserted; the aggregate carries its intervals.
    out = lab.work / "r.json"
    r = lab.run("run", *PIPE, "-p", "pattern=roundtrip", "-p", "placement=same", "--duration", "0.2",
                "--repetitions", "3", "--json", out)
    assert r.returncode == 0, r.stderr
    for it in iterations(out):
        check_series(it)
        # Round trips are timed: a slice has its quantiles unless the machine took it whole.
        p50 = it["series"]["p50_ns"]
        assert all(p is None or isinstance(p, int) for p in p50), p50
        assert sum(isinstance(p, int) for p in p50) >= 15, p50
    agg = aggregate(out)
    # The aggregate's flags: the series flags most of its repetitions carry (each once, sorted);
    # bimodal repetitions need six or more, so none with three.
    its = iterations(out)
    want = sorted({f for it in its for f in it["series"]["flags"]
                   if 2 * sum(f in i["series"]["flags"] for i in its) > len(its)})
    assert agg["flags"] == want, (agg["flags"], want)
    assert "series" not in agg
    ci = agg["ci"]
    assert ci["level"] == 0.95 and ci["method"] == "bootstrap-percentile" and ci["resamples"] == 2000
    for key in ("time_per_op_ns", "p50_ns", "p99_ns"):
        lo, hi = ci[key]
        assert lo <= hi, (key, ci[key])
    lo, hi = ci["time_per_op_ns"]
    assert lo <= agg["time_per_op_ns"] <= hi, (ci, agg["time_per_op_ns"])


def test_auto_repetitions_stop_at_five_when_the_target_is_easy(lab):
    out = lab.work / "r.json"
    # Repetitions of 0.2 s, so that the machine taking a few ms from one cannot move it by half.
    r = lab.run("run", "harness/null", "--duration", "0.2", "--warmup", "0", "--repetitions", "auto",
                "--ci-target", "50", "--json", out)
    assert r.returncode == 0, r.stderr
    assert len(iterations(out)) == 5
    ra = aggregate(out)["repetitions_auto"]
    assert ra["met"] is True and ra["repetitions"] == 5 and ra["target_pct"] == 50 and ra["cap"] == 30, ra
    assert 0 <= ra["halfwidth_pct"] <= 50, ra
    assert json.loads(out.read_text())["context"]["repetitions"] == "auto"


def test_auto_repetitions_record_a_target_not_met(lab):
    out = lab.work / "r.json"
    r = lab.run("run", "harness/null", "--duration", "0.02", "--warmup", "0", "--repetitions", "auto",
                "--max-repetitions", "5", "--ci-target", "0.001", "--interleave", "--json", out)
    assert r.returncode == 0, r.stderr
    assert len(iterations(out)) == 5
    ra = aggregate(out)["repetitions_auto"]
    assert ra["met"] is False and ra["repetitions"] == 5 and ra["cap"] == 5, ra
    assert ra["halfwidth_pct"] > 0.001, ra
