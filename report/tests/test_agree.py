"""`ipclab agree`, run for real against the reference tools scripts/setup.sh installs (fio,
sockperf, perf; sockperf across two network namespaces with sshd for `remote`): both figures per
point, the ratio their paired quotient, the JSON and Markdown the console's table, a missing tool
skipped with its reason, bad input refused before anything runs, nothing left behind."""

import json
import math
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from ipclab_report import netpair

REPORT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ["IPCLAB_BIN"]

# One tiny point or two per tool: a few seconds each (sockperf counts whole seconds, at least 1).
CASES = {
    "perf": ["--point", "pipe same", "--point", "memcpy 64K"],
    "sockperf": ["--point", "udp ping-pong"],
    "fio": ["--point", "liburing rand qd=1", "--file-size", "16M"],
    "remote": ["--point", "udp"],  # over the veth pair, and delayed (netem, or the delay wire)
}


def namespaces(pid):
    """The network namespaces the rig of process `pid` names (ipclab_report/netpair.py: ipclr,
    then the pid modulo 10000, three or four hex digits of its own, n or f): tests in other
    workers make theirs at the same time."""
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    names = {line.split()[0] for line in r.stdout.splitlines() if line.strip()}
    own = re.compile(rf"ipclr{pid % 10000}[0-9a-f]{{3,4}}[nf]")
    return {n for n in names if own.fullmatch(n)}


def remote_or_skip(tool):
    if tool == "remote" and netpair.missing():
        pytest.skip(f"agree remote cannot run here: {netpair.missing()}")


def agree(*args, env=None):
    """`ipclab agree ARGS`, run to its end: its CompletedProcess, with its pid."""
    p = subprocess.Popen([sys.executable, "-m", "ipclab_report", "agree", *args], cwd=REPORT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})
    out, err = p.communicate(timeout=300)
    r = subprocess.CompletedProcess(p.args, p.returncode, out, err)
    r.pid = p.pid
    return r


def cells(line):
    """The cells of a Markdown table row."""
    return [c.strip().replace("\\|", "|") for c in line.strip().strip("|").split(" | ")]


@pytest.mark.parametrize("tool", sorted(CASES))
def test_agree_runs_the_tool_beside_ipclab(tool, tmp_path):
    remote_or_skip(tool)
    js, md = tmp_path / "a.json", tmp_path / "a.md"
    r = agree(tool, "--rounds", "2", "--seconds", "0.1", "--cpus", str(min(os.sched_getaffinity(0))),
              *CASES[tool], "--json", str(js), "--markdown", str(md))
    assert r.returncode == 0, r.stderr
    doc = json.loads(js.read_text())
    assert not doc["skipped"], f"{tool} is missing here; scripts/setup.sh installs it: {doc['skipped']}"
    [entry] = doc["tools"]
    assert entry["tool"] == tool and entry["version"]
    md_rows = {cells(line)[0]: cells(line) for line in md.read_text().splitlines() if line.startswith("| ")}
    for p in entry["points"]:
        assert "error" not in p, p
        assert len(p["ipclab"]) == len(p["tool"]) == 2
        assert all(v > 0 for v in p["ipclab"] + p["tool"]), p
        # The ratio is the median of the rounds' ipclab / tool (two rounds: their geometric mean).
        logs = [math.log(i / t) for i, t in zip(p["ipclab"], p["tool"])]
        assert p["ratio"] == pytest.approx(math.exp(sum(logs) / 2), rel=1e-9)
        assert p["ci"][0] <= p["ratio"] <= p["ci"][1]
        assert p["within"] == (abs(p["ratio"] - 1) <= p["band"])
        # Console and Markdown carry the same row: both figures with what each is, the ratio, the verdict.
        [line] = [ln for ln in r.stdout.splitlines() if ln.startswith(p["point"] + "  ")]
        row = md_rows[p["point"]]
        for cell in row[1:6]:
            assert cell in line, (cell, line)
        assert p["tool_is"] in row[1] and p["ipclab_is"] in row[2]
        assert row[3].startswith(f"{p['ratio']:.2f} [")
        assert row[5] == ("within" if p["within"] else "OUTSIDE")
    if tool == "remote":
        # The undelayed round trip, then one with 200 µs each way: both sides show the delay (a
        # delay only adds; the delay wire's path, where it stands in for netem, is not the veth
        # pair's, so the undelayed figure is no lower bound), and the rig is gone afterwards.
        veth, delayed = entry["points"]
        assert veth["point"] == "udp veth" and delayed["point"].startswith("udp +200")
        for side in ("ipclab_median", "tool_median"):
            assert delayed[side] >= 400 > veth[side], (side, veth, delayed)
        assert not namespaces(r.pid)


def test_agree_remote_leaves_nothing_behind_when_stopped(tmp_path):
    """SIGTERM while the two namespaces, sshd and sockperf are up: all of it is taken down."""
    remote_or_skip("remote")
    p = subprocess.Popen([sys.executable, "-m", "ipclab_report", "agree", "remote", "--rounds", "3"], cwd=REPORT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "TMPDIR": str(tmp_path)})
    deadline = time.monotonic() + 60
    while not namespaces(p.pid) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    made = namespaces(p.pid)
    assert len(made) == 2, p.communicate()
    time.sleep(1.5)  # into the rounds: ipclab across the pair, or sockperf's two sides
    p.terminate()
    p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM
    assert not namespaces(p.pid)
    assert not os.listdir(tmp_path)  # agree's folder, the keys and sshd's files with it
    ours = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True).stdout.split()
    assert not ours, ours  # no sshd, sockperf or ipclab of the pair's still running


def test_a_missing_tool_is_skipped_with_its_reason(tmp_path):
    js = tmp_path / "a.json"
    r = agree("fio", "sockperf", "perf", "--json", str(js), env={"PATH": str(tmp_path), "IPCLAB_FIO": ""})
    assert r.returncode == 0, r.stderr
    skipped = {s["tool"]: s["reason"] for s in json.loads(js.read_text())["skipped"]}
    assert set(skipped) == {"fio", "sockperf", "perf"}
    assert "apt install fio" in skipped["fio"] and "IPCLAB_FIO" in skipped["fio"]
    assert "apt install sockperf" in skipped["sockperf"]
    assert "apt install linux-perf" in skipped["perf"]
    for tool, why in skipped.items():
        assert f"# {tool}: skipped: {why}" in r.stdout


@pytest.mark.parametrize("args, says", [
    (["nosuchtool"], "unknown tool 'nosuchtool'"),
    (["perf", "--rounds", "0"], "--rounds 0: give 1 to 100"),
    (["perf", "--seconds", "fast"], "--seconds 'fast'"),
    (["perf", "--cpus", "0,0"], "--cpus 0,0: give one or two different CPUs"),
    (["perf", "--point", "no such point"], "names no point of perf"),
    (["perf", "--json", "/nonexistent/a.json"], "folder /nonexistent does not exist"),
    (["perf", "--ipclab", "/nonexistent/ipclab"], "no ipclab binary there"),
    (["perf", "--frobnicate"], "unrecognized arguments: --frobnicate"),
])
def test_bad_input_is_one_line_and_exit_2_before_anything_runs(args, says, tmp_path):
    r = agree(*args, env={"TMPDIR": str(tmp_path)})
    assert r.returncode == 2
    assert r.stdout == ""
    [line] = r.stderr.splitlines()
    assert line.startswith("ipclab agree: ") and says in line, line
    assert not os.listdir(tmp_path)  # no work folder was made


def test_the_ipclab_spelling():
    """`ipclab agree` hands over to this module once the CLI knows the verb (src/cli)."""
    help_text = subprocess.run([BIN, "--help"], capture_output=True, text=True).stdout
    if " agree" not in help_text:
        pytest.skip(f"{BIN} has no `agree` subcommand yet (its CLI part of issue 56)")
    r = subprocess.run([BIN, "agree", "nosuchtool"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().startswith("ipclab agree: unknown tool 'nosuchtool'")


def test_a_stopped_agree_stops_its_ipclab_run_cleanly(tmp_path):
    """SIGTERM while ipclab measures a point: agree passes SIGTERM on and waits, so that ipclab
    removes what it made (its run folder) rather than leave it to the next run's sweep."""
    env = {**os.environ, "TMPDIR": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state")}
    p = subprocess.Popen([sys.executable, "-m", "ipclab_report", "agree", "perf", "--point", "pipe same",
                          "--seconds", "20", "--rounds", "1", "--cpus", str(min(os.sched_getaffinity(0)))],
                         cwd=REPORT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob("ipclab-*/run.*")) and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(tmp_path.glob("ipclab-*/run.*")), p.communicate()  # ipclab's run is under way
    time.sleep(0.5)
    p.terminate()
    p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM
    assert list(tmp_path.glob("ipclab-*/run.*")) == []  # removed by ipclab itself, not swept later
    assert not running_with(f"TMPDIR={tmp_path}")  # no ipclab or perf of the round still running


def running_with(variable: str) -> list:
    """The processes whose environment holds `variable` (NAME=VALUE)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if variable.encode() in f.read().split(b"\0"):
                    found.append(int(pid))
        except OSError:
            pass
    return found
