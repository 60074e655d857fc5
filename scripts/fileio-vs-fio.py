#!/usr/bin/env python3
"""The fileio engines against fio, from one interleaved run's results.json: per pattern and queue
depth, each engine's median IOPS, p50/p99 latency and CPU per IO beside the fio line it is compared
with (ipcrt fixed_direct with fio io_uring --registerfiles --fixedbufs; liburing with fio io_uring;
libaio with fio libaio), and the ratio. Prints Markdown.

    ipclab run fileio/ipcrt fileio/liburing fileio/libaio fileio/fio_io_uring fileio/fio_libaio \\
        -p fixed=0,1 -p pattern=rand,seq -p qd=1,32,128 --repetitions 5 --interleave --out DIR
    scripts/fileio-vs-fio.py DIR/results.json
"""
import json
import sys

PAIRS = [("ipcrt", {}, "fio_io_uring", {"fixed": "1"}),
         ("liburing", {}, "fio_io_uring", {"fixed": "0"}),
         ("libaio", {}, "fio_libaio", {})]


# The engine parameters a row is told apart by, when a run varies them.
VARIED = ("batch", "hugepages", "verify")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: scripts/fileio-vs-fio.py RESULTS.json")
    try:
        doc = json.load(open(sys.argv[1]))
    except (OSError, ValueError) as e:
        print(f"fileio-vs-fio: {sys.argv[1]}: {e}; give a results.json of ipclab run", file=sys.stderr)
        sys.exit(2)
    aggs = [b for b in doc["benchmarks"] if b.get("run_type") == "aggregate" and b["suite"] == "fileio"]
    if not aggs:
        print("fileio-vs-fio: no fileio aggregates (run with --repetitions 2 or more)", file=sys.stderr)
        sys.exit(2)

    def find(mech, pattern, qd, extra):
        for b in aggs:
            p = b["params"]
            if (b["mechanism"] == mech and p.get("pattern") == pattern and str(p.get("qd")) == qd
                    and all(str(p.get(k)) == v for k, v in extra.items())):
                return b
        return None

    def fig(b):
        lat = b.get("latency_ns") or {}
        cpu = b["cpu"]["per_op_ns"] / 1e3
        return (b["rates"].get("iops", 0), lat.get("p50", 0) / 1e3, lat.get("p99", 0) / 1e3, cpu)

    ctx = doc["context"]
    load = " ".join("%.2f" % x for x in ctx["load_avg"])
    print(f"Machine: {ctx['cpu'].get('model', '?')}, {ctx['cpu'].get('logical_cpus', ctx['cpu'].get('cpus', '?'))} CPUs, "
          f"{ctx['kernel']}; load {load} at the start; "
          f"{ctx.get('repetitions')} repetitions interleaved (seed {ctx.get('interleave_seed')}), medians.")
    print()
    print("| pattern | qd | engine | IOPS | p50 µs | p99 µs | CPU/IO µs | fio line | fio IOPS | fio p50 µs | "
          "fio CPU/IO µs | engine / fio |")
    print("|---|--:|---|--:|--:|--:|--:|---|--:|--:|--:|--:|")
    for pattern in ("rand", "seq"):
        for qd in ("1", "32", "128"):
            for mech, mx, ref, rx in PAIRS:
                # One row per value of each engine parameter the run varied (batch, hugepages).
                own = [b for b in aggs if b["mechanism"] == mech]
                varied = [k for k in VARIED if len({str(b["params"].get(k)) for b in own}) > 1]
                variants = sorted({tuple(str(b["params"][k]) for k in varied) for b in own})
                for values in variants or [()]:
                    a = find(mech, pattern, qd, dict(mx, **dict(zip(varied, values))))
                    r = find(ref, pattern, qd, rx)
                    if not a or not r:
                        continue
                    engine = mech + "".join(f" {k}={v}" for k, v in zip(varied, values))
                    ai, ap50, ap99, acpu = fig(a)
                    ri, rp50, _, rcpu = fig(r)
                    label = ref + "".join(f" {k}={v}" for k, v in rx.items())
                    print(f"| {pattern} | {qd} | {engine} | {ai / 1e3:.1f}k | {ap50:.0f} | {ap99:.0f} | {acpu:.1f} | "
                          f"{label} | {ri / 1e3:.1f}k | {rp50:.0f} | {rcpu:.1f} | {ai / ri:.2f} |")


if __name__ == "__main__":
    main()
