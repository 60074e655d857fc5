import random

import pytest

import fixtures
from ipclab_report.cli import main
from ipclab_report.compare import compare_files, compare_samples, min_p_value

SUITES = ["anchors", "runtime"]
SLOWED = "runtime/asio/bench:spawn/n:131072"


def _pair(tmp_path, reps=5, speed=None, base_seed=1, new_seed=2, **kw):
    base = fixtures.write(tmp_path / "base.json", fixtures.make_result(suites=SUITES, repetitions=reps, seed=base_seed, samples=20, **kw))
    new = fixtures.write(tmp_path / "new.json", fixtures.make_result(suites=SUITES, repetitions=reps, seed=new_seed,
                                                                     samples=20, speed=speed, **kw))
    return base, new


def test_min_p_value_of_the_exact_test():
    assert min_p_value(3, 3) == pytest.approx(0.1)
    assert min_p_value(4, 4) == pytest.approx(2 / 70)
    assert min_p_value(2, 10) == pytest.approx(2 / 66)
    assert min_p_value(0, 5) == 1.0


def test_identical_distributions_are_the_same():
    # Even the 1-in-20 draws where the U test alone says p < 0.05 stay "same": the threshold guards.
    rng = random.Random(3)
    verdicts = set()
    for _ in range(200):
        base = [100 * (1 + rng.gauss(0, 0.02)) for _ in range(10)]
        new = [100 * (1 + rng.gauss(0, 0.02)) for _ in range(10)]
        verdicts.add(compare_samples("x", base, new).verdict)
    assert verdicts == {"same"}
    assert compare_samples("y", [5.0] * 5, [5.0] * 5).verdict == "same"


def test_clear_slowdown_and_speedup():
    base = [100, 101, 99, 100.5, 100.2]
    slow = compare_samples("x", base, [130, 131, 129, 130.4, 132])
    assert slow.verdict == "slower" and slow.regression and slow.p_value < 0.05
    assert slow.ratio == pytest.approx(130.4 / 100.2)
    fast = compare_samples("x", base, [70, 71, 69, 70.5, 72])
    assert fast.verdict == "faster" and not fast.regression


def test_significant_but_within_threshold_is_same():
    c = compare_samples("x", [100, 100.1, 99.9, 100.05, 99.95], [103, 103.1, 102.9, 103.05, 102.95], threshold_pct=5)
    assert c.p_value < 0.05 and c.verdict == "same"
    assert compare_samples("x", [100, 100.1, 99.9, 100.05, 99.95], [103, 103.1, 102.9, 103.05, 102.95],
                           threshold_pct=2).verdict == "slower"


def test_beyond_threshold_but_noisy_is_not_significant():
    c = compare_samples("x", [100, 60, 140, 90, 110], [120, 70, 150, 100, 130])
    assert c.verdict.startswith("same (not significant") and not c.regression


def test_too_few_repetitions_claim_nothing():
    c = compare_samples("x", [100, 101], [200, 201])
    assert c.verdict == "slower? (too few repetitions)" and not c.regression
    c = compare_samples("x", [100, 101, 100.5], [200, 201, 199])  # 3 vs 3: best p is 0.1
    assert c.verdict == "slower? (too few repetitions)" and not c.regression
    assert compare_samples("x", [100], [101]).verdict == "same"


def test_files_identical_runs_exit_0(tmp_path, capsys):
    base, new = _pair(tmp_path)
    r = compare_files(base, new)
    assert r.rows and not r.regressions
    assert {c.verdict for c in r.rows} <= {"same"} | {c.verdict for c in r.rows if c.verdict.startswith("same")}
    assert main(["compare", base, new]) == 0
    out = capsys.readouterr().out
    assert "regression" not in out.lower() and "compared" in out


def test_files_slowed_benchmark_exit_1(tmp_path, capsys):
    base, new = _pair(tmp_path, speed={SLOWED: 1.5})
    r = compare_files(base, new)
    slowed = [c for c in r.rows if c.regression]
    assert [c.name for c in slowed] == [SLOWED]
    assert slowed[0].ratio == pytest.approx(1.5, rel=0.1)
    assert main(["compare", base, new, "--threshold", "10"]) == 1
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith(SLOWED))
    assert line.rstrip().endswith("slower") and "REGRESSION: 1 benchmark" in out
    assert main(["compare", base, new, "--threshold", "60"]) == 0


def test_files_too_few_reps_exit_0(tmp_path, capsys):
    base, new = _pair(tmp_path, reps=2, speed={SLOWED: 1.5})
    assert main(["compare", base, new]) == 0
    assert "slower? (too few repetitions)" in capsys.readouterr().out


def test_failed_unmatched_and_aggregate_only(tmp_path, capsys):
    doc_b = fixtures.make_result(suites=["anchors", "servers"], repetitions=4, samples=10)
    doc_n = fixtures.make_result(suites=["anchors", "experimental"], repetitions=4, samples=10, seed=9)
    for b in doc_n["benchmarks"]:
        if b["name"] == "anchors/getpid":
            b.update(status="failed", error="checksum mismatch")
    # NEW keeps only aggregates: samples come from spread.values
    doc_n["benchmarks"] = [b for b in doc_n["benchmarks"] if b["run_type"] == "aggregate" or b["name"] == "anchors/getpid"]
    base = fixtures.write(tmp_path / "b.json", doc_b)
    new = fixtures.write(tmp_path / "n.json", doc_n)
    r = compare_files(base, new)
    names = {c.name for c in r.rows}
    assert "anchors/getpid" not in names and {"anchors/null", "anchors/clock_gettime"} <= names
    assert all(c.new_n == 4 for c in r.rows)
    assert ("anchors/getpid", "NEW", "failed", "checksum mismatch") in r.failed
    assert "servers/epoll_lt/clients:2000" in r.only_base and "experimental/quantum/qubits:3" in r.only_new
    assert main(["compare", base, new]) == 0
    out = capsys.readouterr().out
    assert "failed in NEW: anchors/getpid — checksum mismatch (not compared)" in out
    assert "only in BASE: servers/blocking/clients:2000" in out
    assert "only in NEW: experimental/quantum/qubits:3" in out
