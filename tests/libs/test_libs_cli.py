"""The library transports as separate processes, each in an ipclab run of its own (nng cannot
start again in a process forked after it ran in its parent: the second run of one invocation is
skipped with that reason), the versions in the environment block, nothing left behind.

Run by ctest (`libs.cli`) with the binary in IPCLAB_BIN; by hand:
    IPCLAB_BIN=$PWD/build/release/ipclab python3 -m pytest -q tests/libs
"""
import json
import os

import pytest

from libs_cli import SHORT, ipclab, run_records


@pytest.mark.parametrize("lib", ["zmq", "nng"])
def test_processes_deliver_every_message_over_ipc_and_tcp(tmp_path, lib):
    doc, recs = run_records(tmp_path, f"libs/{lib}", "-p", "mode=processes", "-p", "endpoint=ipc,tcp",
                            "-p", "pattern=throughput,roundtrip", "-p", "size=64,64K")
    assert len(recs) == 8
    for b in recs:
        assert b["status"] == "ok", b["error"]
        assert b["integrity"]["lost"] == b["integrity"]["corrupt"] == b["integrity"]["duplicated"] == 0
        assert b["extra"]["kernel_transport"] in ("unix_stream", "tcp")
    libraries = doc["context"]["libraries"]
    assert {"libzmq", "nng"} <= libraries.keys(), libraries
    # The run's private folder (its ipc sockets) is gone; the per-user state folder stays, empty.
    state = tmp_path / f"ipclab-{os.geteuid()}"
    assert list(state.iterdir()) == []


def test_nng_processes_after_threads_in_one_run_is_skipped_with_the_reason(tmp_path):
    out = tmp_path / "r.json"
    r = ipclab("run", "libs/nng", "-p", "mode=threads,processes", "-p", "pattern=throughput", *SHORT,
               "--json", str(out))
    assert r.returncode == 0, r.stderr
    recs = {b["params"]["mode"]: b for b in json.loads(out.read_text())["benchmarks"] if b["run_type"] == "iteration"}
    assert recs["threads"]["status"] == "ok"
    assert recs["processes"]["status"] == "skipped"
    assert "run of its own" in recs["processes"]["error"]


@pytest.mark.parametrize("lib", ["zmq", "nng", "grpc", "iceoryx", "dbus"])
def test_every_library_takes_an_open_loop_rate(tmp_path, lib):
    # pattern=rate, as the messaging suite has it: the sender on a schedule of 2000 messages a
    # second, every message delivered once and intact, the rate record beside the usual figures.
    if lib == "iceoryx" and any(os.path.lexists(p) for p in ("/tmp/roudi", "/dev/shm/iceoryx_mgmt")):
        pytest.skip("another RouDi's names are here: ipclab does not start its own")
    doc, recs = run_records(tmp_path, f"libs/{lib}", "-p", "pattern=rate", "-p", "rate=2k", "-p", "size=64")
    [b] = recs
    if b["status"] == "skipped":
        pytest.skip(b["error"])
    assert b["status"] == "ok", b["error"]
    assert b["integrity"]["lost"] == b["integrity"]["corrupt"] == b["integrity"]["duplicated"] == 0
    assert b["integrity"]["sent"] == b["integrity"]["received"] > 0
    assert b["extra"]["rate"]["requested_per_s"] == 2000
    assert b["extra"]["rate"]["sent"] > 0 and b["latency_ns"] is not None or b["extra"]["rate"]["saturated"]
    # Too small to carry the intended send time: refused before any work, naming the fix.
    r = ipclab("run", f"libs/{lib}", "-p", "pattern=rate", "-p", "size=24", *SHORT)
    assert r.returncode == 2 and "size >= 32" in r.stderr, r.stderr
