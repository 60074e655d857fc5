"""servers/peer end to end: the example server of the contract, and a deliberately faulty server
(faulty_server.py) whose every fault the load generator must count as docs/servers.md says.

Run by ctest (`servers.peer`) with the binary in IPCLAB_BIN; by hand:
    IPCLAB_BIN=build/release/ipclab python3 -m pytest -q tests/servers
"""
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

BINARY = os.environ.get("IPCLAB_BIN", "")
HERE = Path(__file__).resolve().parent
FAULTY = HERE / "faulty_server.py"
CLIENTS = 4
# A short session time-out: the hung sessions end the wave after it.
# One wave: the faults below are counted against one wave's clients.
ARGS = ["-p", f"concurrency={CLIENTS}", "-p", "waves=1", "-p", "session_timeout_ms=500", "--duration", "0.05",
        "--warmup", "0",
        "--repetitions", "1"]


@pytest.fixture
def run(tmp_path):
    if not BINARY or not os.access(BINARY, os.X_OK):
        pytest.skip("IPCLAB_BIN does not name the ipclab binary")
    (tmp_path / "tmp").mkdir(mode=0o700)

    def go(*params):
        """Runs servers/peer with `params`; returns (exit code, stderr, the iteration record)."""
        out = tmp_path / "r.json"
        env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"))
        r = subprocess.run([BINARY, "run", "servers/peer", *params, *ARGS, "--json", str(out)], cwd=tmp_path,
                           env=env, capture_output=True, text=True, timeout=60)
        doc = json.loads(out.read_text())
        its = [b for b in doc["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
        assert len(its) == 1, its
        return r.returncode, r.stderr, its[0]

    return go


def counts(rec):
    x = rec["extra"]
    return {"processed": x["processed"], "rejected": x["rejected"], "lost": x["lost"],
            "corrupt": rec["integrity"]["corrupt"], **{f"lost_{k}": v for k, v in x["lost_by"].items()}}


def assert_served_all(rc, err, rec):
    assert rc == 0, err
    assert rec["status"] == "ok", rec["status"]
    assert counts(rec) == {"processed": CLIENTS, "rejected": 0, "lost": 0, "corrupt": 0, "lost_timeout": 0,
                           "lost_closed": 0}
    # Nine round trips a session, each timed.
    q = rec["extra"]["request_ns"]
    assert q["count"] == 9 * CLIENTS, q
    assert 0 < q["p50"] <= q["p99"] <= q["max"], q


def test_default_server_serves_every_client(run):
    rc, err, rec = run()
    assert_served_all(rc, err, rec)
    assert rec["extra"]["server"] == [str(HERE / "servers_server.py")]


def test_server_taking_its_address_on_the_command_line(run):
    # address=argv: scripts/serve-on-port.py becomes the server with `127.0.0.1 PORT` and prints the
    # port for it (reference 001's servers print nothing); its CPU is charged; it dies with the run.
    server = HERE / "servers_server.py"
    rc, err, rec = run("-p", f"server={server}", "-p", "address=argv")
    assert_served_all(rc, err, rec)
    assert rec["extra"]["server_cpu_s"] > 0, rec["extra"]  # the server itself, not a parent of it
    cmd = rec["extra"]["server"]
    assert cmd[0].endswith("/scripts/serve-on-port.py") and cmd[1] == str(server), cmd
    # The server gets SIGKILL when the wrapper dies (PR_SET_PDEATHSIG): gone within a second.
    for _ in range(100):
        left = subprocess.run(["pgrep", "-f", f"{server} 127.0.0.1"], capture_output=True, text=True).stdout
        if not left:
            break
        time.sleep(0.01)
    assert left == "", f"server left running: {left}"


def test_faulty_server_healthy_mode_serves_every_client(run):
    rc, err, rec = run("-p", f"server={FAULTY}", "-p", "server_args=healthy")
    assert_served_all(rc, err, rec)
    assert rec["extra"]["server"] == [str(FAULTY), "healthy"]


def test_session_closed_early_is_lost_closed(run):
    rc, err, rec = run("-p", f"server={FAULTY}", "-p", "server_args=close")
    # Lost sessions are data for an external server (it may be of any model), not a failure.
    assert rc == 0, err
    assert counts(rec) == {"processed": CLIENTS - 1, "rejected": 0, "lost": 1, "corrupt": 0, "lost_timeout": 0,
                           "lost_closed": 1}


def test_hung_client_is_lost_by_timeout(run):
    rc, err, rec = run("-p", f"server={FAULTY}", "-p", "server_args=hang")
    assert rc == 0, err
    assert counts(rec) == {"processed": CLIENTS - 1, "rejected": 0, "lost": 1, "corrupt": 0, "lost_timeout": 1,
                           "lost_closed": 0}


def test_reply_to_another_connection_is_corrupt_and_the_robbed_one_lost(run):
    rc, err, rec = run("-p", f"server={FAULTY}", "-p", "server_args=cross")
    # The doubled reply is corrupt on connection 0 (the record fails); connection 1 waits for the
    # reply it was robbed of until its session time-out.
    assert rc == 1, err
    assert rec["status"] == "failed"
    assert "corrupt" in err, err
    assert counts(rec) == {"processed": CLIENTS - 2, "rejected": 0, "lost": 1, "corrupt": 1, "lost_timeout": 1,
                           "lost_closed": 0}


def test_missing_server_is_skipped_with_the_reason(run, tmp_path):
    missing = tmp_path / "no-such-server"
    rc, err, rec = run("-p", f"server={missing}")
    assert rec["status"] == "skipped", rec
    assert str(missing) in json.dumps(rec) + err
