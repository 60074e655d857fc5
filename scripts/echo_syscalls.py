#!/usr/bin/env python3
"""Syscalls and context switches per echo of an echo server, counted by `perf stat` on the server
process only (software tracepoints, no sampling) while `ipclab run` measures it.

perf attaches to the forked server for a window inside the measured phase; per-echo figures divide
its counts by echoes/s (the run's record) x the window. Needs perf and tracefs (root).

usage: scripts/echo_syscalls.py path/to/ipclab echo/uring [-p loop=raw] [-p connections=16]
           [--duration 4] [--window 2] [--cpus 0,1]
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

EVENTS = ["raw_syscalls:sys_enter", "syscalls:sys_enter_io_uring_enter", "syscalls:sys_enter_epoll_wait",
          "syscalls:sys_enter_recvfrom", "syscalls:sys_enter_sendto", "syscalls:sys_enter_read",
          "syscalls:sys_enter_write", "syscalls:sys_enter_epoll_ctl", "context-switches", "task-clock"]


def launch(ipclab, benchmark, params, duration, cpus, out):
    """Starts `ipclab run BENCHMARK` (0.5 s warm-up, one repetition, --json OUT) and returns it with
    the pid of its server process."""
    cmd = [ipclab, "run", benchmark, "--duration", str(duration), "--warmup", "0.5", "--repetitions", "1",
           "--cpus", cpus, "--json", out]
    for p in params:
        cmd += ["-p", p]
    run = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    for _ in range(500):
        kids = subprocess.run(["pgrep", "-P", str(run.pid)], capture_output=True, text=True).stdout.split()
        if kids:
            return run, sorted(kids, key=int)[0]
        time.sleep(0.01)
    run.kill()
    raise SystemExit("the server process never appeared")


def finish(run, out):
    """Waits for the run and returns its (first) measured record."""
    if run.wait() != 0:
        raise SystemExit("ipclab run failed")
    return next(b for b in json.load(open(out))["benchmarks"] if b.get("run_type") == "iteration")


def arguments(doc, duration, window):
    """The command line: ipclab BENCHMARK [-p ...] [--duration] [--window] [--cpus]."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("ipclab")
    ap.add_argument("benchmark", help="e.g. echo/uring")
    ap.add_argument("-p", dest="params", action="append", default=[], help="parameter, as for ipclab run")
    ap.add_argument("--duration", type=float, default=duration)
    ap.add_argument("--window", type=float, default=window, help="seconds perf watches, inside the measured phase")
    ap.add_argument("--cpus", default="0,1")
    a = ap.parse_args()
    if a.window + 1.0 > a.duration:
        ap.error("--window must be at least 1 s shorter than --duration")
    return a


def main():
    a = arguments(__doc__, 4.0, 2.0)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        run, server = launch(a.ipclab, a.benchmark, a.params, a.duration, a.cpus, out)
        time.sleep(0.5 + (a.duration - a.window) / 2)  # warm-up, then the middle of the measured phase
        perf = subprocess.run(["perf", "stat", "-x", ",", "-e", ",".join(EVENTS), "-p", server, "--",
                               "sleep", str(a.window)], capture_output=True, text=True)
        rec = finish(run, out)
    counts = {}
    for line in perf.stderr.splitlines():
        f = line.split(",")
        if len(f) > 2 and f[2] in EVENTS:
            try:
                counts[f[2]] = float(f[0])
            except ValueError:
                counts[f[2]] = float("nan")  # <not supported> / <not counted>
    rate = rec["rates"]["echoes_per_s"]
    echoes = rate * a.window
    print(f"{rec['name']}: {rate:,.0f} echoes/s, server CPU/echo "
          f"{rec['extra']['server_cpu_per_echo_ns'] / 1e3:.2f} us (record), load {open('/proc/loadavg').read().split()[:3]}")
    for ev in EVENTS:
        if ev in counts:
            v = counts[ev] * (1e6 if ev == "task-clock" else 1)  # task-clock is in ms
            unit = " ns" if ev == "task-clock" else ""
            print(f"  {ev.split(':')[-1]:<24} {v / echoes:8.3f}{unit} per echo")


if __name__ == "__main__":
    main()
