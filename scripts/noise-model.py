#!/usr/bin/env python3
"""The noise model's measurements (docs/methodology.md, "How far two runs can be trusted"): how often
`ipclab compare` and `ipclab ab` call a difference where there is none (A/A: one build against
itself), and how often they see a known slowdown injected into one side (power).

The slowdown is the `slow:pipe:NS` fault hook on side B only: the receiving side busy-waits NS ns
after every message, which adds NS to every round trip of the pipe ping-pong. NS is sized to a
share (5, 10, 20%) of the round trip measured just before each trial, in the same placement.

    scripts/noise-model.py --ipclab build/release/ipclab --out DIR [--trials 20] [--power-trials 10]

It measures: run it alone on the machine. Writes every trial's files under DIR (a new folder) and
DIR/noise-model.md, the tables docs/methodology.md shows, with the machine named.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "report"))

PIPE = ["messaging/pipe", "-p", "pattern=roundtrip", "-p", "size=64"]
PLACEMENTS = ("same", "cross")
LEVELS = (5, 10, 20)
# Kernel work per round trip: the transports whose designs differ in what they ask of the kernel.
# Spinning needs a CPU per side: shm_spsc's spin and c2c run cross-CPU only.
SYSCALL_SETS = [
    ["messaging/pipe", "messaging/unix_stream", "messaging/eventfd", "messaging/mutex_cv", "anchors/futex",
     "-p", "pattern=roundtrip", "-p", "size=64", "-p", "placement=same,cross"],
    ["messaging/shm_spsc", "-p", "pattern=roundtrip", "-p", "size=64", "-p", "placement=same,cross", "-p", "wait=futex"],
    ["messaging/shm_spsc", "-p", "pattern=roundtrip", "-p", "size=64", "-p", "placement=cross", "-p", "wait=spin"],
    ["anchors/c2c", "-p", "placement=cross"],
]
# The A/A over the suites: messaging at 64 B in both placements and patterns, the anchors' quick
# grid (c2c cross, futex same and cross, syscall same), the runtime suite's default points.
SUITE_SETS = [
    ["messaging", "-p", "size=64", "-p", "placement=same,cross", "-p", "pattern=throughput,roundtrip"],
    ["anchors", "--preset", "quick"],
    ["runtime"],
]
# compare's inputs: five repetitions of 0.2 s, as a user's CI job would take them.
COMPARE_RUN = ["--repetitions", "5", "--duration", "0.2", "--warmup", "0.05"]


def run(cmd, env=None, ok=(0,)):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(cmd, env=e, capture_output=True, text=True)
    if p.returncode not in ok:
        sys.exit(f"noise-model: {' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-2000:]}")
    return p


class Lab:
    def __init__(self, ipclab, out):
        self.ipclab, self.out, self.n = ipclab, out, 0

    def path(self, stem):
        self.n += 1
        return str(self.out / f"{self.n:04d}-{stem}.json")

    def time_per_op(self, placement):
        """The pipe round trip now, in this placement, taken as ab's slices are (0.2 s after 0.05 s
        of warm-up): the median of five repetitions."""
        f = self.path(f"calibrate-{placement}")
        run([self.ipclab, "run", *PIPE, "-p", f"placement={placement}", "--repetitions", "5",
             "--duration", "0.2", "--warmup", "0.05", "--json", f])
        recs = [r for r in json.load(open(f))["benchmarks"] if r["run_type"] == "iteration"]
        return statistics.median(r["wall_s"] * 1e9 / r["ops"] for r in recs)

    def compare(self, placements, b_env=None):
        """Two runs (A then B) and compare's verdict per benchmark."""
        from ipclab_report.compare import compare_files

        sel = [*PIPE, "-p", "placement=" + ",".join(placements)]
        a, b = self.path("compare-a"), self.path("compare-b")
        run([self.ipclab, "run", *sel, *COMPARE_RUN, "--json", a], ok=(0,))
        run([self.ipclab, "run", *sel, *COMPARE_RUN, "--json", b], env=b_env, ok=(0,))
        res = compare_files(a, b)
        return {r.placement: r.verdict for r in res.rows}

    def ab(self, placements, pairs, b_env=None, extra=()):
        """One `ipclab ab` of the pipe ping-pong; its verdict per placement and its wall time."""
        f = self.path("ab")
        cmd = [self.ipclab, "ab", self.ipclab, self.ipclab, *PIPE, "-p", "placement=" + ",".join(placements),
               "--pairs", str(pairs), "--json", f, *extra]
        for k, v in (b_env or {}).items():
            cmd += ["--b-env", f"{k}={v}"]
        t0 = time.monotonic()
        run(cmd, ok=(0, 1))
        took = time.monotonic() - t0
        doc = json.load(open(f))
        out = {}
        for b in doc["benchmarks"]:
            placement = next(p for p in PLACEMENTS if f"placement:{p}" in b["name"])
            out[placement] = (b["verdict"], b["median_ratio"])
        return out, took


def fault(ns):
    return {"IPCLAB_FAULT": f"slow:pipe:{max(1, round(ns))}"}


def verdict_of(v):
    """The verdict's word: "slower", "same", "slower?" (too few pairs: not a finding)."""
    return v.split(" (")[0]


def short(record):
    """suite/mechanism and the parameters that tell these tables' rows apart."""
    p = record.get("params", {})
    keep = [f"{k}={p[k]}" for k in ("pattern", "wait", "placement") if k in p]
    return f"{record['suite']}/{record['mechanism']}" + (f" {' '.join(keep)}" if keep else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ipclab", required=True)
    ap.add_argument("--out", required=True, help="a new folder for the trials' files and noise-model.md")
    ap.add_argument("--trials", type=int, default=20, help="A/A pairs (default 20)")
    ap.add_argument("--power-trials", type=int, default=10, help="trials per injected slowdown (default 10)")
    ap.add_argument("--pairs", type=int, default=10, help="ab's pairs per trial (default 10)")
    ap.add_argument("--parts", default="syscalls,compare-aa,ab-aa,power,suite",
                    help="comma list of syscalls, compare-aa, ab-aa, power, suite")
    a = ap.parse_args()
    ipclab = str(Path(a.ipclab).resolve())
    out = Path(a.out)
    try:
        out.mkdir(mode=0o700)
    except OSError as e:
        sys.exit(f"noise-model: --out {out}: {e.strerror}; name a new folder")
    lab = Lab(ipclab, out)
    parts = set(a.parts.split(","))
    env = json.loads(run([ipclab, "env", "--json"]).stdout)
    t_start, load_start = time.strftime("%H:%M", time.gmtime()), os.getloadavg()[0]
    md = []
    results = {}

    if "syscalls" in parts:
        results["syscalls"] = []
        # The system call count needs tracefs (the tracepoint's id): mounted, where it is not, in a
        # private mount namespace that only these runs see.
        wrap = []
        if not os.path.exists("/sys/kernel/tracing/events/raw_syscalls/sys_enter/id") and os.geteuid() == 0:
            wrap = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                    'mount -t tracefs nodev /sys/kernel/tracing && exec "$@"', "sh"]
        for sel in SYSCALL_SETS:
            f = lab.path("syscalls")
            run([*wrap, ipclab, "run", *sel, "--repetitions", "3", "--duration", "0.5", "--kernel-counters",
                 "--json", f])
            results["syscalls"] += [r for r in json.load(open(f))["benchmarks"] if r["run_type"] == "aggregate"]
    if "compare-aa" in parts:
        fp = {p: [] for p in PLACEMENTS}
        for t in range(a.trials):
            v = lab.compare(PLACEMENTS)
            for p in PLACEMENTS:
                fp[p].append(verdict_of(v[p]))
            print(f"compare A/A {t + 1}/{a.trials}: {v}", file=sys.stderr)
        results["compare_aa"] = fp
    if "ab-aa" in parts:
        fp = {p: [] for p in PLACEMENTS}
        took = []
        for t in range(a.trials):
            v, s = lab.ab(PLACEMENTS, a.pairs)
            took.append(s)
            for p in PLACEMENTS:
                fp[p].append((verdict_of(v[p][0]), v[p][1]))
            print(f"ab A/A {t + 1}/{a.trials} ({s:.0f} s): {v}", file=sys.stderr)
        results["ab_aa"] = {"verdicts": fp, "seconds": took}
    if "power" in parts:
        power = {}
        for level in LEVELS:
            for p in PLACEMENTS:
                cmp_hits, ab_hits, ab_s, ab_r = [], [], [], []
                for t in range(a.power_trials):
                    ns = lab.time_per_op(p) * level / 100
                    v = lab.compare([p], fault(ns))
                    cmp_hits.append(verdict_of(v[p]))
                    ns = lab.time_per_op(p) * level / 100
                    w, s = lab.ab([p], a.pairs, fault(ns))
                    ab_hits.append(verdict_of(w[p][0]))
                    ab_r.append(w[p][1])
                    ab_s.append(s)
                    print(f"power {level}% {p} {t + 1}/{a.power_trials}: compare {v[p]}, ab {w[p]} ({s:.0f} s)",
                          file=sys.stderr)
                power[f"{level}/{p}"] = {"compare": cmp_hits, "ab": ab_hits, "ab_ratio": ab_r, "ab_seconds": ab_s}
        results["power"] = power
    if "suite" in parts:
        # Three selections: a placement one mechanism cannot take is an error when asked for.
        rows, t0 = [], time.monotonic()
        for sel in SUITE_SETS:
            f = lab.path("ab-suite")
            run([ipclab, "ab", ipclab, ipclab, *sel, "--pairs", "8", "--json", f], ok=(0, 1))
            rows += json.load(open(f))["benchmarks"]
            print(f"suite A/A {' '.join(sel)}: {len(rows)} benchmarks so far", file=sys.stderr)
        vs = [verdict_of(b["verdict"]) for b in rows]
        results["suite"] = {"n": len(vs), "same": vs.count("same"),
                            "not_same": [(b["name"], b["verdict"], b.get("median_ratio")) for b in rows
                                         if verdict_of(b["verdict"]) != "same"],
                            "seconds": time.monotonic() - t0}

    load_end = os.getloadavg()[0]
    machine = (f"{env['cpu']['model']}, {env['cpu']['logical_cpus']} vCPUs ({env.get('virtualization') or 'bare metal'}), "
               f"{env['kernel']}, ipclab {env['git_sha']}; {time.strftime('%Y-%m-%d', time.gmtime())} "
               f"{t_start}-{time.strftime('%H:%M', time.gmtime())} UTC, load average {load_start:.2f} at the start, "
               f"{load_end:.2f} at the end")
    md.append(f"Measured on {machine}. Benchmark: `messaging/pipe` ping-pong, 64 B; same = both sides on CPU 0, "
              "cross = one side on each vCPU.\n")

    def rate(vs, what):
        return f"{sum(1 for v in vs if v in what)}/{len(vs)}"

    if "syscalls" in results:
        md.append("| benchmark | round trip | syscalls/op | context switches/op | page faults/op |")
        md.append("|---|---|---|---|---|")
        for r in results["syscalls"]:
            k = r.get("kernel", {}).get("per_op", {})

            def fig(key, fmt="{:.2f}"):
                return fmt.format(k[key]) if key in k else "—"
            tpo = r["wall_s"] * 1e9 / r["ops"] if r.get("ops") else 0
            md.append(f"| `{short(r)}` | {tpo / 1000:.2f} µs | {fig('syscalls')} | {fig('context_switches')} | "
                      f"{fig('page_faults', '{:.4f}')} |")
        md.append("")
    if "compare_aa" in results or "ab_aa" in results:
        md.append("| A/A (one build against itself) | same CPU | cross CPU |")
        md.append("|---|---|---|")
        if "compare_aa" in results:
            c = results["compare_aa"]
            md.append(f"| `compare` (5 repetitions of 0.2 s per side): false positives | "
                      f"{rate(c['same'], ('slower', 'faster'))} | {rate(c['cross'], ('slower', 'faster'))} |")
        if "ab_aa" in results:
            c = results["ab_aa"]["verdicts"]
            secs = statistics.median(results["ab_aa"]["seconds"])
            md.append(f"| `ab` ({a.pairs} pairs of 0.2 s slices, both placements in {secs:.0f} s): false positives | "
                      f"{rate([v for v, _ in c['same']], ('slower', 'faster'))} | "
                      f"{rate([v for v, _ in c['cross']], ('slower', 'faster'))} |")
            for p in PLACEMENTS:
                rs = sorted(r for _, r in c[p])
                md.append(f"| `ab` median ratio over the trials, {p}: range | {rs[0]:.3f}-{rs[-1]:.3f} | |"
                          if p == "same" else
                          f"| `ab` median ratio over the trials, {p}: range | | {rs[0]:.3f}-{rs[-1]:.3f} |")
        md.append("")
    if "power" in results:
        md.append("| injected slowdown | `compare` same | `compare` cross | `ab` same | `ab` cross | `ab` median ratio same / cross | `ab` trial time |")
        md.append("|---|---|---|---|---|---|---|")
        for level in LEVELS:
            s, c = results["power"][f"{level}/same"], results["power"][f"{level}/cross"]
            secs = max(s["ab_seconds"] + c["ab_seconds"])
            md.append(f"| {level}% | {rate(s['compare'], ('slower',))} | {rate(c['compare'], ('slower',))} | "
                      f"{rate(s['ab'], ('slower',))} | {rate(c['ab'], ('slower',))} | "
                      f"{statistics.median(s['ab_ratio']):.3f} / {statistics.median(c['ab_ratio']):.3f} | "
                      f"≤ {secs:.0f} s |")
        md.append("")
    if "suite" in results:
        s = results["suite"]
        md.append(f"A/A over messaging (64 B, same and cross placement, throughput and ping-pong), anchors and "
                  f"runtime with `ab` (8 pairs): {s['same']} of {s['n']} benchmarks \"same\" "
                  f"({100 * s['same'] / s['n']:.1f}%) in {s['seconds'] / 60:.0f} min.")
        for name, v, r in s["not_same"]:
            md.append(f"- `{name}`: {v}" + (f" (median ratio {r:.3f})" if r is not None else ""))
        md.append("")
    (out / "noise-model.json").write_text(json.dumps(results, indent=1))
    (out / "noise-model.md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
