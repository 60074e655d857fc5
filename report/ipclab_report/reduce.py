"""A result file reduced to its medians: small enough to commit, still read by report and compare.

What goes: the per-repetition records (each benchmark keeps its median aggregate, computed here
when the file has none), the latency histograms' buckets (the percentiles stay; an open-loop
record's raw and scheduling-error latencies too), the spread's
min/max/stddev (its cv and per-repetition values stay: compare's samples), the CPU totals and
switch counts (CPU and switches per op stay), texts longer than LONG_TEXT characters in `extra`
(commands, paths, descriptions: the figures stay) and null fields.
Numbers keep DIGITS significant digits: the tables show three, and compare's ratios do not move.
The context is kept whole, with `reduced_from` naming the file it came from.
"""

from __future__ import annotations

import json
import os

from . import registry
from .load import SCHEMA_VERSION, summaries
from .util import UsageError, read_regular, write_atomic

LONG_TEXT = 80
DIGITS = 6
# What stays of the objects whose figures the tables derive from: compare's samples are the
# spread's values; the CPU totals and switch counts are in the per-op figures.
KEEP = {"spread": ("cv", "values"),
        "cpu": ("per_op_ns", "ctx_per_op", "faults_per_op", "steal_per_op_ns", "steal_share")}


def _round(v):
    if isinstance(v, float):
        return float(f"{v:.{DIGITS}g}")
    if isinstance(v, dict):
        return {k: _round(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_round(x) for x in v]
    return v


def _short(v):
    """`extra` without its long texts, at any depth."""
    if isinstance(v, dict):
        return {k: _short(x) for k, x in v.items() if not (isinstance(x, str) and len(x) > LONG_TEXT)}
    if isinstance(v, list):
        return [_short(x) for x in v if not (isinstance(x, str) and len(x) > LONG_TEXT)]
    return v


def reduce_record(raw: dict) -> dict:
    out = dict(raw)
    lat = out.get("latency_ns")
    if isinstance(lat, dict):
        out["latency_ns"] = {k: v for k, v in lat.items() if k != "histogram"}
    for key, keep in KEEP.items():
        if isinstance(out.get(key), dict):
            out[key] = {k: v for k, v in out[key].items() if k in keep}
    if isinstance(out.get("extra"), dict):
        out["extra"] = _short(out["extra"])
        rate = out["extra"].get("rate")
        if isinstance(rate, dict):  # an open-loop record's other latency objects (docs/json-schema.md)
            out["extra"]["rate"] = {k: ({x: y for x, y in v.items() if x != "histogram"} if isinstance(v, dict) else v)
                                    for k, v in rate.items()}
    return _round(out)


def reduce(rfs) -> dict:
    """The reduced document of one loaded result file, or of several parts of one run on one
    machine (the reference: the quick preset and the open-loop curves), merged: the first file's
    context, every file's benchmarks; a machine or a benchmark name seen twice is refused."""
    rfs = rfs if isinstance(rfs, list) else [rfs]
    first = rfs[0]
    context = dict(first.context, reduced_from=first.path)
    if len(rfs) > 1:
        context["merged_from"] = [rf.path for rf in rfs]
        if registry.merged_doc(rfs):
            context["registry"] = registry.merged_doc(rfs)
    benchmarks, seen = [], set()
    for rf in rfs:
        if rf.context.get("hostname") != first.context.get("hostname"):
            raise UsageError(f"--reduce: {rf.path} is from {rf.context.get('hostname')}, {first.path} from "
                             f"{first.context.get('hostname')}; merge only parts of one run on one machine")
        for s in summaries(rf):
            if s.name in seen:
                raise UsageError(f"--reduce: {s.name} is in more than one file; merge files of different "
                                 "benchmarks only")
            seen.add(s.name)
            benchmarks.append(reduce_record(s.raw))
    return {"schema_version": SCHEMA_VERSION, "context": context, "benchmarks": benchmarks}


def dumps(doc: dict) -> str:
    """The context indented, then one benchmark per line: small, and a change is a line in a diff."""
    head = json.dumps({k: v for k, v in doc.items() if k != "benchmarks"}, indent=1, ensure_ascii=False)
    lines = [json.dumps(b, separators=(",", ":"), ensure_ascii=False) for b in doc["benchmarks"]]
    return head[:-2] + ',\n "benchmarks": [\n' + ",\n".join(lines) + "\n ]\n}\n"


def write(rfs, path: str) -> None:
    """Write the reduced `rfs` (one loaded file or several, see reduce) to `path`, replacing only
    a reduced result (one with `reduced_from`): never an input itself, nor any other file ipclab did
    not reduce."""
    rfs = rfs if isinstance(rfs, list) else [rfs]
    if os.path.lexists(path):
        if os.path.islink(path) or not os.path.isfile(path):
            raise UsageError(f"--reduce {path} is a link, a folder or a special file; name a file")
        if any(os.path.samefile(path, rf.path) for rf in rfs):
            raise UsageError(f"--reduce {path} is the result being reduced; name another file")
        try:
            old = json.loads(read_regular(path, "--reduce", "name a file", follow=False))
            ours = "reduced_from" in (old.get("context") or {})
        except (OSError, ValueError, AttributeError, RecursionError):
            ours = False
        if not ours:
            raise UsageError(f"--reduce {path} exists and is not a reduced result; move it away or name another file")
    write_atomic(path, dumps(reduce(rfs)))
