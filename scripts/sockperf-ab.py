#!/usr/bin/env python3
"""Side by side with sockperf's under-load mode: ipclab's open-loop UDP and TCP latency at a fixed
message rate against `sockperf under-load --mps=N` at the same rate, size and placement, their
runs interleaved round by round so that both see the same machine.

sockperf reports half the round trip of every 100th message (its default --reply-every in
under-load mode) as latency; ipclab the one-way latency of every message from its intended send
time (the sender keeps its schedule, so at these rates intended and actual coincide within the
scheduling error). Both are the time for one message to cross the loopback at that load.

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


def sockperf_p50(proto, rate, size, seconds, cpus):
    port = free_port()
    pin = ["taskset", "-c", str(cpus[0])]
    pin_client = ["taskset", "-c", str(cpus[-1])]
    tcp = ["--tcp"] if proto == "tcp" else []
    server = subprocess.Popen([*pin, "sockperf", "server", "-i", "127.0.0.1", "-p", str(port), *tcp],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        time.sleep(0.3)
        out = subprocess.run([*pin_client, "sockperf", "under-load", "-i", "127.0.0.1", "-p", str(port), *tcp,
                              f"--mps={rate}", "-m", str(size), "-t", str(seconds)],
                             capture_output=True, text=True, timeout=seconds + 30).stdout
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait()
    m = re.search(r"percentile 50\.000 =\s*([0-9.]+)", out)
    n = re.search(r"Total (\d+) observations", out)
    if not m:
        sys.exit(f"sockperf printed no median:\n{out}")
    return float(m.group(1)), int(n.group(1)) if n else 0


def ipclab_p50(binary, proto, rate, size, seconds, cpus):
    placement = "same" if len(set(cpus)) == 1 else "cross"
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        subprocess.run([binary, "run", f"messaging/{proto}", "-p", "pattern=rate", "-p", f"rate={rate}",
                        "-p", f"size={size}", "-p", f"placement={placement}", "--cpus",
                        ",".join(map(str, cpus)), "--duration", str(seconds), "--warmup", "0.4",
                        "--repetitions", "1", "--json", out], check=True, capture_output=True, timeout=seconds + 60)
        rec = [r for r in json.load(open(out))["benchmarks"] if r["run_type"] == "iteration"][0]
    if rec["latency_ns"] is None:
        sys.exit(f"ipclab {proto} at {rate}/s: {rec['extra']['rate']['saturation'] or rec['error']}")
    return rec["latency_ns"]["p50"] / 1000, rec["latency_ns"]["count"], rec["extra"]["rate"]["sched_error_ns"]["p99"]


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
    print("| proto | rate | sockperf p50 (us) | ipclab p50 (us) | ipclab / sockperf | ipclab sched err p99 (us) |")
    print("|---|---|---|---|---|---|")
    for proto in a.proto.split(","):
        for rate_text in a.rates.split(","):
            rate = rate_value(rate_text)
            sp, ip, err = [], [], []
            for _ in range(a.rounds):  # interleaved: one of each per round
                sp.append(sockperf_p50(proto, rate, a.size, a.seconds, cpus)[0])
                p50, _, e = ipclab_p50(a.ipclab, proto, rate_text, a.size, a.seconds, cpus)
                ip.append(p50)
                err.append(e / 1000)
            s, i = statistics.median(sp), statistics.median(ip)
            print(f"| {proto} | {rate_text} | {s:.2f} ({', '.join(f'{v:.1f}' for v in sp)}) "
                  f"| {i:.2f} ({', '.join(f'{v:.1f}' for v in ip)}) | {i / s:.2f} | {statistics.median(err):.2f} |")
    print(f"# load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
