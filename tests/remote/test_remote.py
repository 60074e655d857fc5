"""Two hosts (`ipclab run --remote`, docs/remote.md), end to end, on the rig of
report/ipclab_report/netpair.py: two network namespaces joined by a veth pair, Debian's OpenSSH
server in the far one (host keys checked, not waived), and a delay on the path — `tc netem` on the
pair or, in a kernel built without netem, its delay wire. The "remote" ipclab is this very binary,
reached through ssh. Where the kernel has time namespaces, sshd (and so the remote side) runs in one
whose CLOCK_MONOTONIC is SKEW_S ahead, as another host's would be: the one-way latency's clock
offset then has a true value to be checked against, which a missing or wrongly signed correction
misses by SKEW_S.

Everything the module creates has a name of its own run (namespaces, veth pair, temp folder) and is
removed on every exit path; nothing it did not create is touched. Skips, naming the reason, when
namespaces, veth, netem or sshd cannot be had (not root, no iproute2, no openssh-server).

Run by ctest (`cli.remote`) with the binary in IPCLAB_BIN; by hand:
    IPCLAB_BIN=build/release/ipclab python3 -m pytest -q -p no:cacheprovider tests/remote
"""
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from ipclab_report import netpair
from ipclab_report.netpair import sh

BINARY = os.environ.get("IPCLAB_BIN", "")
# netem on each end of the pair (or the wire each way): +2 × 1 ms per round trip. Long enough that
# what a delay costs beyond itself is small beside it: a side that waits 1 ms has its CPU halted, and
# a halted vCPU wakes tens of µs later than a busy one (KVM polls a halting vCPU for 200 µs at most;
# CI's machine, at 200 µs each way, woke ~25 µs late each way, 11% of the round trip).
DELAY_US = 1000
SKEW_S = 1000  # the far namespace's CLOCK_MONOTONIC ahead of this one's (a time namespace)


class Pair(netpair.Pair):
    """The shared rig (ipclab_report/netpair.py), with what the tests ask of it."""

    def run(self, *args, key="client", port=None, ipclab=None, timeout=60, background=False, reps=1, env=None):
        """`ipclab run ARGS --remote root@FAR` from the near namespace; (rc, stderr, records, context).
        `env`: variables for this side's ipclab beyond the test's own."""
        out = self.root / f"r{random.randrange(1 << 30)}.json"
        cmd = self.in_near(BINARY, "run", *args, "--repetitions", str(reps), "--json", str(out),
                           *self.remote_args(ipclab or BINARY, key, port))
        env = self.near_env(**(env or {}))
        if background:
            return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), out
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        return (r.returncode, r.stderr, *records_of(out))

    def remote_runs_left(self):
        """Run folders left in the remote side's state folder ($TMPDIR/ipclab-<uid>/run.*)."""
        return sorted(str(p) for p in self.remote_tmp.glob("ipclab-*/run.*"))


def records_of(out: Path):
    if not out.exists():
        return [], {}
    doc = json.loads(out.read_text())
    return [b for b in doc["benchmarks"] if b.get("run_type", "iteration") == "iteration"], doc.get("context", {})


def median_us(rec):
    return rec["latency_ns"]["p50"] / 1000


@pytest.fixture(scope="module")
def pair():
    if not BINARY or not os.access(BINARY, os.X_OK):
        pytest.skip("IPCLAB_BIN does not name the ipclab binary")
    if netpair.missing():
        pytest.skip(netpair.missing())
    root = Path(tempfile.mkdtemp(prefix="ipclab-remote-test."))
    os.chmod(root, 0o700)
    p = Pair(root, skew_s=SKEW_S)
    try:
        try:
            p.open()
            p.check_ssh()
        except RuntimeError as e:
            pytest.skip(f"cannot set up two namespaces with sshd here: {e}")
        # netem is a module some kernels lack (a microVM's): only the delay test needs it, and
        # without it takes the delay wire.
        p.ready_delay(DELAY_US)
        yield p
    finally:
        p.close()
        shutil.rmtree(root, ignore_errors=True)


RT = ["-p", "pattern=roundtrip", "-p", "size=64", "--duration", "0.4", "--warmup", "0.1"]


@pytest.mark.parametrize("mech", ["tcp", "udp"])
def test_round_trip_across_the_pair(pair, mech):
    # Two repetitions over the one ssh session: each benchmark's requests end with it.
    rc, err, recs, ctx = pair.run(f"messaging/{mech}", *RT, "-p", "producers=2", "-p", "consumers=2", reps=2)
    assert rc == 0, err
    assert [r["status"] for r in recs] == ["ok", "ok"], [r.get("error") for r in recs]
    rec = recs[0]
    # Every round trip checked by the client, end to end across the pair.
    integ = rec["integrity"]
    assert integ["lost"] == 0 and integ["corrupt"] == 0 and integ["duplicated"] == 0, integ
    assert integ["received"] == integ["sent"] >= rec["ops"] > 0, integ
    # The remote side's own CPU as a role of its own, measured there, with its context switches.
    role = f"server@root@{pair.far_ip}"
    by_role = rec["extra"]["cpu_by_role"]
    assert role in by_role and "client" in by_role, by_role
    assert by_role[role]["user_s"] + by_role[role]["sys_s"] > 0, by_role[role]
    assert by_role[role]["ctx_vol"] > 0, by_role[role]  # a blocking server sleeps between requests
    assert by_role[role]["measured_on"] == f"root@{pair.far_ip}"
    # It echoed every request its two clients sent (warm-up and the stop markers included).
    assert rec["extra"]["remote"]["requests"] >= integ["sent"], (rec["extra"]["remote"], integ)
    assert rec["extra"]["remote"]["address"] == pair.far_ip
    # The network path from both ends: the veth pair.
    path = rec["extra"]["network_path"]
    assert path["local"]["interface"] == pair.veth_near and path["remote"]["interface"] == pair.veth_far, path
    assert path["local"]["address"] == pair.near_ip and path["remote"]["address"] == pair.far_ip
    assert path["local"]["mtu"] == path["remote"]["mtu"] == 1500 and path["local"]["driver"] == "veth", path
    # Both hosts' environment blocks, and the clock offset with its uncertainty (one clock here:
    # the true offset is 0, so the estimate lies within its bound of it).
    assert ctx["remote"]["host"] == f"root@{pair.far_ip}"
    assert ctx["remote"]["environment"]["ipclab_version"] == ctx["ipclab_version"]
    assert ctx["remote"]["environment"]["kernel"] == ctx["kernel"]
    clock = ctx["remote"]["clock"]
    assert 0 < clock["uncertainty_ns"] and abs(clock["offset_ns"]) <= clock["uncertainty_ns"], clock
    # Nothing left in the remote side's run folder, nor in the local one.
    assert pair.remote_runs_left() == []
    assert list(pair.local_tmp.glob("ipclab-*/run.*")) == []


@pytest.mark.parametrize("mech", ["tcp", "udp"])
def test_round_trip_shows_the_injected_delay(pair, mech):
    if pair.netem:
        pytest.skip(pair.netem)
    # Over the wire, where there is no netem: the data path to its far end (ssh stays on the veth),
    # the wire polling throughout, so that the base and the delayed runs cross the same link.
    via = ["--remote-address", pair.wire_far_ip] if pair.wire else []

    def measure(us):
        pair.delay(us)
        rc, err, recs, ctx = pair.run(f"messaging/{mech}", *RT, *via)
        return recs[0] if rc == 0 and recs else err.strip().splitlines()[-1:]

    # A delay only ever adds: a side or the wire descheduled on a loaded machine adds more, never
    # less. So a base and a delayed run are taken up to three times (a try that fails, say an ssh
    # connection a busy sshd reset, is one of them), and the closest pair decides.
    pair.wire_spin = bool(pair.wire)
    tries, failed = [], []
    try:
        for _ in range(3):
            base_rec, rec = measure(0), measure(DELAY_US)
            if not isinstance(base_rec, dict) or not isinstance(rec, dict):
                failed.append((base_rec, rec))
                continue
            base, delayed = median_us(base_rec), median_us(rec)
            assert delayed >= 2 * DELAY_US, (delayed, base)  # never: a delay only adds
            tries.append((abs(delayed - (2 * DELAY_US + base)) / (2 * DELAY_US + base), delayed, base, rec))
            if tries[-1][0] <= 0.10:
                break
    finally:
        pair.wire_spin = False
        pair.delay(0)
    assert tries, failed
    miss, delayed, base, rec = min(tries, key=lambda t: t[0])
    assert miss <= 0.10, ([(round(d, 1), round(b, 1)) for _, d, b, _ in tries], failed)  # (delayed, base) µs
    # The record names the path it ran over: each end's netem qdisc, or the wire's devices.
    path = rec["extra"]["network_path"]
    if pair.wire:
        assert (path["local"]["interface"], path["remote"]["interface"]) == (pair.wire_near, pair.wire_far), path
    else:
        assert "netem" in path["local"]["qdisc"] and "netem" in path["remote"]["qdisc"], path


TP = ["-p", "pattern=throughput", "-p", "size=64", "--duration", "0.4", "--warmup", "0.1"]


@pytest.mark.parametrize("mech,consumers", [("tcp", 1), ("udp", 2)])
def test_throughput_across_the_pair(pair, mech, consumers):
    """The producers here, the consumers there, every message checked there as a local consumer
    checks it; the one-way latency corrected by the estimated offset of the two monotonic clocks."""
    shape = ["-p", f"producers={consumers}", "-p", f"consumers={consumers}"]
    rc, err, recs, ctx = pair.run(f"messaging/{mech}", *TP, *shape, reps=2)
    assert rc == 0, err
    assert [r["status"] for r in recs] == ["ok", "ok"], [r.get("error") for r in recs]
    rec = recs[0]
    # Every message the producers sent here reached a consumer there, intact, once.
    integ = rec["integrity"]
    assert integ["lost"] == integ["corrupt"] == integ["duplicated"] == integ["reordered"] == 0, integ
    assert integ["received"] == integ["sent"] >= rec["ops"] > 0, integ
    # Both sides' counts agree: what the consumers took there is every message sent here and a stop
    # marker each.
    assert rec["extra"]["remote"]["requests"] == integ["sent"] + consumers, (rec["extra"]["remote"], integ)
    if mech == "udp":  # UDP's window, sized there and kept here on credits that come back
        assert rec["extra"]["credit_window"] >= 1
    # The consumers' CPU as a role of their own, measured there, with their context switches.
    role = f"consumer@root@{pair.far_ip}"
    by_role = rec["extra"]["cpu_by_role"]
    assert set(by_role) == {role, "producer"}, by_role
    assert by_role[role]["user_s"] + by_role[role]["sys_s"] > 0 and by_role[role]["ctx_vol"] > 0, by_role
    assert by_role[role]["measured_on"] == f"root@{pair.far_ip}"
    assert by_role[role]["per_op_ns"] > 0 and by_role["producer"]["per_op_ns"] > 0, by_role
    # The one-way latency, of every measured message, beside the clock offset it was corrected by.
    # Its estimate holds the true offset (SKEW_S with a time namespace, else 0) within its bound.
    lat, ow = rec["latency_ns"], rec["extra"]["one_way"]
    assert lat["kind"] == "one_way" and lat["count"] == rec["ops"], lat
    assert 0 < ow["uncertainty_ns"] and abs(ow["offset_ns"] - pair.skew_ns) <= ow["uncertainty_ns"], ow
    assert ow["before"]["offset_ns"] == ow["offset_ns"] and "after" in ow and "CLOCK_MONOTONIC" in ow["method"]
    # Plausible: positive, its least below a round trip of the same path, and none off by the skew
    # (a correction missed or of the wrong sign is SKEW_S off). Values within the offset's error of
    # zero count as 0, so the median is not asserted above zero: the tail is.
    rc, err, rts, _ = pair.run(f"messaging/{mech}", *RT)
    assert rc == 0, err
    assert lat["p99"] > 0 and lat["min"] < rts[0]["latency_ns"]["p50"], (lat, rts[0]["latency_ns"])
    assert lat["max"] < SKEW_S * 10**9 // 2, lat
    assert pair.remote_runs_left() == []
    assert list(pair.local_tmp.glob("ipclab-*/run.*")) == []


@pytest.mark.parametrize("mech", ["messaging/tcp", "messaging/udp", "libs/zmq", "libs/nng", "libs/grpc"])
def test_open_loop_across_the_pair(pair, mech):
    """pattern=rate: the producers here send at their intended times, the consumers there check each
    message and time it from its intended send time, on this host's clock (corrected by the offset,
    as throughput's one-way latency is: a far clock SKEW_S ahead shows in no figure)."""
    tcp = ["-p", "endpoint=tcp"] if mech.startswith("libs/") else []
    rc, err, recs, _ = pair.run(mech, *tcp, "-p", "pattern=rate", "-p", "rate=5000", "-p", "size=64",
                                "--duration", "0.6", "--warmup", "0.1")
    assert rc == 0, err
    rec = recs[0]
    assert rec["status"] == "ok", rec["error"]
    integ = rec["integrity"]
    assert integ["lost"] == integ["corrupt"] == integ["duplicated"] == 0 and integ["received"] == integ["sent"] > 0, integ
    rate = rec["extra"]["rate"]
    assert not rate["saturated"], rate["saturation"]
    assert abs(rate["achieved_per_s"] - 5000) < 500 and rate["due"] >= rate["sent"] > 0, rate
    # The receivers' half of the trace came back: the latency from the actual send time, every
    # measured message's, beside the corrected one.
    lat, raw = rec["latency_ns"], rate["raw_ns"]
    assert lat["kind"] == "one_way" and lat["count"] == rec["ops"] > 0 and raw["count"] == rec["ops"], (lat, raw)
    # Both corrected by the same offset, whose error can put a median within it of zero at 0 (as
    # throughput's): the raw one (from the actual send) is never above the one from the intended
    # send, the tail is above zero, and none is off by the skew.
    ow = rec["extra"]["one_way"]
    assert abs(ow["offset_ns"] - pair.skew_ns) <= ow["uncertainty_ns"], ow
    assert 0 <= raw["p50"] <= lat["p50"] and 0 < raw["max"] <= lat["max"] and lat["p99"] > 0, (lat, raw, ow)
    assert lat["max"] < SKEW_S * 10**9 // 2, (lat, raw)
    assert rec["extra"]["cpu_by_role"][f"consumer@root@{pair.far_ip}"]["measured_on"] == f"root@{pair.far_ip}"
    assert pair.remote_runs_left() == []


def test_throughput_refuses_what_does_not_cross_yet(pair):
    rc, err, _, _ = pair.run("messaging/udp", *TP, "-p", "latency_reservoir=100")
    line = one_line_refusal(rc, err)
    assert "latency_reservoir=0" in line, line


SHORT = ["--duration", "0.3", "--warmup", "0.1"]


def check_transport_across(pair, rec):
    """A transport benchmark run across the pair: ok, every message accounted for and intact, the
    far side's CPU as a role of its own measured there, the data path the veth pair."""
    assert rec["status"] == "ok", (rec["name"], rec.get("error"))
    integ = rec["integrity"]
    assert integ["lost"] == integ["corrupt"] == integ["duplicated"] == 0, (rec["name"], integ)
    assert integ["received"] == integ["sent"] >= rec["ops"] > 0, (rec["name"], integ)
    roundtrip = rec["params"]["pattern"] == "roundtrip"
    role = ("server@" if roundtrip else "consumer@") + f"root@{pair.far_ip}"
    by_role = rec["extra"]["cpu_by_role"]
    assert set(by_role) == {role, "client" if roundtrip else "producer"}, (rec["name"], by_role)
    assert by_role[role]["measured_on"] == f"root@{pair.far_ip}", by_role
    assert by_role[role]["user_s"] + by_role[role]["sys_s"] > 0, (rec["name"], by_role)
    remote = rec["extra"]["remote"]
    assert remote["address"] == pair.far_ip and len(remote["ports"]) == 1 and remote["ports"][0] > 0, remote
    # Round trips: every request echoed there (warm-up and the stop marker too); throughput: the
    # consumer took every message sent here and its stop marker.
    if roundtrip:
        assert remote["requests"] >= integ["sent"], (rec["name"], remote, integ)
    else:
        assert remote["requests"] == integ["sent"] + 1, (rec["name"], remote, integ)
        assert rec["latency_ns"]["kind"] == "one_way" and "offset_ns" in rec["extra"]["one_way"], rec["name"]
    path = rec["extra"]["network_path"]
    assert path["local"]["interface"] == pair.veth_near and path["remote"]["interface"] == pair.veth_far, path


def test_libs_over_tcp_across_the_pair(pair):
    """ZeroMQ, nng and gRPC over tcp: the library's receiving side listens there, on the data path's
    address, and its sending side here reaches it at the port reported over ssh; each message is
    checked as a local run checks it. One ssh session for the six points."""
    rc, err, recs, _ = pair.run("libs/zmq", "libs/nng", "libs/grpc", "-p", "endpoint=tcp",
                                "-p", "pattern=roundtrip,throughput", "-p", "size=64", *SHORT)
    assert rc == 0, err
    assert sorted((r["mechanism"], r["params"]["pattern"]) for r in recs) == sorted(
        (m, p) for m in ("zmq", "nng", "grpc") for p in ("roundtrip", "throughput")), [r["name"] for r in recs]
    for rec in recs:
        check_transport_across(pair, rec)
        assert rec["extra"]["kernel_transport"] == "tcp" and rec["extra"]["library"], rec["extra"]
    assert pair.remote_runs_left() == []
    assert list(pair.local_tmp.glob("ipclab-*/run.*")) == []


def test_zerocopy_over_tcp_across_the_pair(pair):
    """bulk/zerocopy socket=tcp, each way of sending: the receiver there, the sender here; the bulk
    suite's figures (bandwidth, CPU per MiB) as for a local run."""
    rc, err, recs, _ = pair.run("bulk/zerocopy", "-p", "socket=tcp", "-p", "send=copy,msg_zerocopy,uring_send_zc",
                                "-p", "pattern=throughput,roundtrip", "-p", "size=64K", *SHORT)
    assert rc == 0, err
    assert len(recs) == 6, [r["name"] for r in recs]
    for rec in recs:
        if rec["status"] == "skipped":  # this kernel lacks the zero-copy send
            assert rec["params"]["send"] != "copy", rec["error"]
            continue
        check_transport_across(pair, rec)
        assert rec["extra"]["bulk"]["GiB_per_s"] > 0, rec["extra"]
    assert pair.remote_runs_left() == []


@pytest.mark.parametrize("mech,params,fix", [
    ("libs/zmq", ["-p", "endpoint=ipc"], "use -p endpoint=tcp"),
    ("libs/nng", ["-p", "endpoint=inproc"], "use -p endpoint=tcp"),
    ("libs/grpc", [], "use -p endpoint=tcp"),  # its default endpoint: ipc
    ("bulk/zerocopy", ["-p", "socket=unix"], "use -p socket=tcp"),
    ("libs/iceoryx", [], "cannot cross hosts"),
    ("libs/dbus", [], "cannot cross hosts"),
])
def test_libs_and_bulk_refuse_what_cannot_cross(pair, mech, params, fix):
    rc, err, recs, _ = pair.run(mech, *params, "-p", "pattern=roundtrip")
    line = one_line_refusal(rc, err)
    assert mech in line and fix in line, line
    assert recs == []


@pytest.mark.parametrize("mech", ["epoll", "uring"])
def test_echo_with_the_server_across_the_pair(pair, mech):
    rc, err, recs, ctx = pair.run(f"echo/{mech}", "-p", "connections=16", "-p", "size=1024",
                                  "--duration", "0.4", "--warmup", "0.1")
    assert rc == 0, err
    rec = recs[0]
    if mech == "uring" and rec["status"] == "skipped":
        pytest.skip(rec["error"])  # no io_uring here
    assert rec["status"] == "ok", rec["error"]
    # Every echo's bytes checked by the client; none corrupt, none missing.
    integ = rec["integrity"]
    assert integ["corrupt"] == 0 and integ["lost"] == 0 and integ["received"] == integ["sent"] > 0, integ
    assert rec["ops"] > 0
    # The server ran there, measured there: its CPU per echo and its role.
    role = f"server@root@{pair.far_ip}"
    assert rec["extra"]["server_measured_on"] == f"root@{pair.far_ip}"
    assert rec["extra"]["server_cpu_per_echo_ns"] > 0
    assert rec["extra"]["cpu_by_role"][role]["sys_s"] > 0 and rec["extra"]["cpu_by_role"][role]["ctx_vol"] >= 0
    assert rec["extra"]["remote"]["address"] == pair.far_ip
    path = rec["extra"]["network_path"]
    assert path["local"]["interface"] == pair.veth_near and path["remote"]["interface"] == pair.veth_far, path
    assert pair.remote_runs_left() == []


@pytest.mark.parametrize("mech", ["epoll_et", "uring"])
def test_servers_with_the_server_across_the_pair(pair, mech):
    rc, err, recs, ctx = pair.run(f"servers/{mech}", "-p", "concurrency=1000", "-p", "waves=1", "--warmup", "0")
    rec = recs[0]
    if mech == "uring" and rec["status"] == "skipped":
        pytest.skip(rec["error"])  # no io_uring here
    assert rc == 0, err
    assert rec["status"] == "ok", rec["error"]
    # Every one of the 1000 clients' sessions processed, checked reply by reply.
    integ = rec["integrity"]
    assert integ["sent"] == 1000 and integ["received"] == 1000 == rec["ops"], integ
    assert integ["lost"] == 0 and integ["corrupt"] == 0, integ
    role = f"server@root@{pair.far_ip}"
    assert rec["extra"]["server_measured_on"] == f"root@{pair.far_ip}"
    assert rec["extra"]["cpu_by_role"][role]["sys_s"] > 0
    assert rec["extra"]["network_path"]["remote"]["interface"] == pair.veth_far
    assert pair.remote_runs_left() == []


def clean_record(pair, *args):
    """`ipclab run ARGS` across the pair: its one record, ok, every request answered intact."""
    rc, err, recs, _ = pair.run(*args)
    assert rc == 0, err
    rec = recs[0]
    assert rec["status"] == "ok", rec["error"]
    integ = rec["integrity"]
    assert integ["corrupt"] == 0 and integ["lost"] == 0 and integ["received"] == integ["sent"] > 0, integ
    return rec


def test_echo_open_loop_with_the_server_across_the_pair(pair):
    """pattern=rate: requests leave at their intended times, several in flight per connection (the
    server there set TCP_NODELAY, or Nagle would hold echoes 40 ms), each checked as it returns."""
    rec = clean_record(pair, "echo/epoll", "-p", "pattern=rate", "-p", "rate=2000", "-p", "connections=4",
                       "--duration", "0.5", "--warmup", "0.1")
    rate = rec["extra"]["rate"]
    assert not rate["saturated"], rate["saturation"]
    assert abs(rate["achieved_per_s"] - 2000) < 200, rate
    # No echo waited for a delayed ACK: the slowest is far below Nagle's 40 ms.
    assert rec["latency_ns"]["p99"] < 20_000_000, rec["latency_ns"]
    assert rec["extra"]["cpu_by_role"][f"server@root@{pair.far_ip}"]["sys_s"] > 0
    assert pair.remote_runs_left() == []


def test_echo_with_several_reactors_across_the_pair(pair):
    """reactors=2: the server there runs two reactor threads, pinned to that host's CPUs; the record
    shows them as reactor@HOST sides (not as CPUs of this host), the clients here."""
    rec = clean_record(pair, "echo/epoll", "-p", "reactors=2", "-p", "connections=8", "--duration", "0.4",
                       "--warmup", "0.1")
    sides = rec["placement"]["sides"]
    far = [s for s in sides if s["role"] == f"reactor@root@{pair.far_ip}"]
    assert [s["index"] for s in far] == [0, 1] and all(len(s["pinned"]) == 1 for s in far), sides
    assert not [s for s in sides if s["role"] == "reactor"], sides
    assert len([s for s in sides if s["role"] == "client"]) == 2, sides
    assert pair.remote_runs_left() == []


@pytest.mark.parametrize("bench", [["echo/epoll", "-p", "connections=16", "-p", "size=1024"],
                                   ["echo/epoll", "-p", "pattern=rate", "-p", "rate=2000", "-p", "connections=4"],
                                   ["servers/epoll_et", "-p", "concurrency=1000", "-p", "waves=1", "--warmup", "0"]],
                         ids=["echo", "echo-rate", "servers"])
def test_the_clients_across_the_pair_and_the_server_here(pair, bench):
    """--remote-role client: the load generator there, the server here. The remote side runs the
    benchmark as a local run would, asking this side for its server; the record is the same
    benchmark's, its clients named after their host and the server's CPU measured here."""
    rec = clean_record(pair, *bench, "--duration", "0.4", *([] if "--warmup" in bench else ["--warmup", "0.1"]),
                       "--remote-role", "client")
    assert rec["ops"] > 0 and rec["wall_s"] > 0
    far = f"root@{pair.far_ip}"
    by_role = rec["extra"]["cpu_by_role"]
    assert by_role["server"]["sys_s"] > 0 and "measured_on" not in by_role["server"], by_role
    assert by_role[f"client@{far}"]["measured_on"] == far, by_role
    assert rec["extra"]["clients_measured_on"] == far and "server_measured_on" not in rec["extra"]
    assert [s["role"] for s in rec["placement"]["sides"] if s["role"].startswith("client")] == [f"client@{far}"]
    assert [s["pinned"] for s in rec["placement"]["sides"] if s["role"] == "server"] == [[]], rec["placement"]
    # The path as this host sees it: its own end on the near veth, the far end on the other.
    path = rec["extra"]["network_path"]
    assert path["local"]["interface"] == pair.veth_near and path["remote"]["interface"] == pair.veth_far, path
    if "pattern=rate" in bench:
        assert not rec["extra"]["rate"]["saturated"], rec["extra"]["rate"]
    assert pair.remote_runs_left() == []


def test_the_far_clients_killed_mid_run_fail_it_naming_the_host(pair):
    """--remote-role client, the remote side (the clients) killed inside the window: the run fails
    naming the host and its own cause, the server here is stopped, and nothing is left here. Twice:
    the second remote side sweeps what the first left, and says so in its hello, not on the stderr
    whose last line the failure quotes."""
    for attempt in range(2):
        rc, err, out, _ = fault_mid_run(pair, ["echo/epoll", "-p", "connections=4", "--remote-role", "client"],
                                        "killed")
        assert rc == 1, err
        recs, _ = records_of(out)
        assert recs and recs[0]["status"] == "failed" and f"root@{pair.far_ip}" in recs[0]["error"], recs
        error = recs[0]["error"]
        assert "the remote ipclab was killed" in error and "removed what" not in error, error
        if attempt:  # the sweep there of the first one's folder, shown as the remote side's
            assert f"on root@{pair.far_ip}: removed what run" in err, err
        assert list(pair.local_tmp.glob("ipclab-*/run.*")) == []
        # No echo server of this run is left here.
        left = subprocess.run(["pgrep", "-f", f"{BINARY} run echo/epoll"], capture_output=True, text=True).stdout.split()
        assert left == [], left


def test_remote_role_client_refuses_what_has_no_server(pair):
    rc, err, _, _ = pair.run("messaging/tcp", *RT, "--remote-role", "client")
    line = one_line_refusal(rc, err)
    assert "--remote-role client" in line and "drop --remote-role" in line, line


def test_a_data_path_that_cannot_connect_fails_each_repetition(pair):
    """--remote-address of an address the far host has (on its loopback device) and this side has no
    route to: the remote side listens there, this side cannot connect. Each repetition fails at once
    naming the address, and the link serves the next."""
    unrouted = "192.0.2.77"  # TEST-NET-1
    sh("ip", "-n", pair.far, "addr", "add", f"{unrouted}/32", "dev", "lo")
    try:
        t0 = time.monotonic()
        rc, err, recs, _ = pair.run("messaging/tcp", *RT, "--remote-address", unrouted, reps=2)
    finally:
        sh("ip", "-n", pair.far, "addr", "del", f"{unrouted}/32", "dev", "lo", check=False)
    assert rc == 1, err
    assert len(recs) == 2 and all(r["status"] == "failed" for r in recs), recs
    for r in recs:
        assert f"cannot connect to the remote side at {unrouted}" in r["error"], r["error"]
    assert time.monotonic() - t0 < 15
    assert pair.remote_runs_left() == []


@pytest.mark.parametrize("address,kind", [("0.0.0.0", "unspecified"), ("127.0.0.1", "loopback"),
                                          ("224.0.0.1", "multicast"), ("255.255.255.255", "broadcast")])
def test_remote_address_that_is_no_host_is_refused_before_anything(pair, address, kind):
    """--remote-address that names no remote host's interface: exit 2, one line naming the fix,
    before ssh is started (the host is not loopback here)."""
    t0 = time.monotonic()
    rc, err, recs, _ = pair.run("messaging/tcp", *RT, "--remote-address", address)
    line = one_line_refusal(rc, err)
    assert f"--remote-address {address}" in line and kind in line and "leave --remote-address out" in line, line
    assert recs == [] and time.monotonic() - t0 < 3  # no ssh session: that takes longer here


def test_a_malformed_heartbeat_interval_is_refused(pair):
    rc, err, recs, _ = pair.run("messaging/tcp", *RT, env={"IPCLAB_REMOTE_HEARTBEAT_S": "often"})
    line = one_line_refusal(rc, err)
    assert "IPCLAB_REMOTE_HEARTBEAT_S 'often'" in line and "0.05 to 60" in line, line


def test_cpu_matrix_is_refused_across_hosts(pair):
    rc, err, recs, _ = pair.run("messaging/tcp", *RT, "--cpu-matrix", "every")
    line = one_line_refusal(rc, err)
    assert "--cpu-matrix" in line and "drop --cpu-matrix" in line, line
    assert recs == []


def one_line_refusal(rc, err):
    lines = err.strip().splitlines()
    assert rc == 2, err
    assert len(lines) == 1, err
    return lines[0]


def test_unreachable_host(pair):
    rc, err, recs, _ = pair.run("messaging/tcp", *RT, port=pair.port + 1)
    line = one_line_refusal(rc, err)
    assert f"--remote root@{pair.far_ip}" in line and "Connection refused" in line, line
    assert recs == []


def test_unknown_host_key(pair):
    """A host whose key is not in known_hosts: the fix named is adding it, not a port or a key."""
    empty = pair.root / "empty_known_hosts"
    empty.write_text("")
    rc, err, recs, _ = pair.run("messaging/tcp", *RT, "--ssh-option", f"-o UserKnownHostsFile={empty}")
    line = one_line_refusal(rc, err)
    assert "known_hosts" in line and "ssh-keyscan" in line and f"-p {pair.port}" in line, line
    assert "-i KEY" not in line, line


def test_refused_key(pair):
    rc, err, recs, _ = pair.run("messaging/tcp", *RT, key="stranger")
    line = one_line_refusal(rc, err)
    assert "Permission denied" in line and pair.far_ip in line, line


def test_missing_remote_ipclab(pair):
    rc, err, recs, _ = pair.run("messaging/tcp", *RT, ipclab="/nonexistent/ipclab")
    line = one_line_refusal(rc, err)
    assert "/nonexistent/ipclab" in line and "--remote-ipclab" in line, line


def test_different_remote_version(pair):
    fake = pair.root / "old-ipclab"
    fake.write_text("#!/bin/sh\necho '{\"ipclab_remote\":1,\"version\":\"0.0.1\",\"build_type\":\"Debug\","
                    "\"build_flags\":\"-O0\"}'\ncat >/dev/null\n")
    fake.chmod(0o755)
    rc, err, recs, _ = pair.run("messaging/tcp", *RT, ipclab=str(fake))
    line = one_line_refusal(rc, err)
    assert "0.0.1" in line and "Debug" in line and "this one is" in line, line


@pytest.mark.parametrize("mech", ["messaging/pipe", "messaging/shm_spsc", "messaging/unix_stream"])
def test_a_mechanism_that_cannot_cross_refuses(pair, mech):
    rc, err, recs, _ = pair.run(mech, *RT)
    line = one_line_refusal(rc, err)
    assert mech in line and "cannot cross hosts" in line, line


def remote_side_pid(pair):
    """The pid of the remote side (`ipclab remote-side`, started by sshd in the far namespace)."""
    for pid in sh("ip", "netns", "pids", pair.far, check=False).stdout.split():
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"remote-side" in cmd and cmd[0] == BINARY.encode():
            return int(pid)
    return None


def gone(pid, within_s):
    deadline = time.monotonic() + within_s
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.05)
    return not os.path.exists(f"/proc/{pid}")


def fault_mid_run(pair, args, fault):
    """Runs `ipclab run ARGS` across the pair for 3 s and, 1 s into it, kills the remote side
    (killed), stops it (frozen: continued once the run is over) or kills its ssh session
    (ssh_lost). Returns (exit code, stderr, the JSON's path, the remote side's pid)."""
    proc, out = pair.run(*args, "--duration", "3", "--warmup", "0.1", background=True)
    pid = None
    try:
        deadline = time.monotonic() + 20
        while pid is None and time.monotonic() < deadline:
            time.sleep(0.05)
            pid = remote_side_pid(pair)
        assert pid, "the remote side did not start"
        time.sleep(1.0)  # inside the measured window
        if fault == "killed":
            os.kill(pid, signal.SIGKILL)
        elif fault == "frozen":
            os.kill(pid, signal.SIGSTOP)
        else:  # its parent: the sshd process of its session
            os.kill(int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]), signal.SIGKILL)
        _, err = proc.communicate(timeout=40)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if pid and fault == "frozen":
            os.kill(pid, signal.SIGCONT)
    return proc.returncode, err, out, pid


@pytest.mark.parametrize("fault,pattern,mech", [("killed", "roundtrip", "tcp"), ("ssh_lost", "roundtrip", "tcp"),
                                                ("frozen", "roundtrip", "tcp"), ("killed", "throughput", "tcp"),
                                                ("frozen", "throughput", "tcp"), ("killed", "throughput", "udp"),
                                                ("frozen", "throughput", "udp")])
def test_remote_fault_mid_run_fails_naming_the_host(pair, fault, pattern, mech):
    """The remote side killed, its ssh session killed, or the remote side stopped (SIGSTOP) inside
    the measured window: the run fails naming the host; the remote side ends (once continued, when
    frozen) and leaves no run folder (a killed one's is swept by the next run there)."""
    rc, err, out, pid = fault_mid_run(pair, [f"messaging/{mech}", "-p", f"pattern={pattern}", "-p", "size=64"], fault)
    assert rc == 1, err
    recs, _ = records_of(out)
    assert recs and recs[0]["status"] == "failed"
    error = recs[0]["error"]
    role = "server" if pattern == "roundtrip" else "consumer"
    assert f"{role}@root@{pair.far_ip}" in error, error
    if fault == "frozen":
        assert "stalled" in error, error
        # The pid the stall names for the remote side is this host's ssh to it, and it says so.
        if f"{role}@root@{pair.far_ip} 0 (" in error:
            assert f"{role}@root@{pair.far_ip} 0 (the local ssh to it: pid" in error, error
    # The remote side reads the end of its input (the session gone) and ends, sweeping its folder.
    assert gone(pid, 10), f"the remote side ({fault}) is still running"
    if fault == "killed":  # its folder is left to the next run there, which sweeps it
        assert len(pair.remote_runs_left()) == 1
        rc, err, recs, _ = pair.run("messaging/tcp", *RT)
        assert rc == 0, err
    assert pair.remote_runs_left() == []


# -- A remote side that answers what it should not -------------------------------------------------

PROXY = r'''
import json, subprocess, sys, threading
mode, real = sys.argv[1], sys.argv[2]
child = subprocess.Popen([real, *sys.argv[3:]], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

def down():
    for line in sys.stdin.buffer:
        child.stdin.write(line)
        child.stdin.flush()
    child.stdin.close()

def tamper(j):
    if mode == "address" and "ports" in j:
        j.update(address="127.0.0.1", ports=[22])
    if mode == "clock" and "t" in j:
        j["t"] = "soon"
    cpu = j.get("result", {}).get("cpu")
    if cpu is not None:
        if mode == "negative":
            cpu["user_s"] = -5
        if mode == "huge":
            cpu.update(sys_s=1e308, ctx_vol=1e308)
        if mode == "nan":
            cpu["user_s"] = "NaN"
        if mode == "requests":
            j["result"]["requests"] = 5
    return j

threading.Thread(target=down, daemon=True).start()
for line in child.stdout:
    try:
        j = json.loads(line)
    except ValueError:
        j = None
    if isinstance(j, dict):
        line = (json.dumps(tamper(j)) + "\n").encode()
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
sys.exit(child.wait())
'''


def fake_remote(pair, mode):
    """A stand-in for the remote ipclab: this very one behind a proxy that alters its answers as
    `mode` says (PROXY), or, for `junk`, behind a login shell's 4 MiB of output on one line."""
    proxy = pair.root / "proxy.py"
    proxy.write_text(PROXY)
    fake = pair.root / f"fake-{mode}"
    if mode == "junk":
        fake.write_text(f"#!/bin/sh\nhead -c 4194304 /dev/zero | tr '\\0' x\nexec {BINARY} \"$@\"\n")
    else:
        fake.write_text(f"#!/bin/sh\nexec python3 {proxy} {mode} {BINARY} \"$@\"\n")
    fake.chmod(0o755)
    return str(fake)


def test_an_answer_pointing_the_data_path_elsewhere_is_refused(pair):
    """The remote side answers that its end is at 127.0.0.1:22: this side connects nowhere but the
    address ssh reached, and the repetition fails naming the field; nothing here is dialled."""
    # A listener at this side's 127.0.0.1:22, which would see a connection were the answer followed.
    listener = subprocess.Popen(
        ["ip", "netns", "exec", pair.near, "python3", "-c",
         "import socket\ns = socket.socket()\ns.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
         "s.bind(('127.0.0.1', 22))\ns.listen()\nprint('listening', flush=True)\ns.settimeout(30)\n"
         "s.accept()\nprint('dialled', flush=True)\n"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert listener.stdout.readline().strip() == "listening"
        rc, err, recs, _ = pair.run("messaging/tcp", *RT, ipclab=fake_remote(pair, "address"))
    finally:
        listener.kill()
        rest, _ = listener.communicate()
    assert "dialled" not in rest
    assert rc == 1, err
    error = recs[0]["error"]
    assert recs[0]["status"] == "failed" and "bench.address" in error and "127.0.0.1" in error, error
    assert f"goes only to {pair.far_ip}" in error and "cannot connect" not in error, error
    assert pair.remote_runs_left() == []


@pytest.mark.parametrize("mode,field", [("negative", "result.cpu.user_s is -5"),
                                        ("huge", "result.cpu.sys_s is 1e+308"),
                                        ("nan", 'result.cpu.user_s is "NaN"'),
                                        ("requests", "result.requests is 5")])
def test_implausible_figures_fail_the_record_naming_the_field(pair, mode, field):
    """The remote side's figures (its CPU, the requests it answered) are checked against what this
    side saw; one that fails fails the record, naming the field, and none of its answer is taken."""
    rc, err, recs, _ = pair.run("messaging/tcp", *RT, ipclab=fake_remote(pair, mode))
    assert rc == 1, err
    rec = recs[0]
    assert rec["status"] == "failed" and field in rec["error"] and "want" in rec["error"], rec["error"]
    assert f"server@root@{pair.far_ip}" not in rec["extra"].get("cpu_by_role", {}), rec["extra"]["cpu_by_role"]
    assert rec["cpu"]["ctx_vol"] >= 0 and rec["cpu"]["user_s"] >= 0, rec["cpu"]


def test_a_malformed_clock_answer_names_the_field(pair):
    rc, err, recs, _ = pair.run("messaging/tcp", *RT, ipclab=fake_remote(pair, "clock"))
    line = one_line_refusal(rc, err)
    assert 'clock.t is "soon"' in line and "malformed" in line and "not this one" in line, line
    assert "json.exception" not in line, line


def test_a_login_shell_that_prints_too_much_is_named(pair):
    """4 MiB on stdout before the remote ipclab's hello, on one line: reported as the login shell's
    output, with the fix, at once — not as a hello that never came."""
    t0 = time.monotonic()
    rc, err, recs, _ = pair.run("messaging/tcp", *RT, ipclab=fake_remote(pair, "junk"))
    line = one_line_refusal(rc, err)
    assert "login shell printed" in line and "quiet for non-interactive" in line, line
    assert "no answer" not in line and time.monotonic() - t0 < 20, line


# -- An outage --------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [["messaging/tcp", *RT[:4], "--duration", "4"],
                                  ["echo/epoll", "-p", "connections=4", "--remote-role", "client", "--duration", "6"]],
                         ids=["roundtrip", "far-clients"])
def test_an_outage_ends_the_remote_side_within_the_bound(pair, args):
    """The link down mid-run for longer than the heartbeat's bound (IPCLAB_REMOTE_HEARTBEAT_S=0.5:
    silence past 5 beats ends the remote side, its clean-up forced 2 beats later): the remote side
    is gone within the bound with nothing of its run left, though sshd there still holds its session
    and the link is still down; the local run fails naming the host. Its clients' run there
    (far-clients) outlasts the bound, so its end is the forced clean-up's (SIGTERM's)."""
    beat = 0.5
    bound, slack = 7 * beat, 3.0
    shm_before = set(os.listdir("/dev/shm"))
    proc, out = pair.run(*args, "--warmup", "0.1", background=True, env={"IPCLAB_REMOTE_HEARTBEAT_S": str(beat)})
    link = ["ip", "-n", pair.far, "link", "set", pair.veth_far]
    down_at = None
    try:
        deadline = time.monotonic() + 20
        pid = None
        while pid is None and time.monotonic() < deadline:
            time.sleep(0.05)
            pid = remote_side_pid(pair)
        assert pid, "the remote side did not start"
        time.sleep(1.0)  # inside the measured window
        sh(*link, "down")
        down_at = time.monotonic()
        ended = gone(pid, bound + slack)
        took = time.monotonic() - down_at
        # Still down past the bound: what ended it is its own deadline, not the link's return.
        time.sleep(max(0.0, bound + 0.5 - took))
        assert ended, f"the remote side is still there {took:.1f} s into the outage"
        assert remote_side_pid(pair) is None
        assert pair.remote_runs_left() == []
        assert [n for n in set(os.listdir("/dev/shm")) - shm_before if n.startswith(f"ipclab.{pid}.")] == []
        sh(*link, "up")
        down_at = None
        _, err = proc.communicate(timeout=40)
    finally:
        if down_at is not None:
            sh(*link, "up", check=False)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, err
    recs, ctx = records_of(out)
    assert recs and recs[0]["status"] == "failed" and f"root@{pair.far_ip}" in recs[0]["error"], recs
    assert ctx["remote"]["heartbeat"]["interval_s"] == beat and ctx["remote"]["heartbeat"]["deadline_s"] == 5 * beat
    assert list(pair.local_tmp.glob("ipclab-*/run.*")) == []


@pytest.fixture
def two_hosts():
    """scripts/two-hosts.py, where it can make its pair here."""
    if not BINARY or not os.access(BINARY, os.X_OK):
        pytest.skip("IPCLAB_BIN does not name the ipclab binary")
    if netpair.missing():
        pytest.skip(netpair.missing())
    return Path(__file__).resolve().parents[2] / "scripts" / "two-hosts.py"


def test_two_hosts_script_runs_ipclab_across_its_own_pair(two_hosts, tmp_path):
    """scripts/two-hosts.py: its own pair (this module's rig), ipclab's output and exit status
    passed through, a delay on request, and nothing of its pair left once it has ended."""
    script = two_hosts
    before = sh("ip", "netns", "list").stdout
    out = tmp_path / "r.json"
    r = subprocess.run([script, "--ipclab", BINARY, "--delay", "300", "--", "messaging/udp", *RT, "--repetitions", "1", "--json", out],
                       capture_output=True, text=True, timeout=120, env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert r.returncode == 0, r.stderr
    assert "300 µs each way" in r.stderr and "root@10." in r.stderr, r.stderr
    [rec], _ = records_of(out)
    assert rec["status"] == "ok" and rec["latency_ns"]["p50"] >= 600_000, rec.get("latency_ns")  # 2 × 300 µs
    assert rec["extra"]["cpu_by_role"][next(k for k in rec["extra"]["cpu_by_role"] if k.startswith("server@"))]
    assert sh("ip", "netns", "list").stdout == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # its folder, keys and sshd's files gone
    # ipclab's own refusal comes back as is: one line, exit 2.
    r = subprocess.run([script, "--ipclab", BINARY, "--", "messaging/udp", "-p", "pattern=nosuch"],
                       capture_output=True, text=True, timeout=120, env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert r.returncode == 2 and "pattern" in r.stderr.splitlines()[-1], r.stderr
    # Bad input of its own: one line, exit 2, before anything is made.
    r = subprocess.run([script, "--ipclab", "/nonexistent/ipclab", "--", "messaging/udp"], capture_output=True,
                       text=True, timeout=60, env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert r.returncode == 2 and r.stderr.startswith("two-hosts: --ipclab") and len(r.stderr.splitlines()) == 1
    assert sh("ip", "netns", "list").stdout == before


def test_two_hosts_script_stopped_mid_run_leaves_nothing(two_hosts, tmp_path):
    """SIGTERM while ipclab runs across the script's pair: ipclab gets it and removes what it made,
    then the pair comes down; the script ends as a stopped run does."""
    script = two_hosts
    before = sh("ip", "netns", "list").stdout
    p = subprocess.Popen([script, "--ipclab", BINARY, "--", "messaging/tcp", "-p", "pattern=roundtrip",
                          "--duration", "30", "--repetitions", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=dict(os.environ, TMPDIR=str(tmp_path)))
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob("*/pair/local-tmp/ipclab-*/run.*")) and time.monotonic() < deadline:
        assert p.poll() is None, p.communicate()
        time.sleep(0.05)
    time.sleep(1)  # into the measured window
    p.terminate()
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM, err
    assert sh("ip", "netns", "list").stdout == before
    assert list(tmp_path.iterdir()) == []  # the pair's folder, with ipclab's run folder and sshd's files
