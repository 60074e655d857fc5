#!/usr/bin/env python3
"""Cross-check: anchors/memcpy (warm: the same two buffers every time) against
`perf bench mem memcpy` at the same sizes, both pinned to one CPU, runs interleaved, median of N
each. perf's GB/sec is GiB/s (it divides by 1024^3), as is ipclab's figure here.

usage: scripts/memcpy_vs_perf.py path/to/ipclab [--runs 5] [--sizes 64K,1M,16M,64M] [--cpu 0]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile

UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def size_bytes(text):
    return int(text[:-1]) * UNITS[text[-1]] if text[-1] in UNITS else int(text)


def perf_once(size, cpu, seconds):
    # Enough loops for about `seconds` at 10 GiB/s, at least 10.
    loops = max(10, int(seconds * 10 * (1 << 30) / size_bytes(size)))
    out = subprocess.run(["taskset", "-c", str(cpu), "perf", "bench", "mem", "memcpy", "-s", size + "B", "-l",
                          str(loops), "-f", "default"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"([\d.]+)\s+([KMG]?)B/sec", out)
    if not m:
        raise SystemExit(f"cannot parse perf output:\n{out}")
    return float(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)] / (1 << 30)


def ipclab_once(ipclab, size, cpu, seconds):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        subprocess.run([ipclab, "run", "anchors/memcpy", "-p", f"size={size}", "-p", "cache=warm", "-p", "op=copy",
                        "-p", "placement=same", "--cpus", str(cpu), "--repetitions", "1", "--duration",
                        str(seconds), "--warmup", "0.1", "--json", out], check=True, capture_output=True)
        rec = json.load(open(out))["benchmarks"][0]
        assert rec["status"] == "ok", rec["error"]
        return rec["rates"]["bytes_per_s"] / (1 << 30)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ipclab")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--sizes", default="64K,1M,16M,64M")
    ap.add_argument("--cpu", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=1.0)
    a = ap.parse_args()
    version = subprocess.run(["perf", "version"], capture_output=True, text=True).stdout.strip()
    print(f"{version}; load average before: {open('/proc/loadavg').read().split()[:3]}; CPU {a.cpu}")
    for size in a.sizes.split(","):
        ours, theirs = [], []
        for _ in range(a.runs):
            ours.append(ipclab_once(a.ipclab, size, a.cpu, a.seconds))
            theirs.append(perf_once(size, a.cpu, a.seconds))
        mo, mt = statistics.median(ours), statistics.median(theirs)
        print(f"{size:>4}  ipclab {mo:6.2f} GiB/s  perf {mt:6.2f} GiB/s  ratio {mo / mt:5.3f}  "
              f"(ipclab {[round(x, 2) for x in ours]}, perf {[round(x, 2) for x in theirs]})")
    print(f"load average after: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
