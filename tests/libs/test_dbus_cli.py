"""libs/dbus: sd-bus through a private dbus-daemon the harness starts for each transport — every
message delivered in both modes and patterns, the daemon's CPU reported apart, its death failing the
run at once, and nothing of it (process, socket, configuration, log) left behind.

Run by ctest (`libs.cli`) with the binary in IPCLAB_BIN; by hand:
    IPCLAB_BIN=$PWD/build/release/ipclab python3 -m pytest -q tests/libs
"""
import json
import os
import signal
import subprocess
import time

import pytest

from libs_cli import BINARY, SHORT, ipclab, run_records


@pytest.fixture(autouse=True)
def daemon_installed():
    if not os.access("/usr/bin/dbus-daemon", os.X_OK):
        pytest.skip("dbus-daemon is not installed (scripts/setup.sh installs it)")


def processes():
    """(pid, ppid, comm, cmdline) of every process that can be read."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        out.append((int(d), ppid, comm, cmdline))
    return out


def our_daemons(tmp_path):
    """dbus-daemons started from a configuration under tmp_path (the run's folder is there)."""
    return [p for p in processes() if p[2] == "dbus-daemon" and str(tmp_path) in p[3]]


def assert_nothing_left(tmp_path):
    state = tmp_path / f"ipclab-{os.geteuid()}"
    assert list(state.iterdir()) == []
    assert our_daemons(tmp_path) == []


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_every_message_arrives_and_the_daemon_is_accounted_apart(tmp_path, mode):
    doc, recs = run_records(tmp_path, "libs/dbus", "-p", f"mode={mode}", "-p", "pattern=throughput,roundtrip",
                            "-p", "size=64,64K")
    assert len(recs) == 4
    for b in recs:
        assert b["status"] == "ok", b["error"]
        i = b["integrity"]
        assert i["lost"] == i["corrupt"] == i["duplicated"] == 0, i
        assert i["received"] > 0 and i["received"] == i["sent"], i
        assert b["ops"] > 0
        extra = b["extra"]
        assert "sd-bus" in extra["library"] and "dbus-daemon" in extra["library"], extra["library"]
        assert extra["kernel_transport"] == "unix_stream"
        assert "dbus-daemon" in extra["cpu_by_role"], extra["cpu_by_role"]
        if b["params"]["pattern"] == "throughput":
            assert 0 < extra["ack_every"] < extra["flow_window"]
    libraries = doc["context"]["libraries"]
    assert {"sd-bus", "dbus-daemon"} <= libraries.keys(), libraries
    assert_nothing_left(tmp_path)


@pytest.mark.parametrize("mode", ["threads", "processes"])
def test_the_daemon_killed_mid_run_fails_it_at_once_and_nothing_is_left(tmp_path, mode):
    out = tmp_path / "r.json"
    e = dict(os.environ, TMPDIR=str(tmp_path))
    e.pop("IPCLAB_FAULT", None)
    start = time.monotonic()
    proc = subprocess.Popen([BINARY, "run", "libs/dbus", "-p", f"mode={mode}", "-p", "pattern=roundtrip",
                             "--duration", "5", "--warmup", "0.02", "--repetitions", "1", "-p", "placement=unpinned",
                             "--json", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)
    try:
        daemon = None
        while daemon is None and time.monotonic() - start < 5:
            # The run's daemon, started from its configuration under tmp_path: not the
            # `dbus-daemon --version` that ipclab runs first to record the library's version.
            daemon = next((p[0] for p in our_daemons(tmp_path) if p[1] == proc.pid), None)
            time.sleep(0.05)
        assert daemon is not None, "no dbus-daemon child of ipclab appeared"
        time.sleep(0.5)  # well into the 5 s window
        assert proc.poll() is None, "the run ended before the daemon was killed"
        os.kill(daemon, signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert time.monotonic() - start < 10
    assert proc.returncode == 1, stderr
    assert "dbus-daemon" in stderr and "signal 9" in stderr, stderr
    rec = [b for b in json.loads(out.read_text())["benchmarks"] if b["run_type"] == "iteration"][0]
    assert rec["status"] == "failed"
    assert "dbus-daemon" in rec["error"], rec["error"]
    assert_nothing_left(tmp_path)


def test_no_endpoint_parameter(tmp_path):
    r = ipclab("run", "libs/dbus", "-p", "endpoint=tcp", *SHORT, env={"TMPDIR": str(tmp_path)})
    assert r.returncode == 2
    assert len(r.stderr.strip().splitlines()) == 1 and "endpoint" in r.stderr, r.stderr
    assert our_daemons(tmp_path) == []
