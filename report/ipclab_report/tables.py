"""The result table every output shares: name, time/op, rate, p50, p99, CPU/op, ctx/op, status."""

from __future__ import annotations

from .util import fmt_float, fmt_si, fmt_time_ns

COLUMNS = ["name", "time/op", "rate", "p50", "p99", "CPU/op", "ctx/op", "status"]


def row(r, multi=False) -> dict:
    """Formatted cells for one summary record; figures of failed/skipped records are not shown."""
    ok = r.ok
    reps = r.get("repetition")
    cells = {
        "name": r.name,
        "run": r.source.tag or r.source.label,
        "time/op": fmt_time_ns(r.time_per_op_ns) if ok else "—",
        "rate": (fmt_si(r.rate("ops_per_s"), "/s") if ok else "—"),
        "p50": fmt_time_ns(r.latency("p50")) if ok else "—",
        "p99": fmt_time_ns(r.latency("p99")) if ok else "—",
        "CPU/op": fmt_time_ns(r.num("cpu", "per_op_ns")) if ok else "—",
        "ctx/op": fmt_float(r.num("cpu", "ctx_per_op")) if ok else "—",
        "status": r.status,
        "error": r.error or "",
        "reps": reps if isinstance(reps, int) else None,
        "cv": r.num("spread", "cv"),
    }
    return cells


def columns(multi: bool):
    return (["name", "run"] + COLUMNS[1:]) if multi else COLUMNS


def suite_rows(recs, multi=False):
    """Rows sorted so that one benchmark's results from several files sit next to each other."""
    order = list(dict.fromkeys(r.name for r in recs))
    files = list(dict.fromkeys(r.source.label for r in recs))
    recs = sorted(recs, key=lambda r: (order.index(r.name), files.index(r.source.label)))
    return [row(r, multi) for r in recs]
