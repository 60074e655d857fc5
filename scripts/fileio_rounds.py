#!/usr/bin/env python3
"""fileio on a shared, noisy disk: every contender once per round, rounds repeated, medians compared.

`ipclab run --repetitions N` repeats one benchmark N times in a row, so a slow minute of the shared
disk lands on one engine; here each round runs every contender once (the order rotated by one each
round, so no engine always follows the same one), and the comparison is of the medians. Every run
records /proc/loadavg and the device's read requests (extra.device: mean request size, merges).

usage: scripts/fileio_rounds.py path/to/ipclab [--rounds 3] [--duration 3] [--warmup 0.5]
           [--qd 32|1,4,32] [--pattern rand,seq] [--set acceptance|seq|buffered] [--json out.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

# label -> (mechanism, params); ratios are to the medians of "fio io_uring" and "fio libaio".
SETS = {
    "acceptance": [
        ("runtime fixed_direct", "fileio/runtime", {"variant": "fixed_direct"}),
        ("fio io_uring", "fileio/fio_io_uring", {}),
        ("fio io_uring fixed", "fileio/fio_io_uring", {"fixed": "1"}),
        ("liburing", "fileio/liburing", {}),
        ("libaio (ours)", "fileio/libaio", {}),
        ("fio libaio", "fileio/fio_libaio", {}),
        ("runtime direct", "fileio/runtime", {"variant": "direct"}),
        ("runtime buffered", "fileio/runtime", {"variant": "buffered"}),
    ],
    "seq": [
        ("runtime fixed_direct", "fileio/runtime", {"variant": "fixed_direct"}),
        ("runtime fixed_direct batch=1", "fileio/runtime", {"variant": "fixed_direct", "batch": "1"}),
        ("fio io_uring", "fileio/fio_io_uring", {}),
        ("fio io_uring fixed", "fileio/fio_io_uring", {"fixed": "1"}),
        ("liburing", "fileio/liburing", {}),
        ("runtime buffered", "fileio/runtime", {"variant": "buffered"}),
    ],
    "buffered": [
        ("psync buffered", "fileio/psync", {}),
        ("runtime buffered", "fileio/runtime", {"variant": "buffered"}),
        ("runtime fixed_direct", "fileio/runtime", {"variant": "fixed_direct"}),
        ("fio io_uring", "fileio/fio_io_uring", {}),
        ("fio io_uring buffered", "fileio/fio_io_uring", {"direct": "0"}),
    ],
}


def loadavg():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def run_once(ipclab, mech, params, pattern, qd, duration, warmup):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        argv = [ipclab, "run", mech, "-p", f"pattern={pattern}", "-p", f"qd={qd}", "--repetitions", "1",
                "--duration", str(duration), "--warmup", str(warmup), "--json", out]
        for k, v in params.items():
            argv += ["-p", f"{k}={v}"]
        load = loadavg()
        p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if not os.path.exists(out):
            raise SystemExit(f"{' '.join(argv)} wrote no result: {p.stderr.strip()}")
        with open(out) as f:
            rec = json.load(f)["benchmarks"][0]
    if rec["status"] != "ok":
        raise SystemExit(f"{rec['name']}: {rec['status']}: {rec.get('error')}")
    dev = rec.get("extra", {}).get("device", {})
    lat = rec.get("latency_ns") or {}
    return {
        "name": rec["name"], "load": float(load), "iops": rec["rates"].get("iops", 0.0),
        "MBps": rec["rates"].get("MB_per_s", 0.0), "p50_us": lat.get("p50", 0) / 1e3,
        "p99_us": lat.get("p99", 0) / 1e3, "cpu_us": rec["cpu"].get("per_op_ns", 0) / 1e3,
        "dev_kib": dev.get("read_kib_per_request", 0.0), "dev_reads": dev.get("reads", 0),
        "dev_merged": dev.get("merged", 0), "command": rec.get("extra", {}).get("command"),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("ipclab")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=3.0)
    ap.add_argument("--warmup", type=float, default=0.5)
    ap.add_argument("--qd", default="32", help="queue depth(s), e.g. 32 or 1,4,32")
    ap.add_argument("--pattern", default="rand,seq")
    ap.add_argument("--set", default="acceptance", choices=sorted(SETS))
    ap.add_argument("--json", help="write every run here")
    a = ap.parse_args()
    if a.rounds < 1:
        raise SystemExit("--rounds must be >= 1, e.g. --rounds 3")
    contenders = SETS[a.set]
    metric = {"rand": "iops", "seq": "MBps"}
    runs = []
    try:
        qds = [int(q) for q in a.qd.split(",")]
    except ValueError:
        raise SystemExit(f"--qd {a.qd}: use numbers, e.g. 32 or 1,4,32")
    for pattern in a.pattern.split(","):
        if pattern not in metric:
            raise SystemExit(f"--pattern {pattern}: use rand, seq or rand,seq")
        for qd in qds:
            summarize(a, contenders, metric, pattern, qd, runs)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(runs, f, indent=1)
    return 0


def summarize(a, contenders, metric, pattern, qd, runs):
    """Runs a.rounds interleaved rounds of every contender at (pattern, qd), then prints medians."""
    key = metric[pattern]
    for r in range(a.rounds):
        order = contenders[r % len(contenders):] + contenders[:r % len(contenders)]
        for label, mech, params in order:
            res = run_once(a.ipclab, mech, params, pattern, qd, a.duration, a.warmup)
            res.update(label=label, pattern=pattern, qd=qd, round=r)
            runs.append(res)
            print(f"{pattern} qd {qd} round {r} {label:30s} IOPS {res['iops']:9.0f} MB/s {res['MBps']:7.1f} "
                  f"p50 {res['p50_us']:7.0f} us p99 {res['p99_us']:7.0f} us CPU/IO {res['cpu_us']:5.1f} us "
                  f"dev {res['dev_kib']:6.0f} KiB/req merged {res['dev_merged']:6d}  load {res['load']}",
                  flush=True)
    here = [x for x in runs if x["pattern"] == pattern and x["qd"] == qd]
    print(f"\n{pattern}, qd {qd}: medians of {a.rounds} interleaved rounds ({key}; per round in [])")
    med = {label: statistics.median(x[key] for x in here if x["label"] == label) for label, _, _ in contenders}
    refs = [ref for ref in ("fio io_uring", "fio libaio") if med.get(ref)]
    for label, _, _ in contenders:
        mine = [x for x in here if x["label"] == label]
        per_round = " ".join(f"{x[key]:.0f}" for x in mine)
        kib = statistics.median(x["dev_kib"] for x in mine)
        cpu = statistics.median(x["cpu_us"] for x in mine)
        ratios = "  ".join(f"{med[label] / med[ref]:4.2f}x {ref}" for ref in refs)
        print(f"  {label:30s} {med[label]:9.0f}  [{per_round}]  CPU/IO {cpu:5.1f} us  "
              f"dev {kib:5.0f} KiB/req  {ratios}")
    loads = [x["load"] for x in here]
    print(f"  load average {min(loads)}–{max(loads)}\n", flush=True)


if __name__ == "__main__":
    sys.exit(main())
