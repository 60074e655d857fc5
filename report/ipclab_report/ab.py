"""`ipclab ab BASE NEW`: paired A/B runs of one selection of benchmarks.

Two runs of one build on a shared VM differ 2-4x on cross-CPU benchmarks, because they see
different machine states (where the host put the vCPUs, who else runs). `compare` therefore needs
a wide band. Pairing in time removes most of that noise: each benchmark runs as a short slice on
side A, then at once as a slice on side B (one `ipclab run` process each, one repetition), so that
the two slices of a pair see nearly the same machine. Pairs alternate their order (A B, B A, A B,
... — ABBA), so that a drift of the machine, or a first-slice effect, falls on both sides alike.

Per benchmark, with r_i = metric(B_i) / metric(A_i) over the pairs:
  * the median ratio, and its 95% confidence interval by the bootstrap (percentile method,
    BOOTSTRAP_RESAMPLES resamples of the pairs, seeded: the same slices give the same interval);
  * the Wilcoxon signed-rank test of ln r_i against 0 (two-sided; exact for the pair counts used
    here), which does not assume the ratios are normal, only symmetric around their median;
  * the verdict: "slower" / "faster" when p < alpha AND the median ratio lies beyond the
    threshold; "slower?" / "faster?" (too few pairs) when beyond the threshold but n pairs cannot
    reach p < alpha at all (the smallest two-sided p is 2 / 2^n: 5 pairs give 0.0625); otherwise
    "same". Exit status 1 on any "slower" (or a failed slice), 0 otherwise, 2 on a usage error.

The two sides are two ipclab binaries (two builds; the same path twice is an A/A run) and may
differ in their filters (--a-filter/--b-filter), parameters (--a-param/--b-param) and environment
(--a-env/--b-env). Benchmarks pair by their position in the two sides' plans (`ipclab run --plan`),
which must have the same length. Model and measurements: docs/methodology.md, "Paired A/B runs".
"""

from __future__ import annotations

import argparse
import fcntl
import json
import math
import os
import re
import secrets
import signal
import subprocess
import shutil
import sys
import time
import zlib
from dataclasses import dataclass, field

from .load import compared, load
from .stats import BOOTSTRAP_RESAMPLES, bootstrap_median_ci, median
from .util import HelpFormatter, UsageError, parse_duration, brief, check_target, fmt_time_ns, is_number, text_table, write_atomic

DEFAULT_PAIRS = 10
DEFAULT_DURATION = "0.2"
DEFAULT_WARMUP = "0.05"
KERNEL_KEYS = ("syscalls", "context_switches", "cpu_migrations", "page_faults")

EPILOG = """\
Examples:
  ipclab ab old/ipclab new/ipclab messaging/pipe -p size=64 -p pattern=roundtrip
  ipclab ab B B messaging/shm_spsc -p placement=cross --a-param wait=spin --b-param wait=futex
  ipclab ab B B messaging/pipe -p pattern=roundtrip --b-env IPCLAB_FAULT=slow:pipe:800
  ipclab ab B B --a-filter echo/epoll --b-filter echo/uring -p connections=16 --metric cpu:server
Verdicts (r = median over pairs of metric(B) / metric(A)):
  same      |ln r| within the threshold, or Wilcoxon p >= alpha
  slower    beyond the threshold and p < alpha (exit status 1)
  faster    beyond the threshold and p < alpha, the other way
  slower? / faster?   beyond the threshold, but too few pairs to reach p < alpha (2 / 2^n)
Metrics: time (time per op; an open-loop point's corrected p99, a capacity search's capacity),
cpu (CPU per op), cpu:ROLE (one role's CPU per op, e.g. cpu:server), p50, p99 (latency).
Exit: 0 no regression, 1 a regression or a failed slice, 2 usage error."""


class Parser(argparse.ArgumentParser):
    def error(self, message):
        # parse_intermixed_args names the optional FILTER... among the missing arguments too.
        raise UsageError(f"{message.replace(', FILTER', '')}; see `ipclab ab --help`")


def _int_range(option, lo, hi, example):
    def parse(text):
        if not re.fullmatch(r"[0-9]+", text or "") or not lo <= int(text) <= hi:
            raise argparse.ArgumentTypeError(f"{option} {text!r}: give a whole number from {lo} to {hi}, "
                                             f"e.g. {option} {example}")
        return int(text)
    return parse


def _float_range(option, lo, hi, example):
    def parse(text):
        try:
            v = float(text)
        except ValueError:
            v = math.nan
        if not lo < v < hi:
            raise argparse.ArgumentTypeError(f"{option} {text!r}: give a number between {lo:g} and {hi:g}, "
                                             f"e.g. {option} {example}")
        return v
    return parse


def _assignment(option, example):
    def parse(text):
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*=.*", text or ""):
            raise argparse.ArgumentTypeError(f"{option} {text!r} is not NAME=VALUE; e.g. {option} {example}")
        return text
    return parse


def _metric(text):
    if text in ("time", "cpu", "p50", "p99") or re.fullmatch(r"cpu:[a-z_]+", text or ""):
        return text
    raise argparse.ArgumentTypeError(f"--metric {text!r}: use time, cpu, cpu:ROLE (e.g. cpu:server), p50 or p99")


def parser():
    p = Parser(prog="ipclab ab", formatter_class=HelpFormatter,
               description="Run one selection of benchmarks on two sides (two builds, or two configurations "
                           "of one) in alternating short slices (ABBA), and judge each benchmark by the "
                           "median of its paired ratios, a bootstrap 95% CI and a Wilcoxon signed-rank test.",
               epilog=EPILOG)
    p.add_argument("base", metavar="BASE_BINARY", help="side A: an ipclab binary")
    p.add_argument("new", metavar="NEW_BINARY", help="side B: an ipclab binary (the same path: an A/A run)")
    p.add_argument("filters", nargs="*", metavar="FILTER", help="as for `ipclab run` (both sides)")
    p.add_argument("-p", "--param", action="append", default=[], type=_assignment("-p", "size=64"),
                   metavar="NAME=V1,V2", help="parameter values for both sides, as for `ipclab run`")
    p.add_argument("--preset", choices=("quick", "full"), help="the grid of `ipclab run --preset`")
    p.add_argument("--duration", default=DEFAULT_DURATION, metavar="TIME",
                   help=f"measured time per slice: seconds, or with a unit as for `ipclab run` (250ms) "
                        f"(default {DEFAULT_DURATION})")
    p.add_argument("--warmup", default=DEFAULT_WARMUP, metavar="TIME",
                   help=f"warm-up per slice, as --duration (default {DEFAULT_WARMUP})")
    p.add_argument("--cpus", metavar="LIST", help="as for `ipclab run`")
    p.add_argument("--kernel-counters", action="store_true",
                   help="count system calls, context switches, migrations and page faults per op on both "
                        "sides (`ipclab run --kernel-counters`; slows blocking benchmarks: both sides alike)")
    p.add_argument("--antagonist", action="append", default=[], metavar="KIND[@WHERE][:LEVEL]",
                   help="interference through every slice's measured window on both sides, as for `ipclab run "
                        "--antagonist` (repeatable; docs/noise.md)")
    p.add_argument("--pairs", type=_int_range("--pairs", 2, 1000, 10), default=DEFAULT_PAIRS, metavar="N",
                   help=f"slices per side and benchmark (default {DEFAULT_PAIRS})")
    p.add_argument("--threshold", type=_float_range("--threshold", 0, 1000, 5), default=5.0, metavar="PCT",
                   help="change in percent below which a benchmark is the same (default 5)")
    p.add_argument("--alpha", type=_float_range("--alpha", 0, 1, 0.05), default=0.05,
                   help="significance level (default 0.05)")
    p.add_argument("--metric", type=_metric, default="time", help="what to compare (default time; see below)")
    p.add_argument("--seed", type=_int_range("--seed", 0, 2**63 - 1, 42), default=0, metavar="N",
                   help="seed of the bootstrap (default 0)")
    for side in ("a", "b"):
        p.add_argument(f"--{side}-filter", action="append", default=[], metavar="FILTER",
                       help=f"side {side.upper()} runs these filters instead of the common ones")
        p.add_argument(f"--{side}-param", action="append", default=[], metavar="NAME=V",
                       type=_assignment(f"--{side}-param", "wait=spin"),
                       help=f"a parameter value for side {side.upper()} only (replaces a common -p of that name)")
        p.add_argument(f"--{side}-env", action="append", default=[], metavar="NAME=VALUE",
                       type=_assignment(f"--{side}-env", "IPCLAB_FAULT=slow:pipe:800"),
                       help=f"an environment variable for side {side.upper()}'s runs")
    p.add_argument("--json", metavar="FILE", help="write the comparison as JSON here (atomically)")
    p.add_argument("--store", metavar="PATH|URL",
                   help="add each side's slices to this results store (docs/store.md) as a run of kind ab, "
                        "under its own build: kept, never a point of a run's series")
    return p


# --- the two sides ------------------------------------------------------------------------------

@dataclass
class Side:
    label: str             # "A" or "B"
    binary: str
    filters: list
    params: list           # ["name=value", ...]
    env_set: dict
    common: list           # --preset/--cpus arguments
    plan: list = field(default_factory=list)

    @property
    def env(self) -> dict:
        # Its slices are no runs to keep: short windows of two builds, each a file in ab's own folder,
        # stored nowhere (a binary without a results store ignores the variable).
        return {**os.environ, "IPCLAB_NO_STORE": "1", **self.env_set}


def merged_params(common, own):
    """Common -p values with this side's own replacing those of the same name, in order."""
    out = {}
    for text in common + own:
        name, value = text.split("=", 1)
        out[name] = value
    return [f"{k}={v}" for k, v in out.items()]


def check_binary(path: str) -> str:
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise UsageError(f"{brief(path)} is not an executable file; give the path of an ipclab binary "
                         "(e.g. build/release/ipclab)")
    return os.path.abspath(path)


def check_ipclab(label: str, binary: str) -> None:
    """An ipclab binary says so: its `--help` opens with "ipclab" (every build has it). Anything
    else (/bin/true, a script) would plan nothing, or run nothing, and pair nothing."""
    try:
        proc = subprocess.run([binary, "--help"], capture_output=True, text=True, errors="replace", timeout=30,
                              stdin=subprocess.DEVNULL)
        first = proc.stdout.lstrip().splitlines()[:1]
    except (OSError, subprocess.TimeoutExpired):
        first = []
    if not (first and first[0].startswith("ipclab")):
        raise UsageError(f"side {label}: {brief(binary)} is not an ipclab binary (its --help does not say "
                         "ipclab); give the path of one, e.g. build/release/ipclab")


def one_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


class NoPlan(Exception):
    """The side's binary predates `run --plan`."""


def plan_side(side: Side) -> None:
    """`BIN run ... --plan`: the side's benchmarks, checked by the binary itself (filters, -p,
    --cpus and the environment, e.g. a malformed IPCLAB_FAULT), before any slice runs."""
    argv = [side.binary, "run", *side.filters]
    for p in side.params:
        argv += ["-p", p]
    argv += side.common + ["--plan"]
    try:
        proc = subprocess.run(argv, env=side.env, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UsageError(f"side {side.label}: cannot run {side.binary} ({e}); give a working ipclab binary") from None
    if proc.returncode != 0:
        why = one_line(proc.stderr) or f"exit status {proc.returncode}"
        if "--plan" in why:
            raise NoPlan(side.label)
        raise UsageError(f"side {side.label} ({side.binary}): {why.removeprefix('ipclab: ')}")
    try:
        side.plan = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
        assert all(isinstance(b.get("name"), str) and isinstance(b.get("params"), dict) for b in side.plan)
    except (ValueError, AssertionError, AttributeError):
        raise UsageError(f"side {side.label}: {side.binary} printed no plan; it predates `run --plan`: "
                         "give an ipclab binary built from this version or later") from None


# --- ab's run folder ---------------------------------------------------------------------------

class RunFolder:
    """ab's temporaries (each slice's result and error output) live in a run folder of its own in
    the harness's state folder, kept as the harness keeps its runs (src/core/ownership/journal.hpp,
    docs/reliability.md): $TMPDIR/ipclab-<uid>/run.<pid>.<random>, 0700, whose journal is locked
    for as long as ab lives and lists each file ("+path NAME" before it is made, "-path NAME" once
    it is gone). ab removes them when it ends, or on SIGINT/SIGTERM/SIGHUP; killed outright, it
    leaves them to the next `ipclab run`'s sweep, which takes the folder for a dead run's."""

    def __init__(self):
        tmp = os.environ.get("TMPDIR") or "/tmp"
        if not tmp.startswith("/"):
            raise UsageError(f"TMPDIR={brief(tmp)} is not an absolute path; set TMPDIR to one, e.g. /tmp")
        base = os.path.join(tmp, f"ipclab-{os.geteuid()}")
        try:
            os.mkdir(base, 0o700)
            os.chmod(base, 0o700)
        except FileExistsError:
            pass
        except OSError as e:
            raise UsageError(f"cannot create {brief(base)}: {e.strerror}; set TMPDIR to a writable folder") from None
        st = os.lstat(base)
        if not os.path.isdir(base) or os.path.islink(base) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise UsageError(f"{brief(base)} is not a folder of yours alone; remove it, or set TMPDIR to a "
                             "private folder")
        self.id = f"{os.getpid()}.{secrets.token_hex(4)}"
        fresh = os.path.join(base, f"new.{self.id}")  # a sweep leaves "new.*" alone for a minute
        os.mkdir(fresh, 0o700)
        os.chmod(fresh, 0o700)
        self.journal = os.open(os.path.join(fresh, "journal"),
                               os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        os.fchmod(self.journal, 0o600)
        fcntl.flock(self.journal, fcntl.LOCK_EX)  # the lease: held until ab ends, dropped when it dies
        self.path = os.path.join(base, f"run.{self.id}")
        os.rename(fresh, self.path)
        self.open = []

    def track(self, name: str) -> str:
        """Journals `name`, a file that is about to be made in the folder; returns its path."""
        os.write(self.journal, f"+path {name}\n".encode())
        self.open.append(name)
        return os.path.join(self.path, name)

    def new_file(self, name: str) -> str:
        """Journals `name`, then creates it (exclusively, 0600, empty); returns its path."""
        path = self.track(name)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
        return path

    def remove(self, name: str) -> None:
        try:
            os.unlink(os.path.join(self.path, name))
        except FileNotFoundError:
            pass
        if name in self.open:
            self.open.remove(name)
        os.write(self.journal, f"-path {name}\n".encode())

    def close(self) -> None:
        """Removes what is still open, the journal and the folder; safe to call again (a signal)."""
        if self.journal < 0:
            return
        for name in list(self.open):
            try:
                self.remove(name)
            except OSError:
                pass
        for step in (lambda: os.unlink(os.path.join(self.path, "journal")), lambda: os.rmdir(self.path)):
            try:
                step()
            except OSError:
                pass
        os.close(self.journal)
        self.journal = -1


class Slices:
    """Runs slices one at a time, in the run folder, and stops cleanly on a signal: the slice now
    running gets the same signal (its run cleans up after itself), then the folder goes."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self, folder: RunFolder):
        self.folder = folder
        self.child = None
        self.old = {sig: signal.signal(sig, self.on_signal) for sig in self.SIGNALS}

    def on_signal(self, sig, frame):
        child = self.child
        if child is not None:
            try:
                os.kill(child.pid, sig)
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline and os.waitpid(child.pid, os.WNOHANG) == (0, 0):
                    time.sleep(0.01)
            except (OSError, ChildProcessError):
                pass
        self.folder.close()
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)

    def close(self):
        for sig, old in self.old.items():
            signal.signal(sig, old)
        self.folder.close()


# --- slices -------------------------------------------------------------------------------------

@dataclass
class Slice:
    value: float | None = None
    kernel: dict | None = None
    error: str | None = None
    skipped: str | None = None
    context: dict | None = None
    record: dict | None = None     # the slice's record as its run wrote it (for --store)
    metric: str | None = None      # the metric's label: time/op, p99, capacity, cpu/op, ...
    higher_better: bool = False


def metric_of(rec, metric):
    """(label, value, higher is better) of one iteration record."""
    if metric == "time":
        label, get, higher = compared(rec)
        return label, get(rec), higher
    if metric == "cpu":
        return "cpu/op", rec.num("cpu", "per_op_ns"), False
    if metric.startswith("cpu:"):
        role = metric.split(":", 1)[1]
        return f"{role} cpu/op", rec.role_cpu(role), False
    return metric, rec.latency(metric), False


def run_slice(side: Side, bench: dict, args, slices: Slices, k: int, metric: str):
    """One repetition of one benchmark on one side, in its own process, its result and its error
    output in ab's run folder (its stdout, the console table, is not read)."""
    folder = slices.folder
    out = os.path.join(folder.path, f"slice-{k}.json")
    argv = [side.binary, "run", f"{bench['suite']}/{bench['mechanism']}"]
    for name, value in bench["params"].items():
        argv += ["-p", f"{name}={value}"]
    argv += ["--repetitions", "1", "--duration", args.duration, "--warmup", args.warmup, "--json", out]
    if args.cpus:
        argv += ["--cpus", args.cpus]
    if args.kernel_counters:
        argv.append("--kernel-counters")
    for antagonist in args.antagonist:
        argv += ["--antagonist", antagonist]
    if args.antagonist:  # ab pairs the two builds under the same noise: no quiet repetitions beside
        argv.append("--unpaired")
    # The harness has its own stall watchdog and timeout; this one only keeps ab from hanging on a
    # binary that has none.
    limit = 60 + 4 * (float(args.duration) + float(args.warmup))
    err_name = f"slice-{k}.err"
    folder.track(f"slice-{k}.json")  # journaled before the slice's run may make it
    with open(folder.new_file(err_name), "w") as err_file:
        slices.child = subprocess.Popen(argv, env=side.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=err_file)
    try:
        rc = slices.child.wait(timeout=limit)
        with open(os.path.join(folder.path, err_name), encoding="utf-8", errors="replace") as f:
            err = f.read()
    except subprocess.TimeoutExpired:
        slices.child.kill()
        slices.child.wait()
        rc, err = -1, f"no answer within {limit:.0f} s"
    finally:
        slices.child = None
        folder.remove(err_name)
    if rc == 2:  # the plan was accepted, so this is the binary disagreeing with itself
        folder.remove(f"slice-{k}.json")
        raise RuntimeError(f"side {side.label}: {bench['name']}: {one_line(err)}")
    try:
        rf = load(out)
    except UsageError:
        return Slice(error=f"side {side.label}: {one_line(err) or f'exit status {rc}'}")
    finally:
        folder.remove(f"slice-{k}.json")
    recs = [r for r in rf.records if r.run_type == "iteration"]
    if len(recs) != 1:
        return Slice(error=f"side {side.label}: {len(recs)} records in one slice")
    r = recs[0]
    if r.status == "skipped":
        return Slice(skipped=r.error or "skipped")
    if not r.ok:
        return Slice(error=f"side {side.label}: {r.error}")
    label, value, higher = metric_of(r, metric)
    kernel = r.get("kernel", "per_op")
    return Slice(value=value if is_number(value) and value > 0 else None,
                 kernel=kernel if isinstance(kernel, dict) else None, context=rf.context, record=r.raw,
                 metric=label, higher_better=higher)


# --- statistics ---------------------------------------------------------------------------------

def wilcoxon_p(logs) -> float:
    """Two-sided Wilcoxon signed-rank p of the log ratios against 0; 1 when every pair is equal."""
    from scipy.stats import wilcoxon

    if all(v == 0 for v in logs):
        return 1.0
    try:
        return float(wilcoxon(logs, alternative="two-sided").pvalue)
    except ValueError:
        return 1.0


def judge(logs, higher_better: bool, threshold_pct: float, alpha: float, seed: int) -> dict:
    n = len(logs)
    m = median(logs)
    lo, hi = bootstrap_median_ci(logs, seed)
    p = wilcoxon_p(logs)
    beyond = abs(m) > math.log1p(threshold_pct / 100)
    worse = (m > 0) != higher_better
    word = "slower" if worse else "faster"
    if not beyond:
        verdict = "same"
    elif 2 / 2 ** n >= alpha:
        verdict = f"{word}? (too few pairs)"
    elif p < alpha:
        verdict = word
    else:
        verdict = f"same (not significant, p={p:.2g})"
    return {"median_ratio": math.exp(m), "ci": [math.exp(lo), math.exp(hi)], "p": p, "verdict": verdict}


def kernel_medians(slices):
    out = {}
    for key in KERNEL_KEYS:
        v = median([s.kernel.get(key) for s in slices if s.kernel])
        if v is not None:
            out[key] = v
    return out or None


# --- output -------------------------------------------------------------------------------------

def fmt_value(v, label):
    if label == "capacity":
        return f"{v:,.0f}/s" if is_number(v) else "—"
    return fmt_time_ns(v)


def short_names(plans):
    """Names for the table: suite/mechanism and only the parameters whose values differ among the
    planned points of that mechanism on both sides (the JSON keeps the full names)."""
    by_mech = {}
    for b in (b for plan in plans for b in plan):
        by_mech.setdefault(f"{b['suite']}/{b['mechanism']}", []).append(b["params"])

    def short(b):
        mech = f"{b['suite']}/{b['mechanism']}"
        points = by_mech[mech]
        return mech + "".join(f"/{k}:{v}" for k, v in sorted(b["params"].items())
                              if len({p.get(k) for p in points}) > 1)
    return [[short(b) for b in plan] for plan in plans]


def format_table(rows, head) -> str:
    lines = [head, ""]
    cols = ["benchmark", "metric", "A", "B", "B/A", "95% CI", "p", "sys/op A→B", "verdict"]
    table = []
    for r in rows:
        ka, kb = (r.get("kernel_per_op") or {}).get("a"), (r.get("kernel_per_op") or {}).get("b")
        sysop = (f"{ka['syscalls']:.2f}→{kb['syscalls']:.2f}"
                 if ka and kb and "syscalls" in ka and "syscalls" in kb else "—")
        name = r["short"] if r["short"] == r["short_b"] else f"{r['short']} ↔ {r['short_b']}"
        if r.get("median_ratio") is None:
            table.append([name, r.get("metric") or "", "—", "—", "—", "—", "—", sysop, r["verdict"]])
            continue
        table.append([name, r["metric"], fmt_value(r["a"], r["metric"]), fmt_value(r["b"], r["metric"]),
                      f"{r['median_ratio']:.3f}", f"[{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]", f"{r['p']:.2g}",
                      sysop, r["verdict"]])
    head, _, *body = text_table(cols, table)  # no dashed line under ab's head
    return "\n".join(lines + [head] + body)


# --- the command --------------------------------------------------------------------------------

def _checked_args(argv):
    """The options, the two binaries and what can be checked of them before anything runs."""
    args = parser().parse_intermixed_args(argv)  # filters may come after options, as for `run`
    base, new = check_binary(args.base), check_binary(args.new)
    for option in ("duration", "warmup"):  # the binary checks their ranges in its plan
        seconds = parse_duration(getattr(args, option))
        if seconds is None:
            raise UsageError(f"--{option} {getattr(args, option)!r}: give seconds, bare or with a unit (0.2, "
                             f"200ms), e.g. --{option} 0.2")
        setattr(args, option, f"{seconds:g}")  # as seconds: a binary built before units reads them too
    if args.json:
        check_target("--json", args.json)
    for label, binary in (("A", base), ("B", new)) if base != new else (("A", base),):
        check_ipclab(label, binary)
    return args, base, new


def _planned_sides(args, base, new) -> list:
    """Sides A and B, each with its plan (its binary's `run --plan`), checked to pair one to one."""
    common = (["--preset", args.preset] if args.preset else []) + (["--cpus", args.cpus] if args.cpus else [])
    # --duration and --warmup go to the plan too, so that the binary checks their ranges now.
    check = ["--duration", args.duration, "--warmup", args.warmup]
    for antagonist in args.antagonist:  # checked by each binary's plan, as the options above
        check += ["--antagonist", antagonist]
    sides = []
    for label, binary in (("A", base), ("B", new)):
        s = label.lower()
        env = dict(e.split("=", 1) for e in getattr(args, f"{s}_env"))
        sides.append(Side(label, binary, getattr(args, f"{s}_filter") or args.filters,
                          merged_params(args.param, getattr(args, f"{s}_param")), env, common + check))
    old = []
    for s in sides:
        try:
            plan_side(s)
        except NoPlan:
            old.append(s)
        s.common = common
    a, b = sides
    # A build from before `run --plan` (a baseline older than ab) runs the other side's plan: its
    # slices name every parameter of each point, and a point it cannot run fails its slice.
    for s in old:
        other = b if s is a else a
        if other in old or (s.filters, s.params) != (other.filters, other.params):
            raise UsageError(f"side {s.label} ({s.binary}) predates `ipclab run --plan`: give both sides the same "
                             "filters and parameters (the other side plans for it), or a newer binary")
        s.plan = other.plan
    if not a.plan or not b.plan:
        raise UsageError(f"side {'A' if not a.plan else 'B'} plans no benchmark; give filters that select some "
                         "(see `ipclab list`)")
    if len(a.plan) != len(b.plan):
        raise UsageError(f"side A plans {len(a.plan)} benchmarks and side B {len(b.plan)}: the sides must pair "
                         "one to one; make their filters and parameters select as many points")
    return sides


def _run_pairs(args, sides, started):
    """Every benchmark's slices, A and B alternately in ABBA order, pair by pair, with progress on a
    terminal: (per benchmark A's and B's slices, benchmark -> (status, why) of one that stopped)."""
    benches = range(len(sides[0].plan))
    slices = {i: ([], []) for i in benches}  # per benchmark: A's and B's slices, pair by pair
    dead = {}  # benchmark -> why it stopped (a failed or skipped slice)
    total = args.pairs * len(benches) * 2
    progress = sys.stderr.isatty()
    width = shutil.get_terminal_size((100, 24)).columns
    short_progress = short_names([s.plan for s in sides])
    done = 0
    slices_run = Slices(RunFolder())  # every check passed: the first thing ab creates
    try:
        for pair in range(args.pairs):
            order = (0, 1) if pair % 2 == 0 else (1, 0)  # A B, B A, A B, ...: ABBA
            for i in benches:
                for side_index in order:
                    done += 1
                    if i in dead:
                        continue
                    side = sides[side_index]
                    if progress:
                        eta = (time.monotonic() - started) / max(done - 1, 1) * (total - done + 1)
                        text = (f"[{done}/{total}] pair {pair + 1} {side.label} "
                                f"{short_progress[side_index][i]} (ETA {eta:.0f}s)")
                        # One line that fits the terminal: a wrapped line would not be cleared.
                        print(f"\r\033[K{text[:max(width - 1, 20)]}", end="", file=sys.stderr, flush=True)
                    sl = run_slice(side, side.plan[i], args, slices_run, done, args.metric)
                    if sl.error or sl.skipped:
                        dead[i] = ("failed", sl.error) if sl.error else ("skipped", sl.skipped)
                        continue
                    slices[i][side_index].append(sl)
        if progress:
            print("\r\033[K", end="", file=sys.stderr)
    finally:
        slices_run.close()
    return slices, dead


def _judged_rows(args, a, b, slices, dead) -> list:
    """A row per benchmark: both sides' medians, the paired ratios and the verdict on them, or why
    it has none."""
    rows = []
    short_a, short_b = short_names([a.plan, b.plan])
    for i in range(len(a.plan)):
        name, name_b = a.plan[i]["name"], b.plan[i]["name"]
        row = {"name": name, "short": short_a[i], "short_b": short_b[i]}
        if name_b != name:
            row["name_b"] = name_b
        if i in dead:
            status, why = dead[i]
            row.update(verdict=status, error=why, metric=None, median_ratio=None)
            rows.append(row)
            continue
        sa, sb = slices[i]
        first = (sa + sb)[0] if sa or sb else Slice()
        label, higher = first.metric, first.higher_better
        pairs = [(x.value, y.value) for x, y in zip(sa, sb) if x.value and y.value]
        row.update(metric=label, higher_better=higher, a=median([x for x, _ in pairs]),
                   b=median([y for _, y in pairs]), ratios=[y / x for x, y in pairs])
        row["kernel_per_op"] = {"a": kernel_medians(sa), "b": kernel_medians(sb)}
        if len(pairs) < 2:
            row.update(verdict="failed", error=f"{len(pairs)} pairs gave the metric {label}", median_ratio=None)
        else:
            seed = (args.seed ^ zlib.crc32(name.encode())) & (2**63 - 1)
            row.update(judge([math.log(r) for r in row["ratios"]], higher, args.threshold, args.alpha, seed))
        rows.append(row)
    return rows


def _env_text(side):
    return "".join(f" {k}={v}" for k, v in side.env_set.items())


def _write_json(args, a, b, rows, slices, load_avg, started):
    """The comparison as JSON (--json): both sides, the method, the context of A's first slice that
    has one, the rows, and the names of the regressions and failures."""
    context = next((s.context for i in range(len(a.plan)) for s in slices[i][0] if s.context), None)
    doc = {"ab": {"a": {"binary": a.binary, "filters": a.filters, "params": a.params, "env": a.env_set},
                  "b": {"binary": b.binary, "filters": b.filters, "params": b.params, "env": b.env_set},
                  "pairs": args.pairs, "order": "ABBA", "duration_s": float(args.duration),
                  "warmup_s": float(args.warmup), "threshold_pct": args.threshold, "alpha": args.alpha,
                  "metric": args.metric, "seed": args.seed, "kernel_counters": args.kernel_counters,
                  "antagonists": args.antagonist, "bootstrap_resamples": BOOTSTRAP_RESAMPLES,
                  "load_avg": list(load_avg), "elapsed_s": time.monotonic() - started},
           "context": context, "benchmarks": rows,
           "regressions": [r["name"] for r in rows if r["verdict"] == "slower"],
           "failed": [r["name"] for r in rows if r["verdict"] == "failed"]}
    write_atomic(args.json, json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.json}", file=sys.stderr)


def cmd_ab(argv) -> int:
    args, base, new = _checked_args(argv)
    sides = _planned_sides(args, base, new)
    a, b = sides
    started = time.monotonic()
    slices, dead = _run_pairs(args, sides, started)
    rows = _judged_rows(args, a, b, slices, dead)
    load_avg = os.getloadavg()
    head = (f"ab: A = {a.binary}{_env_text(a)}\n    B = {b.binary}{_env_text(b)}\n"
            f"    {args.pairs} pairs in ABBA order, slices of {args.duration} s after {args.warmup} s warm-up; "
            f"threshold {args.threshold:g}%, alpha {args.alpha:g}; load {' '.join(f'{x:.2f}' for x in load_avg)}")
    print(format_table(rows, head))
    for r in rows:
        if r.get("error"):
            print(f"{r['verdict'].upper()} {r['name']}: {r['error']}", file=sys.stderr)
    for r in rows:
        del r["short"], r["short_b"]
    if args.json:
        _write_json(args, a, b, rows, slices, load_avg, started)
    if args.store:
        store_sides(args.store, new, sides, [[slices[i][k] for i in range(len(a.plan))] for k in (0, 1)])
    return 1 if any(r["verdict"] in ("slower", "failed") for r in rows) else 0


def store_sides(store, binary, sides, per_side):
    """Each side's slices into the results store as one run of kind ab, under that side's own
    context (its build, its commit), by `binary`'s `store import -` (the document on its stdin:
    nothing written to disk). A store that cannot take them is one line; the comparison stands."""
    for side, per_bench in zip(sides, per_side):
        done = [sl for sls in per_bench for sl in sls if sl.record]
        if not done:
            continue
        context = dict(done[0].context or {}, ab={"side": side.label, "binary": side.binary, "env": side.env_set})
        doc = {"context": context, "benchmarks": [sl.record for sl in done]}
        p = subprocess.run([binary, "store", "import", "-", "--kind", "ab", "--store", store], input=json.dumps(doc),
                           capture_output=True, text=True, env={**os.environ, "IPCLAB_NO_STORE": ""})
        if p.returncode != 0:
            print(f"warning: side {side.label}'s slices not stored: {one_line(p.stderr)}", file=sys.stderr)
        else:
            print(f"side {side.label}: {len(done)} slices stored in {store}", file=sys.stderr)
