#!/usr/bin/env python3
"""Cross-check: messaging/pipe ping-pong (4-byte messages, two processes) against
`perf bench sched pipe`, pinned the same way, runs interleaved, median of N each.

perf bench forks its second process itself; for `cross` the child is moved to the second CPU
with `taskset -p` right after it appears (its first milliseconds run on the first CPU).

usage: scripts/pipe_vs_perf.py path/to/ipclab [--runs 5] [--loops 200000] [--cpus 0,1]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import time


def perf_once(loops, cpus, cross):
    proc = subprocess.Popen(["taskset", "-c", str(cpus[0]), "perf", "bench", "sched", "pipe", "-l", str(loops)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if cross:
        for _ in range(200):
            kids = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
            if kids:
                subprocess.run(["taskset", "-pc", str(cpus[1]), kids[0]], capture_output=True)
                break
            time.sleep(0.001)
    out, _ = proc.communicate(timeout=300)
    m = re.search(r"([\d.]+)\s+usecs/op", out)
    if not m:
        raise SystemExit(f"cannot parse perf output:\n{out}")
    return float(m.group(1)) * 1000.0


def ipclab_once(ipclab, placement, cpus, duration):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        subprocess.run([ipclab, "run", "messaging/pipe", "-p", "pattern=roundtrip", "-p", "size=4",
                        "-p", "mode=processes", "-p", f"placement={placement}", "--repetitions", "1",
                        "--duration", str(duration), "--warmup", "0.2", "--cpus", ",".join(map(str, cpus)),
                        "--json", out], check=True, capture_output=True)
        rec = json.load(open(out))["benchmarks"][0]
        assert rec["status"] == "ok", rec["error"]
        return rec["time_per_op_ns"], rec["placement"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ipclab")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--loops", type=int, default=200000)
    ap.add_argument("--duration", type=float, default=1.0)
    ap.add_argument("--cpus", default="0,1")
    a = ap.parse_args()
    cpus = [int(c) for c in a.cpus.split(",")]
    print(f"load average before: {open('/proc/loadavg').read().split()[:3]}")
    for placement in ("same", "cross"):
        ours, theirs = [], []
        for _ in range(a.runs):
            t, where = ipclab_once(a.ipclab, placement, cpus, a.duration)
            ours.append(t)
            theirs.append(perf_once(a.loops, cpus, placement == "cross"))
        mo, mt = statistics.median(ours), statistics.median(theirs)
        sides = " ".join(f'{s["role"]}@{s["observed"]}' for s in where["sides"])
        print(f"{placement:5}  ipclab {mo/1000:7.2f} us/rt  perf {mt/1000:7.2f} us/rt  ratio {mo/mt:5.3f}  "
              f"(ipclab runs {[round(x/1000, 2) for x in ours]}, perf runs {[round(x/1000, 2) for x in theirs]}; {sides})")
    print(f"load average after: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
