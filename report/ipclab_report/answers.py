"""The report's first screen: the questions a reader opens it with, answered from the run's own
records before any plot — per question a ranked table with the figure it ranks by. A question the
run holds no records for is left out, and the ones it holds say what they were measured with."""

from __future__ import annotations

from dataclasses import dataclass, field

from .tables import short_names
from .util import fmt_time_ns, is_number

SMALL = 256   # bytes: a "small message" (the quick preset's 64 B points, the reference's 64-256 B)
TOP = 8       # rows per question: the leaders and enough runner-ups to see the spread


@dataclass
class Answer:
    question: str
    ranked_by: str
    columns: list
    rows: list = field(default_factory=list)
    measured: str = ""   # what every row shares: pattern, size, placement
    left_out: str = ""   # what was not ranked, and why


def _size(r):
    v = r.params.get("size")
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def _ok(r):
    return r.get("status") == "ok"


def _shared(records):
    """What every row of a question shares, of its pattern, size, placement and mode."""
    keys = sorted({k for r in records for k in r.params})
    same = [k for k in keys if len({str(r.params.get(k)) for r in records}) == 1
            and k in ("size", "placement", "pattern", "mode")]
    return ", ".join(f"{k}={records[0].params[k]}" for k in same if k in records[0].params)


SHORT_WINDOW = "short_window"   # the harness's flag: a window shorter than the machine allows


def _left_out(short):
    """Why records were not ranked: a figure from a measured window shorter than the floor the
    machine's timer and scheduler allow (the run context's window_floor) is never ranked."""
    if not short:
        return ""
    return (f"{len(short)} not ranked: measured window shorter than this machine's floor "
            f"(flag short_window; rerun with a longer --duration): "
            + ", ".join(sorted(r.name for r in short)))


def _table(records, key, reverse, cells, question, ranked_by, columns, multi):
    records = [r for r in records if is_number(key(r))]
    short = [r for r in records if SHORT_WINDOW in r.flags]
    records = [r for r in records if SHORT_WINDOW not in r.flags]
    if not records:
        return Answer(question=question, ranked_by=ranked_by, columns=["rank", "name"], rows=[],
                      left_out=_left_out(short)) if short else None
    records.sort(key=key, reverse=reverse)
    names = short_names(records)   # as the console and the suite tables name a row
    rows = []
    for i, r in enumerate(records[:TOP], 1):
        row = {"rank": i, "name": names[r.name], "full": r.name}
        if multi:
            row["run"] = r.source.tag or r.source.label
        row.update(cells(r))
        rows.append(row)
    cols = ["rank", "name"] + (["run"] if multi else []) + columns
    return Answer(question=question, ranked_by=ranked_by, columns=cols, rows=rows, measured=_shared(records),
                  left_out=_left_out(short))


def _rate(v):
    if not is_number(v):
        return "—"
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{v / div:.3g}{unit}/s"
    return f"{v:.3g}/s"


def answers(records, multi=False) -> list:
    out = []
    ok = [r for r in records if _ok(r)]
    msg = [r for r in ok if r.suite == "messaging" and (_size(r) or 0) <= SMALL and _size(r)]

    # Latency: round trips of small messages, one question per placement the run holds.
    rtt = [r for r in msg if r.params.get("pattern") in ("roundtrip", "pingpong")
           and r.get("latency_ns", "kind") == "rtt"]
    for placement in sorted({str(r.params.get("placement", "")) for r in rtt}):
        rs = [r for r in rtt if str(r.params.get("placement", "")) == placement]
        where = {"same": "both sides on one CPU", "cross": "on two CPUs"}.get(placement, f"placement {placement}")
        a = _table(rs, lambda r: r.num("latency_ns", "p50"), False,
                   lambda r: {"RTT p50": fmt_time_ns(r.num("latency_ns", "p50")),
                              "RTT p99": fmt_time_ns(r.num("latency_ns", "p99")),
                              "CPU/round trip": fmt_time_ns(r.num("cpu", "per_op_ns"))},
                   f"Which transport for small messages at low latency, {where}?",
                   "round-trip p50 (lowest first)", ["RTT p50", "RTT p99", "CPU/round trip"], multi)
        if a:
            out.append(a)

    # Throughput: small messages per second, the throughput pattern.
    thr = [r for r in msg if r.params.get("pattern") == "throughput"]
    for placement in sorted({str(r.params.get("placement", "")) for r in thr}):
        rs = [r for r in thr if str(r.params.get("placement", "")) == placement]
        where = {"same": "both sides on one CPU", "cross": "on two CPUs"}.get(placement, f"placement {placement}")
        a = _table(rs, lambda r: r.num("rates", "ops_per_s"), True,
                   lambda r: {"messages/s": _rate(r.num("rates", "ops_per_s")),
                              "CPU/message": fmt_time_ns(r.num("cpu", "per_op_ns"))},
                   f"Which moves the most small messages per second, {where}?",
                   "messages per second (highest first; the throughput pattern queues them, so its "
                   "latency is no round trip)", ["messages/s", "CPU/message"], multi)
        if a:
            out.append(a)

    # Bulk: the largest size the run moved, in bytes per second.
    bulk = [r for r in ok if r.suite == "bulk" and _size(r)]
    if bulk:
        top = max(_size(r) for r in bulk)
        rs = [r for r in bulk if _size(r) == top]
        a = _table(rs, lambda r: (r.num("bytes") or 0) / r.num("wall_s") if r.num("wall_s") else None, True,
                   lambda r: {"GiB/s": f"{(r.num('bytes') or 0) / r.num('wall_s') / 2**30:.2f}",
                              "CPU/op": fmt_time_ns(r.num("cpu", "per_op_ns"))},
                   f"Which moves {top // 1024 if top < 2**20 else top // 2**20} "
                   f"{'KiB' if top < 2**20 else 'MiB'} messages fastest?",
                   "bytes per second (highest first)", ["GiB/s", "CPU/op"], multi)
        if a:
            out.append(a)

    # Runtimes: one task yielding, the cost of a switch.
    sw = [r for r in ok if r.suite == "runtime" and r.mechanism.startswith("switch_")
          and not r.mechanism.startswith("switch_many")]
    a = _table(sw, lambda r: r.num("time_per_op_ns"), False,
               lambda r: {"ns/switch": fmt_time_ns(r.num("time_per_op_ns"))},
               "Which runtime switches tasks fastest?", "time per yield (lowest first)", ["ns/switch"], multi)
    if a:
        out.append(a)
    return out
