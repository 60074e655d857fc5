import math
import random
import re

import pytest

import fixtures
from ipclab_report.cli import main
from ipclab_report.compare import Point, compare_files, compare_samples, min_p_value, noise_band
from ipclab_report.load import load, samples

SUITES = ["anchors", "runtime"]
SLOWED = "runtime/spawn_asio/n:131072"


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
    # The table names it as the console does: mechanism and the parameters that vary.
    line = next(ln for ln in out.splitlines() if ln.startswith(r.short[SLOWED] + " "))
    assert line.rstrip().endswith("slower") and "REGRESSION: 1 benchmark" in out
    assert main(["compare", base, new, "--threshold", "60"]) == 0


def test_files_too_few_reps_exit_0(tmp_path, capsys):
    base, new = _pair(tmp_path, reps=2, speed={SLOWED: 1.5})
    assert main(["compare", base, new]) == 0
    out = capsys.readouterr().out
    assert "slower? (too few repetitions)" in out
    assert re.search(r"^TOO FEW REPETITIONS: \d+ benchmark\(s\) moved beyond the band, but 2 repetition\(s\) a side "
                     r"cannot reach p < 0.05 .*--repetitions 5 or more", out, re.M), out


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


# --- the between-run noise model, on a synthetic 2-vCPU guest with known answers -----------------
#
# Each run draws one factor per benchmark for "the machine's state during this benchmark":
# exp(N(0, sigma)) with sigma by placement (same-CPU steady, cross-CPU 2-5x between runs, as on
# the reference KVM guest); the repetitions within a run scatter only 2% around it. The U test
# alone then calls most cross-CPU benchmarks different; the noise band must not.

MECHS = ("pipe", "unix_stream", "tcp", "shm_spsc")
SIGMA = {"same": 0.06, "cross": 0.5}


def _guest_points():
    pts = [("anchors", "c2c", "cross", 120), ("anchors", "futex", "same", 6500), ("anchors", "futex", "cross", 85000),
           ("anchors", "syscall", "same", 260), ("harness", "null", "same", 2.2)]
    for mech in MECHS:
        for placement in ("same", "cross"):
            for pattern, ns in (("throughput", 900), ("roundtrip", 90000)):
                for size in (64, 8192):
                    pts.append(("messaging", mech, placement, ns * (1 + size / 8192)))
                    pts[-1] = pts[-1] + ({"pattern": pattern, "size": size},)
    return [p if len(p) == 5 else p + ({},) for p in pts]


def _name(suite, mech, placement, params):
    return "/".join([suite, mech] + [f"{k}:{v}" for k, v in params.items()] + [f"placement:{placement}"])


def _guest_run(seed, factor=None, reps=5, sigma=None):
    """A result document; `factor(name, placement)` multiplies a benchmark's time (a code change)."""
    rng = random.Random(seed)
    sigma = SIGMA if sigma is None else sigma
    records = []
    for suite, mech, placement, ns, params in _guest_points():
        name = _name(suite, mech, placement, params)
        state = math.exp(rng.gauss(0, sigma[placement])) * (factor(name, placement) if factor else 1.0)
        for rep in range(reps):
            records.append({"name": name, "suite": suite, "mechanism": mech,
                            "params": dict(params, placement=placement), "run_type": "iteration",
                            "repetition": rep, "status": "ok",
                            "time_per_op_ns": ns * state * (1 + rng.gauss(0, 0.02)),
                            "placement": {"layout": placement}})
    return {"schema_version": 1, "context": {}, "benchmarks": records}


def _guest_pair(tmp_path, seed, base_factor=None, new_factor=None, sigma=None):
    base = fixtures.write(tmp_path / f"g{seed}a.json", _guest_run(2 * seed, base_factor, sigma=sigma))
    new = fixtures.write(tmp_path / f"g{seed}b.json", _guest_run(2 * seed + 1, new_factor, sigma=sigma))
    return base, new


def _old_names(doc):
    """`doc` as written before pattern=roundtrip was renamed from pattern=pingpong."""
    for b in doc["benchmarks"]:
        if b["params"].get("pattern") == "roundtrip":
            b["params"]["pattern"] = "pingpong"
            b["name"] = b["name"].replace("/pattern:roundtrip/", "/pattern:pingpong/")
    return doc


def test_an_old_file_saying_pattern_pingpong_is_compared_with_a_new_one(tmp_path):
    def slow(name, placement):
        return 30.0 if name.startswith("messaging/pipe/pattern:roundtrip/") else 1.0

    old = _old_names(_guest_run(0))
    assert sum("/pattern:pingpong/" in b["name"] for b in old["benchmarks"]) > 0
    base = fixtures.write(tmp_path / "old.json", old)
    new = fixtures.write(tmp_path / "new.json", _guest_run(1, slow))
    r = compare_files(base, new)
    # Every benchmark of the old file matched its renamed self: none only on one side.
    assert not r.only_base and not r.only_new
    assert len(r.rows) == 37
    assert not any("pingpong" in c.name for c in r.rows)
    flagged = [c.name for c in r.regressions]
    assert flagged and all(n.startswith("messaging/pipe/pattern:roundtrip/") for n in flagged), flagged


def _same(rows):
    return [c for c in rows if c.verdict.startswith("same")]


def test_noise_band_pieces_known_answers():
    def pt(name, placement, mech, r, anchor=False):
        return Point(name=name, placement=placement, mechanism=mech, anchor=anchor, log_ratio=r)

    target = pt("m/x/1", "cross", "m/x", 0.0)
    own = [pt(f"m/x/{i}", "cross", "m/x", 3.0) for i in range(2, 8)]     # its own mechanism: ignored
    other = [pt(f"m/o{i}/1", "cross", f"m/o{i}", r) for i, r in enumerate((0.1, -0.1, 0.2, -0.2, 0.4))]
    # other mechanisms: median 0.1, |deviations| 0, .1, .2, .3, .3 -> q75 (nearest rank 4 of 5) .3
    b = noise_band(target, [target] + own + other, threshold_pct=5, noise_pct=10)
    assert b.log == pytest.approx(2.5 * 0.3) and b.source == "cross-CPU spread"
    # four other mechanisms are too few for a spread: the floor governs
    b = noise_band(target, [target] + own + other[:4], threshold_pct=5, noise_pct=10)
    assert b.log == pytest.approx(math.log1p(0.10)) and b.source == "floor 10%"
    # an anchor of the same class that moved x2 sets the band; one of the other class does not
    anchors = [pt("anchors/c2c", "cross", "anchors/c2c", math.log(2), True),
               pt("anchors/syscall", "same", "anchors/syscall", math.log(5), True)]
    b = noise_band(target, [target] + anchors, threshold_pct=5, noise_pct=10)
    assert b.factor == pytest.approx(2.0 * 1.05) and b.source.startswith("anchors/c2c moved x2.00")
    # an anchor is judged by the other anchors, never by its own move
    b = noise_band(anchors[0], [target] + anchors, threshold_pct=5, noise_pct=10)
    assert b.source == "floor 10%"
    # the threshold wins when it is the widest
    assert noise_band(target, [target], threshold_pct=50, noise_pct=10).source == "threshold"


def test_same_build_on_a_noisy_guest_is_same_within_noise(tmp_path):
    flagged = 0
    for seed in range(8):
        base, new = _guest_pair(tmp_path, seed)
        r = compare_files(base, new)
        assert len(r.rows) == 37 and len(_same(r.rows)) >= 0.9 * len(r.rows), [c.verdict for c in r.rows]
        flagged += len(r.regressions)  # a 3-sigma draw of the guest itself is rare, not impossible
        # the data really is hard: the test over repetitions alone calls many cross-CPU points different
        sb, sn = samples(load(base)), samples(load(new))
        plain = [compare_samples(c.name, sb[c.name][2], sn[c.name][2]) for c in r.rows]
        assert len([c for c in plain if not c.verdict.startswith("same")]) >= 8
    assert flagged <= 2


def test_slowed_mechanism_is_flagged_on_a_noisy_guest(tmp_path, capsys):
    def slow(name, placement):
        return 30.0 if name.startswith("messaging/pipe/") else 1.0

    for seed in range(8):
        base, new = _guest_pair(tmp_path, seed, new_factor=slow)
        r = compare_files(base, new)
        pipe = [c for c in r.rows if c.name.startswith("messaging/pipe/")]
        assert len(pipe) == 8 and all(c.verdict == "slower" and c.regression for c in pipe)
        assert len([c for c in r.rows if c.regression]) <= len(pipe) + 1  # at most one bystander
    assert main(["compare", base, new]) == 1
    out = capsys.readouterr().out
    assert "REGRESSION: " in out and "noise bands" in out and "cross: 18 benchmark(s)" in out


def test_2x_same_cpu_regression_is_flagged_when_the_anchors_did_not_move(tmp_path):
    victim = _name("messaging", "tcp", "same", {"pattern": "roundtrip", "size": 64})

    def slow(name, placement):
        return 2.0 if name == victim else 1.0

    bystanders = []
    for seed in range(8):
        base, new = _guest_pair(tmp_path, seed, new_factor=slow)
        r = compare_files(base, new)
        flagged = [c.name for c in r.rows if c.regression]
        assert victim in flagged
        bystanders += [n for n in flagged if "placement:same" in n and n != victim]
        assert next(c for c in r.rows if c.name == victim).band.factor < 1.6
    # The floor is each benchmark's own spread (no fixed 25%): a same-CPU anchor that moved 1.17x
    # between two runs (2 sigma of this guest's between-run noise) just beyond its class's spread
    # (1.16x) is flagged once in the 8 pairs.
    assert len(bystanders) <= 1, bystanders


def test_machine_drift_seen_by_the_anchors_widens_only_that_class(tmp_path):
    # The machine ran every same-CPU benchmark 1.6x slower (anchors included): within noise. A
    # same-CPU benchmark 4x slower on top is still flagged; cross-CPU bands are not widened by it.
    victim = _name("messaging", "pipe", "same", {"pattern": "throughput", "size": 64})

    def drift(name, placement):
        return (1.6 if placement == "same" else 1.0) * (4.0 if name == victim else 1.0)

    base, new = _guest_pair(tmp_path, 0, new_factor=drift, sigma={"same": 0.0, "cross": 0.0})
    r = compare_files(base, new)
    rows = {c.name: c for c in r.rows}
    same_cls = [c for c in r.rows if c.placement == "same" and c.name != victim]
    assert len(same_cls) == 18 and all(c.verdict.startswith("same (within noise") for c in same_cls)
    assert all(c.band.factor == pytest.approx(1.6 * 1.05, rel=0.05) for c in same_cls)
    assert rows[victim].verdict == "slower" and [c.name for c in r.regressions] == [victim]
    cross_cls = [c for c in r.rows if c.placement == "cross"]
    assert all(c.verdict == "same" and c.band.factor < 1.3 for c in cross_cls)


def _steady_pair(tmp_path, factor, jitter, reps=5):
    """One benchmark measured `reps` times per run, each repetition within ±`jitter` of its run's
    median (evenly spread: the farthest is exactly `jitter` away), NEW `factor` times BASE."""
    def doc(scale):
        steps = [jitter * (2 * i / (reps - 1) - 1) for i in range(reps)]
        return {"schema_version": 1, "context": {}, "benchmarks": [
            {"name": "messaging/pipe/pattern:roundtrip/size:64/placement:same", "suite": "messaging",
             "mechanism": "pipe", "params": {"pattern": "roundtrip", "size": 64, "placement": "same"},
             "run_type": "iteration", "repetition": i, "status": "ok", "time_per_op_ns": 10000 * scale * (1 + d),
             "placement": {"layout": "same"}} for i, d in enumerate(steps)]}
    return (fixtures.write(tmp_path / "steady-base.json", doc(1.0)),
            fixtures.write(tmp_path / "steady-new.json", doc(factor)))


def test_the_noise_floor_is_the_runs_own_spread(tmp_path, capsys):
    # Steady runs (±1%): a +29% slowdown is a regression (the old fixed 25% floor let it pass).
    base, new = _steady_pair(tmp_path, 1.29, 0.01)
    assert main(["compare", base, new]) == 1
    out = capsys.readouterr().out
    assert "REGRESSION: 1 benchmark" in out
    assert "noise floor from the runs' own spread ±3.1%" in out, out   # 3 x the 1% farthest repetition (as ln)
    # Runs that scatter ±15% (floor 3 x |ln 0.85|: x1.63): the same +29% is within their own noise.
    base, new = _steady_pair(tmp_path, 1.29, 0.15)
    assert main(["compare", base, new]) == 0
    out = capsys.readouterr().out
    assert "same (within noise: runs' spread ±62.8%" in out, out
    # --noise fixes the floor instead, and says so.
    base, new = _steady_pair(tmp_path, 1.29, 0.01)
    assert main(["compare", base, new, "--noise", "30"]) == 0
    out = capsys.readouterr().out
    assert "noise floor 30% (--noise)" in out and "same (within noise: floor 30%)" in out, out


def test_noise_option(tmp_path, capsys):
    base, new = _guest_pair(tmp_path, 0, new_factor=lambda n, p: 1.5 if n.startswith("harness/null") else 1.0,
                            sigma={"same": 0.0, "cross": 0.0})
    assert main(["compare", base, new]) == 1                   # 1.5x beyond the runs' own spread
    assert main(["compare", base, new, "--noise", "60"]) == 0  # a 60% floor covers it
    out = capsys.readouterr().out
    assert "noise floor 60% (--noise)" in out and "same (within noise: floor 60%)" in out
    assert main(["compare", base, new, "--noise", "lots"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--noise 'lots' is not a number" in err


def test_files_with_no_benchmark_in_common_exit_2_and_list_each_side(tmp_path, capsys):
    base = fixtures.write(tmp_path / "b.json", fixtures.make_result(suites=["anchors"], repetitions=3, samples=10))
    new = fixtures.write(tmp_path / "n.json", fixtures.make_result(suites=["servers"], repetitions=3, samples=10))
    assert main(["compare", base, new]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "share no benchmark" in err[0], captured.err
    assert "only in BASE: anchors/null" in captured.out
    assert "only in NEW: servers/epoll_lt/clients:2000" in captured.out


def test_the_table_shows_each_sides_confidence_interval(tmp_path, capsys):
    base, new = _pair(tmp_path)
    main(["compare", str(base), str(new)])
    out = capsys.readouterr().out
    assert "CI base/new" in out.splitlines()[0]
    assert "±1.0%/±1.0%" in out  # the fixtures' aggregates carry a CI of ±1% of their median
