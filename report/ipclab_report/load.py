"""Reading result files (schema version 1) into records, and one summary per benchmark. A run's
results journal (JSON lines, kept when the run crashed) reads as the result file it would have been.

Readers ignore fields they do not know (docs/json-schema.md); every accessor here tolerates a
missing field and answers None rather than 0, so that a missing figure never looks like a fast one.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field

from .stats import histogram_percentile, median, median_index, stddev
from .util import UsageError, brief, is_number, read_regular

SCHEMA_VERSION = 1
STEAL_FLAG_SHARE = 0.05  # the harness flags a window `steal` above it (src/core/stats/record.hpp)
JOURNAL_VERSION = 1   # a results journal's header, {"ipclab_journal": 1, ...} (src/core/output/journal.cpp)
FIX = "pass a result file written by `ipclab run --json F`"

# What one input may hold, so that the memory a report takes is bounded and an input beyond it is
# refused in one line before it is parsed. A `--preset full` run is 7,167 benchmarks x (5
# repetitions + 1 aggregate) = 43,002 records: about 300 MB written, 1.3 GB once read.
MAX_RECORDS = 200_000
MAX_BYTES = 1 << 30
# Every record has a "name"; so does each suite, mechanism and parameter of the registry in the
# context (a few hundred): more "name" keys than the records allowed and these are too many.
NAME_SLACK = 20_000
TOO_LARGE = "split the run into a result file per suite (`ipclab run SUITE --json SUITE.json`)"


def too_many_records(path: str) -> UsageError:
    return UsageError(f"{brief(path)} holds more than {MAX_RECORDS:,} benchmark records, the most the report "
                      f"reads (a `--preset full` run has 43,002); {TOO_LARGE}")

# Parameter values renamed since, {parameter: {old: new}}: the harness still accepts the old
# names on input (its ParamSpec aliases), and this reader reads them as the new ones, so that a
# result file written before the rename matches a new one by name (compare) and by value (plots).
RENAMED_VALUES = {"pattern": {"pingpong": "roundtrip"}}


@dataclass
class Record:
    """One benchmark record, iteration or aggregate, of one result file."""

    raw: dict
    source: "ResultFile"

    def get(self, *path):
        cur = self.raw
        for key in path:
            if not isinstance(cur, dict):
                return None
            cur = cur.get(key)
        return cur

    def num(self, *path):
        v = self.get(*path)
        return v if is_number(v) else None

    @property
    def name(self) -> str:
        return self.raw["name"]

    @property
    def suite(self) -> str:
        s = self.raw.get("suite")
        return s if isinstance(s, str) and s else self.name.split("/")[0]

    @property
    def mechanism(self) -> str:
        m = self.raw.get("mechanism")
        if isinstance(m, str) and m:
            return m
        parts = self.name.split("/")
        return parts[1] if len(parts) > 1 else parts[0]

    @property
    def params(self) -> dict:
        p = self.raw.get("params")
        return p if isinstance(p, dict) else {}

    @property
    def run_type(self) -> str:
        return self.raw.get("run_type") or "iteration"

    @property
    def status(self) -> str:
        s = self.raw.get("status")
        return s if s in ("ok", "failed", "skipped") else "ok"

    @property
    def error(self) -> str | None:
        e = self.raw.get("error")
        return e if isinstance(e, str) and e else None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def time_per_op_ns(self):
        v = self.num("time_per_op_ns")
        if v is None:
            wall, ops = self.num("wall_s"), self.num("ops")
            if wall is not None and ops:
                v = wall * 1e9 / ops
        return v

    def rate(self, key):
        v = self.num("rates", key)
        if v is None and key == "MiB_per_s":
            b = self.num("rates", "bytes_per_s")
            v = b / (1 << 20) if b is not None else None
        return v

    def latency(self, pct: str, *path):
        """p50, p99, ... of the latency object at `path` (the record's `latency_ns` by default; a rate
        record's raw latency is at "extra", "rate", "raw_ns"), or from its histogram when the figure
        is missing. None when the object is (a saturated point's latency is null)."""
        path = path or ("latency_ns",)
        v = self.num(*path, pct)
        if v is None and pct.startswith("p"):
            q = {"p50": 50, "p90": 90, "p95": 95, "p99": 99, "p999": 99.9}.get(pct)
            if q is not None:
                v = histogram_percentile(self.get(*path, "histogram"), q)
        return v

    # --- open-loop records (pattern=rate): docs/json-schema.md, "Rate records" ---

    @property
    def is_rate(self) -> bool:
        return self.params.get("pattern") == "rate"

    @property
    def is_capacity(self) -> bool:
        """A capacity search (rate=auto): its figures are those of the confirming run."""
        return self.is_rate and self.params.get("rate") == "auto"

    @property
    def saturated(self) -> bool:
        """A saturated point is never a latency figure: its rates are, its latencies are not."""
        return self.is_rate and self.get("extra", "rate", "saturated") is True

    def rate_latency(self, pct: str, which: str = "corrected"):
        """A percentile of a rate record's corrected (from the intended send time), raw (from the
        actual send time) or sched (actual - intended send time) latency, or of its pacing floor
        (floor: the pacing loop's lateness alone, before the run); None when saturated, except the
        scheduling error and its floor, which are measured either way."""
        if which == "sched":
            return self.latency(pct, "extra", "rate", "sched_error_ns")
        if which == "floor":  # the pacing floor measured before the run (absent in older records)
            return self.latency(pct, "extra", "rate", "pacing_floor", "lateness_ns")
        if self.saturated:
            return None
        return self.latency(pct) if which == "corrected" else self.latency(pct, "extra", "rate", "raw_ns")

    @property
    def flags(self) -> list:
        """The record's own flags: an aggregate's (its repetitions', `steal` among them), an
        iteration's beyond its series' (`steal`)."""
        f = self.raw.get("flags")
        return [x for x in f if isinstance(x, str)] if isinstance(f, list) else []

    @property
    def steal_note(self) -> str:
        """What the harness's `steal` flag says (docs/methodology.md, "Steal time"): a measured window
        lost more than STEAL_FLAG_SHARE of its CPU time to the host's other work; "" without it."""
        if "steal" not in self.flags:
            return ""
        share = self.num("cpu", "steal_share")
        return (f"steal: a hypervisor took more than {STEAL_FLAG_SHARE:.0%} of a measured window's CPU time"
                + (f" ({share:.1%} {'median' if self.run_type == 'aggregate' else 'here'})" if share is not None else ""))

    def kernel_per_op(self, key: str = "syscalls"):
        """A kernel counter per operation, kernel.per_op: syscalls, context_switches, cpu_migrations
        or page_faults; None where the harness did not count it (no record field, or the counter
        was unavailable on that machine: kernel.unavailable says why)."""
        return self.num("kernel", "per_op", key)

    def role_cpu(self, role: str):
        """CPU per operation of one role (producer, consumer, server, client): extra.cpu_by_role."""
        return self.num("extra", "cpu_by_role", role, "per_op_ns")

    @property
    def roles(self) -> list:
        by_role = self.get("extra", "cpu_by_role")
        return [k for k, v in by_role.items() if isinstance(v, dict)] if isinstance(by_role, dict) else []

    def dim(self, key):
        """A parameter value; 'mechanism' and 'placement' have fallbacks outside params."""
        if key == "mechanism":
            return self.mechanism
        v = self.params.get(key)
        if v is None and key == "placement":
            v = self.get("placement", "layout")
        return v

    # --- CPU-matrix records (`ipclab run --cpu-matrix`): one run of a benchmark per CPU pair ---

    @property
    def is_cpu_matrix(self) -> bool:
        """One point of a CPU matrix: its params name the pair (`cpus`: "A,B") or its extra says
        which matrix it belongs to (`cpu_matrix`: every_pair or per_class)."""
        return "cpus" in self.params or isinstance(self.get("extra", "cpu_matrix"), str)

    @property
    def cpu_pair(self):
        """(A, B), the CPUs of a CPU-matrix record, A the first side: params.cpus "A,B", else
        placement.pair; None when neither names two CPUs."""
        text = self.params.get("cpus")
        if isinstance(text, str):
            parts = text.split(",")
            if len(parts) == 2 and all(p.strip().isdigit() for p in parts):
                return int(parts[0]), int(parts[1])
        pair = self.get("placement", "pair")
        if isinstance(pair, list) and len(pair) == 2 and all(isinstance(c, int) and not isinstance(c, bool)
                                                              and c >= 0 for c in pair):
            return pair[0], pair[1]
        return None

    @property
    def short_name(self) -> str:
        """The name without its suite prefix."""
        parts = self.name.split("/", 1)
        return parts[1] if len(parts) == 2 and parts[0] == self.suite else self.name


@dataclass
class ResultFile:
    path: str
    context: dict
    records: list = field(default_factory=list)
    label: str = ""
    tag: str = ""          # short, still unique: what legends show

    @property
    def cpu_count(self):
        """How many CPUs the run could use: the context's cpu.allowed (a list of CPUs, or a list
        such as "0-3,8"), else its logical_cpus; None when it says neither."""
        cpu = self.context.get("cpu") if isinstance(self.context.get("cpu"), dict) else {}
        allowed = cpu.get("allowed")
        if isinstance(allowed, list) and allowed and all(isinstance(c, int) for c in allowed):
            return len(set(allowed))
        if isinstance(allowed, str):
            n = cpu_list_count(allowed)
            if n:
                return n
        n = cpu.get("logical_cpus")
        return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None

    @property
    def topology(self):
        """The context's cpu.topology (packages, caches, cores and CPUs as sysfs says, and the
        measured c2c matrix when the run measured one); None when absent."""
        cpu = self.context.get("cpu")
        t = cpu.get("topology") if isinstance(cpu, dict) else None
        return t if isinstance(t, dict) else None

    # (how many records it was built over, iterations, aggregates, {name: its iterations}): built
    # once over the records and again only when some were added, so that asking for one
    # benchmark's repetitions costs a look-up, not a pass over every record: a report of n
    # records stays linear in n.
    _index: tuple | None = field(default=None, init=False, repr=False, compare=False)

    def _indexed(self) -> tuple:
        if self._index is None or self._index[0] != len(self.records):
            iterations, aggregates, by_name = [], [], {}
            for r in self.records:
                kind = r.run_type
                if kind == "iteration":
                    iterations.append(r)
                    by_name.setdefault(r.name, []).append(r)
                elif kind == "aggregate":
                    aggregates.append(r)
            self._index = (len(self.records), iterations, aggregates, by_name)
        return self._index

    @property
    def iterations(self):
        return list(self._indexed()[1])

    @property
    def aggregates(self):
        return list(self._indexed()[2])

    def repetitions(self, name: str) -> list:
        """The iteration records of benchmark `name`, in file order (a copy: the caller may keep it)."""
        return list(self._indexed()[3].get(name, ()))


def cpu_list_count(text: str):
    """The number of CPUs a kernel CPU list names ("0-3,8" -> 5); None when it is not one."""
    n = 0
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()) or int(hi or lo) < int(lo):
            return None
        n += int(hi or lo) - int(lo) + 1
    return n or None


def renamed(b: dict) -> dict:
    """Benchmark record `b` with renamed parameter values (RENAMED_VALUES) replaced by their new
    names, in its params and in its name; `b` itself when it has none."""
    params = b.get("params")
    if not isinstance(params, dict):
        return b
    new = {k: RENAMED_VALUES[k][v] for k, v in params.items()
           if isinstance(v, str) and v in RENAMED_VALUES.get(k, {})}
    if not new:
        return b
    parts = {f"{k}:{params[k]}": f"{k}:{v}" for k, v in new.items()}
    name = "/".join(parts.get(part, part) for part in b["name"].split("/"))
    return dict(b, name=name, params=dict(params, **new))


def journal_document(path: str, text: bytes):
    """The result object held by a results journal — JSON lines, a header `{"ipclab_journal": 1,
    "schema_version": 1, "context": {...}}` then one record per line, which `ipclab run` appends
    as each record completes and keeps when the run crashed or could not write its result files
    (docs/reliability.md) — or None when `text` is not one. A last line cut short (the run died
    while writing it) is left out, with a note on stderr."""
    end = text.find(b"\n")
    end = len(text) if end < 0 else end
    # Its header names it at once ({"ipclab_journal": 1, ...}): a result file, which may be a single
    # line too, is neither copied nor parsed as a header first.
    start = text[:min(end, 256)]
    if not start.lstrip().startswith(b"{") or b'"ipclab_journal"' not in start:
        return None
    first = text[:end]
    try:
        head = json.loads(first)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(head, dict) or "ipclab_journal" not in head:
        return None
    version = head["ipclab_journal"]
    if type(version) is not int or version != JOURNAL_VERSION:  # "1", 1.0 and true are no version either
        raise UsageError(f"{brief(path)} is a results journal of version {brief(json.dumps(version), 40)}; this reader "
                         f"reads version {JOURNAL_VERSION}: read it with the ipclab that wrote it, or rerun the "
                         "benchmarks with this one")
    if text.count(b"\n") > MAX_RECORDS + 1:  # a record a line
        raise too_many_records(path)
    benchmarks = []
    pos, line_no = len(first) + 1, 1
    while pos < len(text):  # line by line, never a second copy of the whole text
        stop = text.find(b"\n", pos)
        stop = len(text) if stop < 0 else stop
        line, pos, line_no = text[pos:stop], stop + 1, line_no + 1
        if not line.strip():
            continue
        try:
            benchmarks.append(json.loads(line))
        except (ValueError, UnicodeDecodeError):
            if NOT_BLANK.search(text, pos):
                raise UsageError(f"{path}: line {line_no} of the journal is not JSON; {FIX}") from None
            print(f"note: {path}: its last line is cut short (the run ended while writing it) and is left out",
                  file=sys.stderr)
    return {"schema_version": head.get("schema_version"), "context": head.get("context"), "benchmarks": benchmarks}


NOT_BLANK = re.compile(rb"\S")


def load(path: str) -> ResultFile:
    """Read and check one result file; any problem is a UsageError with a one-line message. A file
    over MAX_BYTES, or holding over MAX_RECORDS records, is refused before it is parsed."""
    try:
        # A FIFO, a folder or a device is refused, not waited on; so is a file over MAX_BYTES.
        text = read_regular(path, "", FIX, limit=MAX_BYTES, over_limit=TOO_LARGE)
    except FileNotFoundError:
        raise UsageError(f"{brief(path)}: no such file; {FIX}") from None
    try:
        doc = journal_document(path, text)
        if doc is None:
            if text.count(b'"name"') > MAX_RECORDS + NAME_SLACK:
                raise too_many_records(path)
            # Decoded, then parsed with the bytes let go: the text is held once, not twice.
            decoded = text.decode(json.detect_encoding(text), "surrogatepass")
            del text
            doc = json.loads(decoded)
            del decoded
    except (ValueError, UnicodeDecodeError) as e:
        where = f" (line {e.lineno}, column {e.colno})" if isinstance(e, json.JSONDecodeError) else ""
        raise UsageError(f"{brief(path)} is not JSON{where}; {FIX}") from None
    except RecursionError:
        raise UsageError(f"{brief(path)} is nested too deeply to be a result file; {FIX}") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path} is JSON but not a result object; {FIX}")
    version = doc.get("schema_version")
    if version != SCHEMA_VERSION:
        got = "no schema_version" if version is None else f"schema_version {version!r}"
        raise UsageError(f"{path} has {got}, this reader understands {SCHEMA_VERSION}; "
                         f"regenerate it with this ipclab or install the matching ipclab-report")
    benchmarks = doc.get("benchmarks")
    if not isinstance(benchmarks, list):
        raise UsageError(f"{path} has no \"benchmarks\" list; {FIX}")
    if len(benchmarks) > MAX_RECORDS:
        raise too_many_records(path)
    context = doc.get("context") if isinstance(doc.get("context"), dict) else {}
    rf = ResultFile(path=path, context=context)
    for i, b in enumerate(benchmarks):
        if not isinstance(b, dict) or not isinstance(b.get("name"), str) or not b["name"]:
            raise UsageError(f"{path}: benchmark record {i} has no name; {FIX}")
        rf.records.append(Record(raw=renamed(b), source=rf))
    return rf


def file_label(rf: ResultFile) -> str:
    """hostname · kernel · date, from the context; the file name when the context says nothing."""
    ctx = rf.context
    parts = []
    if isinstance(ctx.get("hostname"), str) and ctx["hostname"]:
        parts.append(ctx["hostname"])
    if isinstance(ctx.get("kernel"), str) and ctx["kernel"]:
        parts.append(ctx["kernel"])
    if isinstance(ctx.get("date"), str) and ctx["date"]:
        parts.append(ctx["date"][:16].replace("T", " "))
    return " · ".join(parts) if parts else os.path.basename(rf.path)


def load_all(paths) -> list:
    """Load every file and give each a label that is unique within the report."""
    files = [load(p) for p in paths]
    labels = [file_label(f) for f in files]
    for i, f in enumerate(files):
        label = labels[i]
        if labels.count(label) > 1:
            label = os.path.basename(f.path)
            if [os.path.basename(g.path) for g in files].count(label) > 1:
                label = f"{label} #{i + 1}"
        f.label = label
    # The short tag used in legends: the first context field that tells the files apart.
    for getter in (lambda f: f.context.get("hostname"), lambda f: f.context.get("kernel"),
                   lambda f: (f.context.get("date") or "")[:16].replace("T", " ") or None,
                   lambda f: os.path.basename(f.path)):
        tags = [getter(f) for f in files]
        if all(isinstance(t, str) and t for t in tags) and len(set(tags)) == len(tags):
            for f, t in zip(files, tags):
                f.tag = t
            break
    else:
        for f in files:
            f.tag = f.label
    return files


# --- summaries: one record per benchmark name and file -------------------------------------------

def _median_dict(dicts):
    keys = []
    for d in dicts:
        for k, v in (d or {}).items():
            if is_number(v) and k not in keys:
                keys.append(k)
    return {k: median([(d or {}).get(k) for d in dicts]) for k in keys}


def aggregate(iterations) -> dict:
    """The median aggregate of one benchmark's iteration records, shaped like the harness's own.

    Used when a file carries no aggregate record for the benchmark. Failed beats skipped beats ok:
    one failed repetition makes the benchmark failed, it is never averaged away.
    """
    first = iterations[0].raw
    statuses = [r.status for r in iterations]
    status = "failed" if "failed" in statuses else ("skipped" if "ok" not in statuses else "ok")
    error = next((r.error for r in iterations if r.status == status and r.error), None)
    oks = [r for r in iterations if r.ok]
    out = {k: first.get(k) for k in ("name", "suite", "mechanism", "params")}
    out.update(run_type="aggregate", aggregate_name="median", repetition=len(iterations),
               status=status, error=error, computed=True)
    if not oks:
        return out
    times = [r.time_per_op_ns for r in oks]
    mid = oks[median_index(times) if median_index(times) is not None else 0].raw
    for k in ("ops", "bytes", "wall_s", "time_per_op_ns"):
        out[k] = median([r.num(k) if k != "time_per_op_ns" else r.time_per_op_ns for r in oks])
    out["rates"] = _median_dict([r.get("rates") for r in oks])
    out["cpu"] = _median_dict([r.get("cpu") for r in oks])
    out["flags"] = sorted({f for r in oks for f in r.flags})  # the repetitions' own (their series' apart)
    # Every latency figure the median of the repetitions' own, as the harness's aggregate; its kind
    # and histogram the median repetition's.
    lat = mid.get("latency_ns")
    if isinstance(lat, dict):
        same = [r.get("latency_ns") for r in oks
                if isinstance(r.get("latency_ns"), dict) and r.get("latency_ns").get("kind") == lat.get("kind")]
        lat = {**lat, **_median_dict([{k: v for k, v in x.items() if k not in ("histogram", "kind")} for x in same])}
    out["latency_ns"] = lat
    out["extra"] = mid.get("extra")
    out["placement"] = mid.get("placement")
    kernels = [r.get("kernel") for r in oks if isinstance(r.get("kernel"), dict) and "per_op" in r.get("kernel")]
    if kernels:  # as the harness aggregates them: the median per op of each counter
        out["kernel"] = {k: v for k, v in kernels[0].items() if k in ("scope", "unavailable", "hardware_unavailable")}
        out["kernel"]["per_op"] = _median_dict([k.get("per_op") for k in kernels])
    integ = {}
    for r in iterations:
        for k, v in (r.get("integrity") or {}).items():
            if is_number(v):
                integ[k] = integ.get(k, 0) + v
    out["integrity"] = integ
    vals = [t for t in times if t is not None]
    if vals:
        m = median(vals)
        sd = stddev(vals)
        out["spread"] = {"metric": "time_per_op_ns", "min": min(vals), "max": max(vals),
                         "stddev": sd, "cv": sd / m if m else None, "values": vals}
    return out


def summaries(rf: ResultFile) -> list:
    """One Record per benchmark name, in first-seen order: the file's median aggregate when it has
    one, otherwise a median computed here from the iterations."""
    order, iters, aggs = [], {}, {}
    for r in rf.records:
        if r.name not in iters and r.name not in aggs:
            order.append(r.name)
        if r.run_type == "aggregate":
            if (r.get("aggregate_name") or "median") == "median":
                aggs.setdefault(r.name, r)
        else:
            iters.setdefault(r.name, []).append(r)
    out = []
    for name in order:
        if name in aggs:
            out.append(aggs[name])
        elif name in iters:
            out.append(Record(raw=aggregate(iters[name]), source=rf))
    return out


# What compare compares of a record: (label, getter, higher is better). An open-loop point is
# judged by its corrected p99 (a saturated repetition has none), a capacity search by its capacity.
TIME_PER_OP = ("time/op", lambda r: r.time_per_op_ns, False)
P99 = ("p99", lambda r: r.rate_latency("p99"), False)
CAPACITY = ("capacity", lambda r: r.num("extra", "capacity", "capacity_per_s"), True)


def compared(r):
    return CAPACITY if r.is_capacity else P99 if r.is_rate else TIME_PER_OP


def samples(rf: ResultFile) -> dict:
    """name -> (status, error, [the compared figure of each ok repetition]) for compare: time per op,
    or a rate record's corrected p99 or capacity (`compared`).

    Iteration records give the samples; a file holding only aggregates falls back to the
    aggregate's spread.values (the per-repetition times the harness kept) for time per op, and to
    the aggregate's own figure otherwise.
    """
    out = {}
    for s in summaries(rf):
        _, get, _ = compared(s)
        reps = rf.repetitions(s.name)
        if reps:
            vals = [get(r) for r in reps if r.ok and get(r) is not None]
        else:
            spread = s.get("spread", "values") if compared(s) is TIME_PER_OP else None
            vals = [v for v in spread if is_number(v)] if isinstance(spread, list) else []
            if not vals and get(s) is not None:
                vals = [get(s)]
        out[s.name] = (s.status, s.error, vals)
    return out
