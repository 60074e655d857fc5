#!/usr/bin/env python3
"""Side by side with sockperf's under-load mode: ipclab's open-loop UDP and TCP latency at a fixed
message rate against `sockperf under-load --mps=N` at the same rate, size and placement, their
runs interleaved round by round so that both see the same machine.

Like for like: sockperf's under-load latency is half the round trip of every 100th message (its
default --reply-every), timed from when the message was actually sent; ipclab's open-loop one-way
latency is timed, for every message, from its intended send time (corrected) and from its actual
one (raw). So the comparison is sockperf's half round trip against ipclab's **raw** one-way
latency, both from the actual send; the corrected figure is printed beside it, and the two differ
by the sender's scheduling error. Per point the table gives both medians, their ratio, and
ipclab's scheduling error p99 against its pacing floor (what pacing alone allowed on the sender's
CPU just before: extra.rate.pacing_floor), so that a disagreement beyond 15% can be read point by
point: a sender that kept its schedule (error near its floor) leaves the transport and the two
methods (one way against half a round trip, which halves the reply's path too) to explain it.

Where the two disagree, the second table shows why, per protocol: the same path as a closed-loop
round trip, sockperf's ping-pong (half of every round trip) beside ipclab's `pattern=roundtrip`
halved, interleaved the same way. When those agree, the transport is timed alike by both tools and
what is left of the first table's gap is the method: half a round trip holds the server's turnaround
(its receive and reply) and the client's receive of the reply, which a one-way figure ends before;
the table gives that share, ipclab's half round trip less its own one-way p50 at the lowest rate.

    scripts/sockperf-ab.py --ipclab build/release/ipclab --rates 10k,50k --proto udp,tcp --cpus 0

Needs sockperf (Debian: apt install sockperf). Starts and stops its own sockperf servers, on a
port the kernel picks; leaves nothing behind.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    # The kernel picks a free port; sockperf binds it right after (loopback, nothing else races).
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rate_value(text):
    mult = {"k": 1000, "M": 1000000}.get(text[-1], 1)
    return int(float(text.rstrip("kM")) * mult)


def sockperf_run(proto, seconds, cpus, client):
    """A sockperf server on the first of `cpus` and one client run (`client`: its mode and options)
    on the last; the client's output. Both stay in this script's session, as ipclab's two sides
    stay in one: a session of its own would give the server a scheduler autogroup of its own
    (CONFIG_SCHED_AUTOGROUP), and on one CPU two autogroups take turns as groups (docs/libs.md,
    "Sessions and the scheduler")."""
    port = free_port()
    tcp = ["--tcp"] if proto == "tcp" else []
    server = subprocess.Popen(["taskset", "-c", str(cpus[0]), "sockperf", "server", "-i", "127.0.0.1", "-p",
                               str(port), *tcp], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              process_group=0)  # killpg's group, in this session: see above
    try:
        time.sleep(0.3)
        return subprocess.run(["taskset", "-c", str(cpus[-1]), "sockperf", client[0], "-i", "127.0.0.1", "-p",
                               str(port), *tcp, *client[1:], "-t", str(seconds)],
                              capture_output=True, text=True, timeout=seconds + 30).stdout
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait()


def sockperf_median(out, mode):
    m = re.search(r"percentile 50\.000 =\s*([0-9.]+)", out)
    if not m:
        sys.exit(f"sockperf {mode} printed no median:\n{out}")
    return float(m.group(1))


def sockperf_p50(proto, rate, size, seconds, cpus):
    out = sockperf_run(proto, seconds, cpus, ["under-load", f"--mps={rate}", "-m", str(size)])
    n = re.search(r"Total (\d+) observations", out)
    return sockperf_median(out, "under-load"), int(n.group(1)) if n else 0


def sockperf_pingpong_p50(proto, size, seconds, cpus):
    """sockperf ping-pong's p50 (us): half of every round trip, closed loop."""
    return sockperf_median(sockperf_run(proto, seconds, cpus, ["ping-pong", "-m", str(size)]), "ping-pong")


def ipclab_record(binary, proto, size, seconds, cpus, pattern):
    """One repetition of messaging/PROTO at `size` on `cpus` (same: one CPU, cross: two), with
    `pattern` (its -p arguments): the record."""
    placement = "same" if len(set(cpus)) == 1 else "cross"
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        subprocess.run([binary, "run", f"messaging/{proto}", *pattern, "-p", f"size={size}",
                        "-p", f"placement={placement}", "--cpus", ",".join(map(str, cpus)), "--duration",
                        str(seconds), "--warmup", "0.4", "--repetitions", "1", "--json", out], check=True,
                       capture_output=True, timeout=seconds + 60)
        return [r for r in json.load(open(out))["benchmarks"] if r["run_type"] == "iteration"][0]


def ipclab_half_rtt_p50(binary, proto, size, seconds, cpus):
    """ipclab's closed-loop round trip p50 (us), halved: the figure sockperf's ping-pong reports."""
    rec = ipclab_record(binary, proto, size, seconds, cpus, ["-p", "pattern=roundtrip"])
    return rec["latency_ns"]["p50"] / 2000


def ipclab_point(binary, proto, rate, size, seconds, cpus):
    """One ipclab open-loop point: raw and corrected one-way p50 (us), the count, the scheduling
    error p99 and the pacing floor's p99 (us), and whether the error is flagged beyond the floor."""
    rec = ipclab_record(binary, proto, size, seconds, cpus, ["-p", "pattern=rate", "-p", f"rate={rate}"])
    rate_x = rec["extra"]["rate"]
    floor = rate_x.get("pacing_floor", {}).get("lateness_ns", {})
    if rec["latency_ns"] is None:  # saturated (or failed): no latency, but its sender's figures
        return {"why": rate_x.get("saturation") or rec["error"], "err": rate_x["sched_error_ns"]["p99"] / 1000,
                "floor": floor.get("p99", float("nan")) / 1000, "over": rate_x.get("sched_error_over_floor")}
    return {"why": None, "raw": rate_x["raw_ns"]["p50"] / 1000, "corrected": rec["latency_ns"]["p50"] / 1000,
            "count": rec["latency_ns"]["count"], "err": rate_x["sched_error_ns"]["p99"] / 1000,
            "floor": floor.get("p99", float("nan")) / 1000, "over": rate_x.get("sched_error_over_floor")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ipclab", default="build/release/ipclab")
    ap.add_argument("--rates", default="10k,50k")
    ap.add_argument("--proto", default="udp,tcp")
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cpus", default="0", help="one CPU (same) or two (server/consumer on the second)")
    a = ap.parse_args()
    if not shutil.which("sockperf"):
        sys.exit("sockperf is not installed: apt install sockperf")
    cpus = [int(c) for c in a.cpus.split(",")]
    version = subprocess.run(["sockperf", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    print(f"# {version}; ipclab {a.ipclab}; size {a.size} B; cpus {a.cpus}; load {os.getloadavg()[0]:.2f}")
    print("| proto | rate | sockperf p50, half RTT (us) | ipclab raw p50, one way (us) | ipclab / sockperf "
          "| ipclab corrected p50 (us) | sched err p99 (us) | pacing floor p99 (us) | err beyond floor |")
    print("|---|---|---|---|---|---|---|---|---|")
    one_way = {}  # proto -> ipclab's raw one-way p50 at the lowest rate, for the second table
    for proto in a.proto.split(","):
        for rate_text in a.rates.split(","):
            rate = rate_value(rate_text)
            sp, pts = [], []
            for _ in range(a.rounds):  # interleaved: one of each per round
                sp.append(sockperf_p50(proto, rate, a.size, a.seconds, cpus)[0])
                pts.append(ipclab_point(a.ipclab, proto, rate_text, a.size, a.seconds, cpus))
            med = lambda key, among=pts: statistics.median(p[key] for p in among)
            over = sum(1 for p in pts if p["over"])
            tail = f"| {med('err'):.2f} | {med('floor'):.2f} | {over} of {len(pts)} |"
            ok = [p for p in pts if p["why"] is None]
            s = statistics.median(sp)
            if not ok:  # every ipclab round saturated: no latency to set beside sockperf's
                print(f"| {proto} | {rate_text} | {s:.2f} | saturated: {pts[0]['why']} | — | — {tail}")
                continue
            i = med("raw", ok)
            one_way.setdefault(proto, i)
            ratio = i / s
            flag = " (beyond 15%)" if abs(ratio - 1) > 0.15 else ""
            raws = ", ".join(f"{p['raw']:.1f}" if p["why"] is None else "saturated" for p in pts)
            print(f"| {proto} | {rate_text} | {s:.2f} ({', '.join(f'{v:.1f}' for v in sp)}) "
                  f"| {i:.2f} ({raws}) | {ratio:.2f}{flag} "
                  f"| {med('corrected', ok):.2f} {tail}")
    print()
    print("| proto | sockperf ping-pong p50, half RTT (us) | ipclab round trip p50 / 2 (us) | ipclab / sockperf "
          "| ipclab one way p50, lowest rate (us) | half RTT less one way (us) |")
    print("|---|---|---|---|---|---|")
    for proto in a.proto.split(","):
        sp, ip = [], []
        for _ in range(a.rounds):  # interleaved as above
            sp.append(sockperf_pingpong_p50(proto, a.size, a.seconds, cpus))
            ip.append(ipclab_half_rtt_p50(a.ipclab, proto, a.size, a.seconds, cpus))
        s, i = statistics.median(sp), statistics.median(ip)
        flag = " (beyond 15%)" if abs(i / s - 1) > 0.15 else ""
        ow = one_way.get(proto)
        ow_text = f"{ow:.2f} | {i - ow:.2f}" if ow is not None else "— | —"
        print(f"| {proto} | {s:.2f} ({', '.join(f'{v:.1f}' for v in sp)}) | {i:.2f} "
              f"({', '.join(f'{v:.1f}' for v in ip)}) | {i / s:.2f}{flag} | {ow_text} |")
    print(f"# load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
