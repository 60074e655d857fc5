"""sockperf: ipclab's open-loop UDP and TCP latency at a fixed message rate against `sockperf
under-load --mps=N` at the same rate, size and placement; and the closed-loop round trip against
`sockperf ping-pong`.

Like for like: sockperf's under-load latency is half the round trip of every 100th message (its
default --reply-every), timed from when the message was actually sent; ipclab's open-loop one-way
latency is timed, for every message, from its intended send time (corrected) and from its actual
one (raw). So the comparison is sockperf's half round trip against ipclab's **raw** one-way
latency, both from the actual send; the corrected figure is noted beside it, and the two differ by
the sender's scheduling error, noted with its p99 and the pacing floor (what pacing alone allowed
on the sender's CPU just before: extra.rate.pacing_floor). A sender that kept its schedule (error
near its floor) leaves the transport and the two methods (one way against half a round trip, which
halves the reply's path too) to explain a disagreement.

The ping-pong points show why, per protocol: the same path as a closed-loop round trip, sockperf's
ping-pong (half of every round trip) beside ipclab's `pattern=roundtrip` halved. When those agree,
the transport is timed alike by both tools and what is left of the open-loop gap is the method:
half a round trip holds the server's turnaround and the client's receive of the reply, which a
one-way figure ends before.

sockperf's server and client run in this process's session, as ipclab's two sides stay in one: a
session of their own would give the server a scheduler autogroup of its own
(CONFIG_SCHED_AUTOGROUP), and on one CPU two autogroups take turns as groups (docs/libs.md,
"Sessions and the scheduler"). Both tools' sides go on the first CPU of --cpus (placement=same),
except the cross ping-pong points' servers, which go on the second (placement=cross): each round
trip then holds two wake-ups across CPUs. Both tools' sides make the same two calls per message, a
blocking recvfrom and a sendto (sockperf, with one socket, blocks in recvfrom rather than its
default epoll: "using recvfrom() to block on socket(s)"; strace -c counts one of each per message).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time

from .common import Point, Tool, free_port, ipclab_records, program_missing

RATES = ("10k", "50k")
PROTOS = ("udp", "tcp")
SIZE = 64
BAND = 0.15


def _rate_value(text: str) -> int:
    return int(float(text.rstrip("kM")) * {"k": 1000, "M": 1000000}.get(text[-1], 1))


class Sockperf(Tool):
    name = "sockperf"
    method = ("64-byte messages over loopback, both sides on one CPU (the cross ping-pong points: the "
              "server on the second); under load: sockperf's p50 of half "
              "the round trip of every 100th message against ipclab's raw one-way p50 (both from the "
              "actual send); ping-pong: sockperf's p50 of half every round trip against ipclab's round "
              "trip p50 halved")

    def missing(self, cfg):
        return program_missing("sockperf", "apt install sockperf (scripts/setup.sh), or put a sockperf "
                                           "binary (github.com/Mellanox/sockperf) on PATH")

    def version(self):
        out = subprocess.run(["sockperf", "--version"], capture_output=True, text=True).stdout
        return out.split("\n")[0].strip()

    def tool_seconds(self, cfg):
        return max(1, round(cfg.seconds))  # sockperf's -t counts whole seconds

    def points(self, cfg):
        pts = [Point(f"{p} {r}/s under load", "µs", "p50 one way, raw", "p50 of half RTT", BAND,
                     {"proto": p, "rate": r}) for p in PROTOS for r in RATES]
        pts += [Point(f"{p} ping-pong", "µs", "p50 of RTT / 2", "p50 of half RTT", BAND, {"proto": p, "rate": None})
                for p in PROTOS]
        if len(cfg.cpus) > 1:  # the same round trips with the server on the second CPU
            pts += [Point(f"{p} ping-pong cross", "µs", "p50 of RTT / 2", "p50 of half RTT", BAND,
                          {"proto": p, "rate": None, "cross": True}) for p in PROTOS]
        return pts

    def _placement(self, point, cfg):
        """ipclab's placement options, and the CPUs of sockperf's client and server."""
        if point.spec.get("cross"):
            return ["-p", "placement=cross", "--cpus", f"{cfg.cpus[0]},{cfg.cpus[1]}"], cfg.cpus[0], cfg.cpus[1]
        return ["-p", "placement=same", "--cpus", str(cfg.cpus[0])], cfg.cpus[0], cfg.cpus[0]

    def run_ipclab(self, point, cfg):
        proto, rate = point.spec["proto"], point.spec["rate"]
        pattern = ["-p", "pattern=roundtrip"] if rate is None else ["-p", "pattern=rate", "-p", f"rate={rate}"]
        [rec] = ipclab_records(cfg, [f"messaging/{proto}", *pattern, "-p", f"size={SIZE}",
                                     *self._placement(point, cfg)[0]])
        if rate is None:
            return rec["latency_ns"]["p50"] / 2000, ""
        x = rec["extra"]["rate"]
        floor = (x.get("pacing_floor") or {}).get("lateness_ns", {}).get("p99")
        sched = f"sched err p99 {x['sched_error_ns']['p99'] / 1000:.2f} µs" + (
            f" (pacing floor {floor / 1000:.2f})" if floor is not None else "")
        if rec.get("latency_ns") is None:  # saturated: no latency, but its sender's figures
            return None, f"saturated: {x.get('saturation') or rec.get('error')}; {sched}"
        return x["raw_ns"]["p50"] / 1000, f"corrected p50 {rec['latency_ns']['p50'] / 1000:.2f} µs; {sched}"

    def run_tool(self, point, cfg, ipclab_figure):
        proto, rate = point.spec["proto"], point.spec["rate"]
        mode = ["ping-pong"] if rate is None else ["under-load", f"--mps={_rate_value(rate)}"]
        _, client, server = self._placement(point, cfg)
        return sockperf_p50(proto, "127.0.0.1", [*mode, "-m", str(SIZE)], self.tool_seconds(cfg),
                            ["taskset", "-c", str(server)], ["taskset", "-c", str(client)])


def sockperf_p50(proto, address, client, seconds, server_prefix, client_prefix) -> float:
    """One sockperf run: its server (through `server_prefix`, e.g. taskset, ip netns exec) on a
    free port of `address`, then its client (`client`: the mode and its options) for `seconds`;
    the client's p50, as its mode prints it (µs). The server runs in this process's session: see
    above."""
    port = free_port()
    tcp = ["--tcp"] if proto == "tcp" else []
    server = subprocess.Popen([*server_prefix, "sockperf", "server", "-i", address, "-p", str(port), *tcp],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              process_group=0)  # killpg's group, in this session: see above
    try:
        time.sleep(0.3)
        r = subprocess.run([*client_prefix, "sockperf", client[0], "-i", address, "-p", str(port), *tcp,
                            *client[1:], "-t", str(seconds)], capture_output=True, text=True, timeout=seconds + 30)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait()
    out = r.stdout + r.stderr
    m = re.search(r"percentile 50\.000 =\s*([0-9.]+)", out)
    if not m:
        raise RuntimeError(f"sockperf {client[0]} printed no median: {out[-300:]!r}")
    return float(m.group(1))
