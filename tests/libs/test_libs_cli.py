"""The library transports as separate processes, each in an ipclab run of its own (nng cannot
start again in a process forked after it ran in its parent: the second run of one invocation is
skipped with that reason), the versions in the environment block, nothing left behind.

Run by ctest (`libs.cli`) with the binary in IPCLAB_BIN; by hand:
    IPCLAB_BIN=$PWD/build/release/ipclab python3 -m pytest -q tests/libs
"""
import json
import os
import time

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
        if lib == "zmq":  # socket=auto: the pair of libzmq's perf tools for the pattern
            want = ("REQ", "REP") if b["params"]["pattern"] == "roundtrip" else ("PUSH", "PULL")
            assert (b["extra"]["sockets"]["sender"], b["extra"]["sockets"]["receiver"]) == want, b["name"]
    libraries = doc["context"]["libraries"]
    assert {"libzmq", "nng"} <= libraries.keys(), libraries
    # The run's private folder (its ipc sockets) is gone; the per-user state folder stays, empty.
    state = tmp_path / f"ipclab-{os.geteuid()}"
    assert list(state.iterdir()) == []


@pytest.mark.parametrize("socket", ["pushpull", "pair"])
@pytest.mark.parametrize("endpoint", ["ipc", "tcp"])
def test_zmq_processes_stream_every_message_once_and_stop_at_once(tmp_path, socket, endpoint):
    # A one-way stream between two processes: every message once, in order, intact; the
    # receiver's acknowledgement of the stop marker (in the rendezvous both processes map, PUSH
    # having no way back) lets the sender close at once — waited out, its 5 s bound would show.
    t0 = time.monotonic()
    doc, [b] = run_records(tmp_path, "libs/zmq", "-p", "mode=processes", "-p", f"socket={socket}",
                           "-p", f"endpoint={endpoint}", "-p", "pattern=throughput", "-p", "size=64K")
    took = time.monotonic() - t0
    assert b["status"] == "ok", b["error"]
    i = b["integrity"]
    assert i["sent"] == i["received"] > 0, b["name"]
    assert i["lost"] == i["duplicated"] == i["reordered"] == i["corrupt"] == 0, b["name"]
    want = {"sender": "PUSH", "receiver": "PULL"} if socket == "pushpull" else {"sender": "PAIR", "receiver": "PAIR"}
    assert b["extra"]["sockets"] == want
    assert took < 4.5, f"{took:.1f} s for one short point: the sender waited out its bound for the stop's acknowledgement"


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
