"""Every output and input is checked before any work and before anything is created (issue 33):
result targets that cannot be written or that name one file twice, a fault that names no
mechanism, `ab` given binaries that are not ipclab, inputs report and compare cannot use, echoed
values of any length, a stdout that cannot be written, and ab's temporaries after a signal.

Each refusal is exit 2 and one line on stderr before anything exists: no state folder in TMPDIR,
no file in the working folder beyond what the test put there.

    IPCLAB_BIN=build/release/ipclab python3 -m pytest -q -p no:cacheprovider tests/fault/test_checked_io.py
"""
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from conftest import BINARY

UID = os.geteuid()
QUICK = ["--duration", "0.05", "--warmup", "0", "--repetitions", "1"]
HUGE = "x" * 100_000  # a 100 KB argument


def error_lines(stderr: str):
    """stderr less warnings and the progress lines a run prints when stderr is not a terminal."""
    return [l for l in stderr.splitlines() if l.strip() and not l.startswith(("warning: ", "progress: "))]


def assert_refused(lab, r, expect, files=()):
    """Exit 2, one short line naming `expect`, nothing on stdout, nothing created."""
    err = error_lines(r.stderr)
    assert r.returncode == 2, (r.returncode, err, r.stdout[-500:])
    assert len(err) == 1, err
    assert err[0].startswith("ipclab"), err
    assert expect in err[0], err
    assert len(err[0]) < 700, len(err[0])
    assert r.stdout == "", r.stdout[-500:]
    assert lab.leftovers() == [], lab.leftovers()
    assert sorted(os.listdir(lab.work)) == sorted(files)


def result_file(path, time_ns=2.0, names=("harness/null",)):
    """A small result file of schema 1: one ok iteration per name, with this time per op."""
    records = [{"name": n, "suite": n.split("/")[0], "mechanism": n.split("/")[1], "run_type": "iteration",
                "repetition": k, "status": "ok", "ops": 1000 if time_ns else 0, "wall_s": time_ns * 1e-6,
                "time_per_op_ns": time_ns, "params": {}} for n in names for k in range(3)]
    path.write_text(json.dumps({"schema_version": 1, "context": {"hostname": path.stem}, "benchmarks": records}))
    return path.name


# --- 1. an --csv file the run could not append to -------------------------------------------

def test_an_unwritable_csv_is_refused_before_the_run(lab):
    csv = lab.work / "rows.csv"
    csv.write_text("")
    if UID == 0:  # root writes through any mode: an immutable file is what it cannot append to
        if not shutil.which("chattr") or subprocess.run(["chattr", "+i", csv], capture_output=True).returncode:
            pytest.skip("needs chattr +i on this file system when run as root")
    else:
        csv.chmod(0o444)
    try:
        r = lab.run("run", "harness/null", *QUICK, "--csv", "rows.csv")
    finally:
        if UID == 0:
            subprocess.run(["chattr", "-i", csv])
    assert_refused(lab, r, "--csv rows.csv: cannot append to it", files=["rows.csv"])
    assert csv.read_text() == ""


# --- 2. two outputs naming one file ----------------------------------------------------------

@pytest.mark.parametrize("args, expect", [
    (["--json", "x", "--markdown", "x"], "--json x and --markdown x name the same file"),
    (["--json", "r.json", "--csv", "./r.json"], "name the same file"),
    (["--json", "r.json", "--markdown", "sub/../r.json"], "name the same file"),
    (["--out", "o", "--json", "o/results.json"], "--json o/results.json and --out o (its results.json)"),
    (["--out", "o", "--markdown", "o/results.csv"], "--out o (its results.csv)"),
    (["--json", "r.json", "--markdown", "link/r.json"], "name the same file"),  # link -> the working folder
], ids=["same-name", "dot-slash", "dot-dot", "out-json", "out-other-file", "through-a-link"])
def test_two_outputs_naming_one_file_are_refused(lab, args, expect):
    (lab.work / "sub").mkdir()
    (lab.work / "link").symlink_to(lab.work)
    r = lab.run("run", "harness/null", *QUICK, *args)
    assert_refused(lab, r, expect, files=["link", "sub"])


def test_distinct_outputs_still_run(lab):
    r = lab.run("run", "harness/null", *QUICK, "--out", "o", "--json", "mine.json")
    assert r.returncode == 0, error_lines(r.stderr)
    assert sorted(os.listdir(lab.work / "o")) == ["results.csv", "results.md"]
    assert json.loads((lab.work / "mine.json").read_text())["benchmarks"]


# --- 3 and 9. targets in a missing or unwritable folder, before anything is created ----------

@pytest.mark.parametrize("args, expect", [
    (["run", "harness/null", *QUICK, "--json", "/sys/r.json"], "folder /sys is not writable"),
    (["run", "harness/null", *QUICK, "--csv", "/proc/r.csv"], "folder /proc is not writable"),
    (["run", "harness/null", *QUICK, "--markdown", "/sys/kernel/r.md"], "is not writable"),
    (["run", "harness/null", *QUICK, "--out", "/sys/o"], "is not writable"),
    (["ab", BINARY, BINARY, "harness/null", "--pairs", "2", "--json", "/nonexistent/ab.json"],
     "folder /nonexistent does not exist"),
    (["ab", BINARY, BINARY, "harness/null", "--pairs", "2", "--json", "/sys/ab.json"], "is not writable"),
    (["report", "r.json", "-o", "/nonexistent/r.html"], "folder /nonexistent does not exist"),
    (["report", "r.json", "-o", "/sys/r.html"], "folder /sys is not writable"),
    (["report", "r.json", "--markdown", "/proc/r.md"], "folder /proc is not writable"),
    (["report", "r.json", "--reduce", "/nonexistent/r.json"], "does not exist"),
    (["report", "r.json", "--pages", "/nonexistent/pages"], "does not exist"),
    (["report", "r.json", "--pages", "r.json"], "is not a folder"),
    (["report", "r.json", "-o", "x", "--markdown", "./x"], "name the same file"),
], ids=["run-json-sys", "run-csv-proc", "run-markdown-sys", "run-out-sys", "ab-json-missing", "ab-json-sys",
        "report-missing", "report-sys", "report-markdown-proc", "report-reduce-missing", "report-pages-missing",
        "report-pages-a-file", "report-same-file"])
def test_targets_are_checked_before_the_work(lab, args, expect):
    result_file(lab.work / "r.json")
    r = lab.run(*args)
    assert_refused(lab, r, expect, files=["r.json"])


# --- 4. a fault naming a mechanism or a side that does not exist -----------------------------

@pytest.mark.parametrize("spec, expect", [
    ("slow:nosuch:100", "no mechanism 'nosuch'"),
    ("queue:messaging/nosuch:5", "no mechanism 'messaging/nosuch'"),
    ("ramp:pipe2:5", "no mechanism 'pipe2'"),
    ("stall:nosuch:consumer:10", "no mechanism 'nosuch'"),
    ("stall:pipe:sender:10", "ROLE: producer, consumer, client or server"),
    ("slow:" + HUGE + ":1", "…"),
])
def test_a_fault_that_could_never_fire_is_refused(lab, spec, expect):
    r = lab.run("run", "harness/null", *QUICK, env={"IPCLAB_FAULT": spec})
    assert_refused(lab, r, expect)
    if "no mechanism" in expect:
        assert "messaging/pipe" in r.stderr or "anchors/" in r.stderr  # the valid choices, shortened
        assert "see `ipclab list`" in r.stderr


def test_a_fault_of_a_side_in_ab_is_refused_before_any_slice(lab):
    r = lab.run("ab", BINARY, BINARY, "harness/null", "--pairs", "2", "--b-env", "IPCLAB_FAULT=slow:nosuch:5")
    assert_refused(lab, r, "side B")
    assert "no mechanism 'nosuch'" in r.stderr


@pytest.mark.parametrize("spec", ["slow:pipe:1", "slow:messaging/pipe:1", "stall:pipe:consumer:1"])
def test_a_fault_of_a_real_mechanism_still_runs(lab, spec):
    r = lab.run("run", "harness/null", *QUICK, env={"IPCLAB_FAULT": spec})
    assert r.returncode == 0, error_lines(r.stderr)


# --- 5. ab given binaries that are not ipclab ------------------------------------------------

def test_ab_refuses_binaries_that_are_not_ipclab(lab):
    r = lab.run("ab", "/bin/true", "/bin/true", "harness/null", "--pairs", "2")
    assert_refused(lab, r, "/bin/true is not an ipclab binary")
    script = lab.root / "quiet"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    r = lab.run("ab", BINARY, script, "harness/null", "--pairs", "2")
    assert_refused(lab, r, "side B")


# --- 6 and 7. inputs report and compare cannot use -------------------------------------------

def test_compare_of_records_without_a_time_is_an_error(lab):
    a = result_file(lab.work / "a.json", time_ns=0)
    b = result_file(lab.work / "b.json", time_ns=0)
    r = lab.run("compare", a, b)
    assert_refused(lab, r, "has a positive time to compare", files=[a, b])


def test_compare_of_good_files_still_answers(lab):
    a, b = result_file(lab.work / "a.json"), result_file(lab.work / "b.json")
    r = lab.run("compare", a, b)
    assert r.returncode == 0, r.stderr
    assert "harness/null" in r.stdout


@pytest.mark.parametrize("command", [["report", "deep.json", "-o", "r.html"], ["compare", "deep.json", "deep.json"],
                                     ["report", "deep.json", "--reduce", "small.json"]])
@pytest.mark.parametrize("shape", ["list", "in-context"])
def test_a_deeply_nested_file_is_one_line(lab, command, shape):
    deep = "[" * 100_000 + "]" * 100_000
    text = deep if shape == "list" else '{"schema_version": 1, "benchmarks": [], "context": {"x": ' + deep + "}}"
    (lab.work / "deep.json").write_text(text)
    r = lab.run(*command)
    assert_refused(lab, r, "nested too deeply", files=["deep.json"])
    assert "Traceback" not in r.stderr


# --- 8. a 100 KB value echoed in an error ----------------------------------------------------

@pytest.mark.parametrize("args", [
    ["run", HUGE],
    ["run", "harness/null", "--duration", HUGE],
    ["run", "harness/null", "--cpus", HUGE],
    ["run", "messaging/pipe", "-p", "size=" + HUGE],
    ["run", "harness/null", "-p", HUGE + "=1"],
    ["run", "harness/null", *QUICK, "--json", HUGE],
    ["run", "harness/null", *QUICK, "--csv", HUGE + "/r.csv"],
    ["run", "harness/null", *QUICK, "--out", HUGE],
    ["list", HUGE],
    [HUGE],
    ["report", HUGE, "-o", "r.html"],
    ["report", "r.json", "-o", HUGE],
    ["compare", HUGE, HUGE],
    ["ab", HUGE, HUGE],
    ["ab", BINARY, BINARY, "--metric", HUGE],
], ids=["filter", "duration", "cpus", "param-value", "param-name", "json", "csv", "out", "list-suite", "command",
        "report-input", "report-output", "compare-input", "ab-binary", "ab-metric"])
def test_a_huge_value_is_cut_in_the_error(lab, args):
    result_file(lab.work / "r.json")
    r = lab.run(*args)
    assert_refused(lab, r, "…", files=["r.json"])


# --- 10. a stdout that cannot be written -----------------------------------------------------

@pytest.mark.parametrize("args", [["list"], ["env"], ["run", "harness/null", *QUICK], ["compare", "a.json", "b.json"]],
                         ids=["list", "env", "run", "compare"])
def test_a_full_stdout_is_an_error(lab, args):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    result_file(lab.work / "a.json")
    result_file(lab.work / "b.json")
    with open("/dev/full", "w") as full:
        r = subprocess.run([BINARY, *args], cwd=lab.work, env=lab.env(), stdout=full, stderr=subprocess.PIPE,
                           text=True, timeout=120)
    err = error_lines(r.stderr)
    assert r.returncode == 1, (r.returncode, err)
    assert len(err) == 1 and "cannot write to standard output" in err[0], err
    assert "Traceback" not in r.stderr
    # A run that ran still cleaned up after itself: only the state folder stays.
    assert lab.leftovers() in ([], [f"ipclab-{UID}"]), lab.leftovers()


# --- 11. ab's temporaries after a signal ------------------------------------------------------

def ab_folder(lab, timeout=60):
    """ab's run folder in the state folder (its journal lists slices), once a slice runs: its
    result's temporary is there, so the slice's run has swept the state folder already (were ab
    killed before that sweep, the slice's own run would be the next run that sweeps ab's folder)."""
    state = lab.tmpdir / f"ipclab-{UID}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for d in state.glob("run.*") if state.is_dir() else []:
            try:
                if "+path slice-" in (d / "journal").read_text() and any(d.glob(".slice-*.tmp")):
                    return d
            except OSError:
                pass
        time.sleep(0.01)
    raise AssertionError(f"no ab run folder appeared: {lab.leftovers()}")


def wait_group_gone(pgid, timeout=20):
    """Until every process of group `pgid` has exited (a zombie has: its locks are gone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = False
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            alive = alive or (int(fields[2]) == pgid and fields[0] != "Z")
        if not alive:
            return
        time.sleep(0.05)
    raise AssertionError(f"process group {pgid} still alive")


AB = ["harness/null", "--pairs", "200", "--duration", "0.3", "--warmup", "0"]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_ab_removes_its_temporaries(lab, sig):
    proc = lab.start("ab", BINARY, BINARY, *AB)
    try:
        folder = ab_folder(lab)
        proc.send_signal(sig)  # to ab alone: it passes it on to the slice that runs
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    wait_group_gone(proc.pid)
    assert proc.returncode == -sig, proc.returncode
    assert not folder.exists()
    assert lab.leftovers() == [f"ipclab-{UID}"], lab.leftovers()
    assert not any(n.startswith("ipclab-ab-") for n in os.listdir(lab.tmpdir))


@pytest.mark.parametrize("whom", ["ab", "group"])
def test_a_killed_ab_leaves_its_temporaries_to_the_next_sweep(lab, whom):
    proc = lab.start("ab", BINARY, BINARY, *AB)
    try:
        folder = ab_folder(lab)
        if whom == "ab":
            proc.kill()  # ab alone: its slice runs on, writes into ab's folder, and ends
        else:
            os.killpg(proc.pid, signal.SIGKILL)  # ab and the slice's run at once
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    wait_group_gone(proc.pid)
    assert folder.exists()  # nothing could remove it: it waits for a sweep
    r = lab.run("run", "harness/null", *QUICK)
    assert r.returncode == 0, error_lines(r.stderr)
    assert f"removed what run {folder.name[4:]} left when it died" in r.stderr, r.stderr
    assert lab.leftovers() == [f"ipclab-{UID}"], lab.leftovers()
