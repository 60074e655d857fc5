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
