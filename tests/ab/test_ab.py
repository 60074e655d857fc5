"""`ipclab ab` end to end: real slices of the binary against itself, a known slowdown injected into
one side, one side's own parameters, failures and bad input. Timings are not asserted beyond
what an injected slowdown of several times the benchmark's own time must show.

Run by ctest (`ab.end_to_end`) with the binary in IPCLAB_BIN; by hand:
    IPCLAB_BIN=$PWD/build/release/ipclab python3 -m pytest -q tests/ab
"""
import json
import os
import shutil
import subprocess

import pytest

BINARY = os.environ.get("IPCLAB_BIN", "")
PIPE = ["messaging/pipe", "-p", "pattern=roundtrip", "-p", "size=64", "-p", "placement=same"]
SHORT = ["--duration", "0.05", "--warmup", "0.01"]


def ipclab(*args, env=None, timeout=300):
    e = dict(os.environ)
    e.pop("IPCLAB_FAULT", None)
    e.update(env or {})
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=timeout, env=e)


def ab(tmp_path, *args, env=None):
    out = tmp_path / "ab.json"
    proc = ipclab("ab", BINARY, BINARY, *SHORT, *args, "--json", str(out), env=env)
    doc = json.loads(out.read_text()) if out.exists() else None
    return proc, doc


@pytest.fixture(autouse=True)
def binary():
    if not BINARY or not os.path.isabs(BINARY):
        pytest.fail("set IPCLAB_BIN to the absolute path of the ipclab binary")


def test_plan_lists_each_point_with_parameters_run_takes_back():
    proc = ipclab("run", "messaging/pipe", "-p", "pattern=roundtrip", "-p", "size=64,4096", "--plan")
    assert proc.returncode == 0, proc.stderr
    plan = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [b["params"]["size"] for b in plan] == ["64", "4096"]
    # Each point's parameters select exactly that point again.
    for b in plan:
        args = [a for k, v in b["params"].items() for a in ("-p", f"{k}={v}")]
        again = ipclab("run", f"{b['suite']}/{b['mechanism']}", *args, "--plan")
        assert [json.loads(line)["name"] for line in again.stdout.splitlines()] == [b["name"]]


def test_plan_creates_nothing_and_refuses_result_files(tmp_path):
    proc = ipclab("run", "messaging/pipe", "--plan", "--json", str(tmp_path / "r.json"))
    assert proc.returncode == 2 and "--plan runs nothing" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_a_run_pairs_every_slice(tmp_path):
    proc, doc = ab(tmp_path, *PIPE, "--pairs", "4")
    # Four pairs cannot reach p < 0.05 (2/16): never a regression, whatever the noise.
    assert proc.returncode == 0, proc.stderr
    [row] = doc["benchmarks"]
    assert doc["ab"]["order"] == "ABBA" and doc["ab"]["pairs"] == 4
    assert len(row["ratios"]) == 4 and row["a"] > 0 and row["b"] > 0
    assert row["ci"][0] <= row["median_ratio"] <= row["ci"][1]
    assert row["verdict"] == "same" or "too few pairs" in row["verdict"]
    assert doc["regressions"] == [] and doc["failed"] == []
    assert doc["context"]["git_sha"] is None or isinstance(doc["context"]["git_sha"], str)


def test_an_injected_slowdown_is_slower_and_exits_one(tmp_path):
    # 30 µs per round trip on a same-CPU pipe round trip of a few µs: several times slower. Eight
    # pairs, so that one pair the machine spoiled (a 50 ms slice that lost most of its time to the
    # host: seen once in CI, p = 0.0625 with six) still leaves p < 0.05.
    proc, doc = ab(tmp_path, *PIPE, "--pairs", "8", "--b-env", "IPCLAB_FAULT=slow:pipe:30000")
    assert proc.returncode == 1, proc.stderr
    [row] = doc["benchmarks"]
    assert row["verdict"] == "slower" and row["p"] < 0.05 and row["median_ratio"] > 2
    assert doc["regressions"] == [row["name"]]
    assert doc["ab"]["b"]["env"] == {"IPCLAB_FAULT": "slow:pipe:30000"}


def test_kernel_counters_give_system_calls_per_op_on_both_sides(tmp_path):
    # System calls are counted through the raw_syscalls tracepoint, whose id lives in tracefs: where
    # it is not mounted, mount it in a private mount namespace that only this ab and its slices see.
    wrap = []
    if not os.path.exists("/sys/kernel/tracing/events/raw_syscalls/sys_enter/id"):
        if os.geteuid() != 0 or not shutil.which("unshare"):
            pytest.skip("tracefs is not mounted and this user cannot mount it in a private namespace")
        wrap = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                'mount -t tracefs nodev /sys/kernel/tracing && exec "$@"', "sh"]
    out = tmp_path / "ab.json"
    proc = subprocess.run([*wrap, BINARY, "ab", BINARY, BINARY, *SHORT, *PIPE, "--pairs", "2", "--kernel-counters",
                           "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    [row] = doc["benchmarks"]
    assert doc["ab"]["kernel_counters"] is True
    for side in ("a", "b"):
        k = row["kernel_per_op"][side]
        assert 3.9 <= k["syscalls"] <= 4.1  # a pipe round trip: a write and a read on each side
        assert k["context_switches"] > 0    # both sides on one CPU: they take turns
    assert "→" in proc.stdout.split("\n")[-2]  # the table's sys/op A→B column


def test_antagonists_go_to_both_sides_and_are_checked_before_any_slice(tmp_path):
    # The idle stand-in (no stress-ng needed): each side's every slice records it.
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two allowed CPUs (the stand-in runs beside the sides)")
    first = str(min(os.sched_getaffinity(0)))
    proc, doc = ab(tmp_path, *PIPE, "--cpus", first, "--pairs", "2", "--antagonist", "none")
    assert proc.returncode == 0, proc.stderr
    assert doc["ab"]["antagonists"] == ["none"]
    # Bad input is refused by the binary's own plan: one line, exit 2, no slice run.
    (tmp_path / "bad").mkdir()
    proc, doc = ab(tmp_path / "bad", *PIPE, "--pairs", "2", "--antagonist", "cpu@nowhere")
    assert proc.returncode == 2 and doc is None
    assert len(proc.stderr.strip().splitlines()) == 1 and "unknown WHERE 'nowhere'" in proc.stderr


def test_a_side_parameter_pairs_two_configurations(tmp_path):
    proc, doc = ab(tmp_path, "messaging/pipe", "-p", "pattern=roundtrip", "-p", "placement=same",
                   "--a-param", "size=64", "--b-param", "size=4096", "--pairs", "2")
    assert proc.returncode == 0, proc.stderr
    [row] = doc["benchmarks"]
    assert "/size:64/" in row["name"] and "/size:4096/" in row["name_b"]


def test_a_failing_side_fails_the_benchmark(tmp_path):
    proc, doc = ab(tmp_path, *PIPE, "--pairs", "2", "--b-env", "IPCLAB_FAULT=corrupt:5")
    assert proc.returncode == 1
    [row] = doc["benchmarks"]
    assert row["verdict"] == "failed" and "corrupt" in row["error"] and doc["failed"] == [row["name"]]


def test_a_baseline_built_before_plan_runs_the_other_sides_plan(tmp_path):
    # A binary from before `run --plan`: it refuses the option as such binaries do, runs the rest.
    old = tmp_path / "old-ipclab"
    old.write_text("#!/bin/sh\n"
                   'for a in "$@"; do [ "$a" = --plan ] && { echo "ipclab: The following argument was not '
                   'expected: --plan; see \\`ipclab --help\\`" >&2; exit 2; }; done\n'
                   f'exec {BINARY} "$@"\n')
    old.chmod(0o755)
    out = tmp_path / "ab.json"
    proc = ipclab("ab", str(old), BINARY, *SHORT, *PIPE, "--pairs", "2", "--json", str(out))
    assert proc.returncode == 0, proc.stderr
    [row] = json.loads(out.read_text())["benchmarks"]
    assert len(row["ratios"]) == 2 and "name_b" not in row
    # Its sides must then select alike: the newer side cannot plan for different parameters.
    proc = ipclab("ab", str(old), BINARY, *SHORT, *PIPE, "--b-param", "size=4096")
    assert proc.returncode == 2 and "predates `ipclab run --plan`" in proc.stderr


@pytest.mark.parametrize("args, says", [
    (["--b-env", "IPCLAB_FAULT=slow:pipe"], "side B"),
    (["--a-param", "size=0"], "side A"),
    (["--b-param", "pattern=roundtrip,throughput"], "must pair one to one"),
    (["--duration", "0"], "--duration"),
])
def test_bad_input_stops_before_any_slice(tmp_path, args, says):
    proc, doc = ab(tmp_path, "messaging/pipe", "-p", "placement=same", "--a-filter", "messaging/pipe",
                   "-p", "pattern=roundtrip", *args)
    assert proc.returncode == 2, proc.stderr
    assert says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert doc is None
