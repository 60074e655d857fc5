"""`ipclab ab`'s statistics and command line, without a binary (tests/ab runs it end to end)."""

import math
import os
import random
import stat

import pytest

from ipclab_report.ab import bootstrap_median_ci, judge, merged_params, wilcoxon_p
from ipclab_report.cli import main


def logs_of(ratios):
    return [math.log(r) for r in ratios]


def noisy(rng, ratio, sd, n):
    return [math.log(ratio) + rng.gauss(0, sd) for _ in range(n)]


def test_a_clear_slowdown_over_ten_pairs_is_slower():
    rng = random.Random(1)
    j = judge(noisy(rng, 1.10, 0.01, 10), higher_better=False, threshold_pct=5, alpha=0.05, seed=0)
    assert j["verdict"] == "slower"
    assert j["median_ratio"] == pytest.approx(1.10, rel=0.02)
    assert j["ci"][0] < j["median_ratio"] < j["ci"][1]
    assert j["p"] == pytest.approx(2 / 2**10)  # all ten the same way: the exact test's smallest p


def test_higher_is_better_turns_the_verdict():
    rng = random.Random(2)
    j = judge(noisy(rng, 1.10, 0.01, 10), higher_better=True, threshold_pct=5, alpha=0.05, seed=0)
    assert j["verdict"] == "faster"


def test_within_the_threshold_is_the_same_however_significant():
    j = judge(logs_of([1.02] * 5 + [1.03] * 5), higher_better=False, threshold_pct=5, alpha=0.05, seed=0)
    assert j["p"] < 0.05 and j["verdict"] == "same"


def test_beyond_the_threshold_but_not_significant_is_the_same():
    # Ratios scattered both ways around a median beyond the threshold.
    j = judge(logs_of([1.5, 0.7, 1.4, 0.8, 1.3, 0.9, 1.2, 1.25, 0.6, 1.35]), False, 5, 0.05, 0)
    assert j["median_ratio"] > 1.05
    assert j["p"] >= 0.05 and j["verdict"].startswith("same (not significant")


def test_too_few_pairs_cannot_be_a_regression():
    # Five pairs: the smallest two-sided p is 2/32 = 0.0625 > 0.05.
    j = judge(logs_of([2.0] * 5), False, 5, 0.05, 0)
    assert j["verdict"] == "slower? (too few pairs)"


def test_identical_sides_are_the_same_with_p_one():
    j = judge([0.0] * 8, False, 5, 0.05, 0)
    assert j["verdict"] == "same" and j["p"] == 1.0 and j["median_ratio"] == 1.0


def test_a_a_false_positive_rate_stays_below_alpha():
    # Same-side noise of 3% per pair and no change: slower or faster in well under 5% of trials.
    rng = random.Random(3)
    flagged = sum(judge(noisy(rng, 1.0, 0.03, 10), False, 5, 0.05, i)["verdict"] in ("slower", "faster")
                  for i in range(300))
    assert flagged / 300 < 0.05


def test_wilcoxon_matches_its_exact_distribution():
    # Ranks 1..6 with signs + + + + + -: W- = 1 (the smallest rank), P(W- <= 1) = 2/64 one-sided.
    assert wilcoxon_p(logs_of([1.01, 1.02, 1.03, 1.04, 1.05]) + [-math.log(1.001)]) == pytest.approx(4 / 64)


def test_bootstrap_interval_is_seeded_and_narrows_with_pairs():
    rng = random.Random(4)
    few, many = noisy(rng, 1.0, 0.05, 8), noisy(rng, 1.0, 0.05, 64)
    assert bootstrap_median_ci(few, 7) == bootstrap_median_ci(few, 7)
    w_few = bootstrap_median_ci(few, 7)[1] - bootstrap_median_ci(few, 7)[0]
    w_many = bootstrap_median_ci(many, 7)[1] - bootstrap_median_ci(many, 7)[0]
    assert w_many < w_few


def test_a_side_parameter_replaces_the_common_one():
    assert merged_params(["size=64", "placement=same"], ["placement=cross"]) == ["size=64", "placement=cross"]
    assert merged_params(["size=64"], ["wait=spin"]) == ["size=64", "wait=spin"]


@pytest.fixture
def fake_binary(tmp_path):
    path = tmp_path / "ipclab"
    path.write_text("#!/bin/sh\nexit 3\n")
    path.chmod(stat.S_IRWXU)
    return str(path)


@pytest.mark.parametrize("extra, says", [
    (["--pairs", "1"], "--pairs '1'"),
    (["--threshold", "x"], "--threshold 'x'"),
    (["--alpha", "1"], "--alpha '1'"),
    (["--metric", "speed"], "--metric 'speed'"),
    (["--b-env", "NOEQUALS"], "is not NAME=VALUE"),
    (["--duration", "soon"], "--duration 'soon'"),
    (["--duration", "5x"], "--duration '5x'"),
    (["--warmup", "ms"], "--warmup 'ms'"),
])
def test_bad_options_are_one_line_exit_two(fake_binary, capsys, extra, says):
    assert main(["ab", fake_binary, fake_binary, *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and "\n" not in err


def test_a_missing_binary_is_named(tmp_path, capsys):
    missing = str(tmp_path / "nope")
    assert main(["ab", missing, missing]) == 2
    assert "is not an executable file" in capsys.readouterr().err


def test_a_binary_that_plans_nothing_is_a_usage_error(fake_binary, tmp_path, capsys):
    assert main(["ab", fake_binary, fake_binary, "--json", str(tmp_path / "out.json")]) == 2
    assert "side A" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "out.json")


@pytest.mark.parametrize("text, seconds", [("0.2", 0.2), ("250ms", 0.25), ("2s", 2.0), ("1.5m", 90.0), ("1h", 3600.0),
                                           ("1e-3", 0.001), ("5x", None), ("ms", None), ("nan", None), ("infs", None),
                                           (" 1", None), ("1 s", None), ("", None)])
def test_durations_read_as_ipclab_reads_them(text, seconds):
    from ipclab_report.util import parse_duration

    assert parse_duration(text) == (pytest.approx(seconds) if seconds is not None else None)

