"""remote: `ipclab run --remote` against `sockperf ping-pong` across two hosts made on this machine
(ipclab_report/netpair.py: two network namespaces joined by a veth pair, sshd in the far one), over
the pair as it is and with a delay each way (`tc netem`, or the delay wire where the kernel has no
netem).

Like for like: 64-byte round trips, TCP and UDP, the client in the near namespace on the first CPU
of --cpus, the server in the far one, unpinned on both sides (ipclab's remote side is a host of its
own: it places its server as a run there would). sockperf's figure is its p50 of every full round
trip (`--full-rtt`), ipclab's its round trip p50 (`pattern=roundtrip`, `placement=same`). ipclab
reaches the far side through ssh, as it would another host, and its data path goes to the pair's
far address (the delay wire's, for a delayed point without netem); ssh's own connection and start
are outside the measured window. Both tools' sides make the same two calls per round trip, a
blocking recvfrom and a sendto (sockperf, with one socket, blocks in recvfrom rather than its
default epoll: it says "using recvfrom() to block on socket(s)"; strace -c counts one of each per
message on both tools' sides).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from .. import netpair
from .common import Point, Tool, ipclab_records, program_missing
from .sockperf import sockperf_p50

SIZE = 64
BAND = 0.15
# Each way: the round trip gains twice this. Large beside a veth pair's round trip, small enough
# that a point takes about as long as an undelayed one.
DELAY_US = 200


class Remote(Tool):
    name = "remote"
    method = ("64-byte round trips across a veth pair between two network namespaces, sshd in the far one; "
              "sockperf ping-pong's p50 of every full round trip against `ipclab run --remote`'s round trip p50, "
              f"undelayed and with {DELAY_US} µs each way")

    def __init__(self):
        self.pair = None

    def missing(self, cfg):
        return netpair.missing() or program_missing(
            "sockperf", "apt install sockperf (scripts/setup.sh), or put a sockperf binary on PATH")

    def version(self):
        sockperf = subprocess.run(["sockperf", "--version"], capture_output=True, text=True).stdout
        ssh = subprocess.run(["ssh", "-V"], capture_output=True, text=True).stderr
        return f"{sockperf.splitlines()[0].strip() if sockperf else 'sockperf'}; {ssh.split(',')[0].strip()}"

    def tool_seconds(self, cfg):
        return max(1, round(cfg.seconds))  # sockperf's -t counts whole seconds

    def points(self, cfg):
        return [Point(f"{proto} {path}", "µs", "p50 round trip", "p50 full RTT", BAND,
                      {"proto": proto, "delay_us": delay})
                for path, delay in (("veth", 0), (f"+{DELAY_US} µs each way", DELAY_US)) for proto in ("tcp", "udp")]

    def prepare(self, cfg):
        self.pair = netpair.Pair(Path(cfg.work) / "pair")
        self.pair.open()
        self.pair.check_ssh()
        # The wire, where it stands in for netem, on a CPU of its own: the clients run on the first.
        self.pair.ready_delay(DELAY_US, cpu=cfg.cpus[-1])

    def finish(self, cfg):
        if self.pair:
            self.pair.close()
            self.pair = None

    def _path(self, point) -> str:
        """Sets the point's delay; the address its data goes to. The wire, where there is one,
        polls without sleeping for its points, so that nothing waits for it to wake."""
        delay = point.spec["delay_us"]
        if not delay:
            return self.pair.far_ip
        if self.pair.netem:
            raise RuntimeError(f"no delay here: {self.pair.netem}")
        self.pair.wire_spin = True
        self.pair.delay(delay)
        return self.pair.data_ip

    def _clear(self, point):
        if point.spec["delay_us"]:
            self.pair.wire_spin = False
            self.pair.delay(0)

    def run_ipclab(self, point, cfg):
        try:
            address = self._path(point)
            [rec] = ipclab_records(cfg, [f"messaging/{point.spec['proto']}", "-p", "pattern=roundtrip",
                                         "-p", f"size={SIZE}", "-p", "placement=same", "--cpus", str(cfg.cpus[0]),
                                         *self.pair.remote_args(cfg.ipclab), "--remote-address", address],
                                   env=self.pair.near_env(), prefix=tuple(self.pair.in_near()))
        finally:
            self._clear(point)
        qdisc = rec["extra"]["network_path"]["local"].get("qdisc") or ""
        if not point.spec["delay_us"]:
            note = "over the veth pair"
        elif self.pair.wire:
            note = f"over the delay wire, {self.pair.wire_note.removeprefix('ready ').strip('()')}"
        else:
            note = f"over the veth pair, netem on both ends ({qdisc.split(' root')[0]})"
        return rec["latency_ns"]["p50"] / 1000, note

    def run_tool(self, point, cfg, ipclab_figure):
        try:
            address = self._path(point)
            return sockperf_p50(point.spec["proto"], address, ["ping-pong", "-m", str(SIZE), "--full-rtt"],
                                self.tool_seconds(cfg), self.pair.in_far(),
                                [*self.pair.in_near(), "taskset", "-c", str(cfg.cpus[0])])
        finally:
            self._clear(point)
