"""The report's first screen: the questions a reader opens it with, answered from the run's own
records before any plot — per question a ranked table with the figure it ranks by. A question the
run holds no records for is left out, and the ones it holds say what they were measured with.

Every ranking shows its cost and its confidence: beside the figure, the CPU per operation and the
CPUs kept busy (CPU seconds per second of wall time: a side that spins reads as a whole core), the
wait strategy in the name, the spread over the repetitions; rows whose intervals (plots.interval)
overlap that of the first row of their group share its rank ("2="); and what was left out of the
ranking, and why, is listed under it."""

from __future__ import annotations

from dataclasses import dataclass, field

from .plots import interval
from .tables import short_names
from .util import fmt_time_ns, is_number

SMALL = 256   # bytes: a "small message" (the quick preset's 64 B points, the reference's 64-256 B)
TOP = 5       # rows per question: the leaders and enough runner-ups to see the spread


@dataclass
class Answer:
    question: str
    ranked_by: str
    columns: list
    rows: list = field(default_factory=list)
    measured: str = ""   # what every row shares: pattern, size, placement
    left_out: list = field(default_factory=list)   # "name: why" of what the ranking does not hold
    ties: bool = False   # some rank is shared


COST_NOTE = ("CPUs busy: CPU seconds per second of wall time, every side together (a side that spins "
             "reads as a whole core). Spread: half the range of the repetitions' time per operation, over "
             "its median. A rank with = is a tie: its interval (the 95% confidence interval of the median "
             "where the run has 3 repetitions or more, else the lowest to the highest repetition) overlaps "
             "that of the first row of its group.")

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


def _short_left_out(short):
    """Why records were not ranked: a figure from a measured window shorter than the floor the
    machine's timer and scheduler allow (the run context's window_floor) is never ranked."""
    return (f"measured window shorter than this machine's floor (flag short_window; rerun with a longer "
            f"--duration): " + ", ".join(sorted(r.name for r in short)))


def cpus_busy(r):
    """CPU seconds per second of wall time (user + sys of every side over the window): 1.0 is one
    core kept busy the whole time; None without a CPU figure."""
    user, sys_, wall = r.num("cpu", "user_s"), r.num("cpu", "sys_s"), r.num("wall_s")
    if is_number(user) and is_number(sys_) and wall:
        return (user + sys_) / wall
    cpu, t = r.num("cpu", "per_op_ns"), r.time_per_op_ns
    return cpu / t if is_number(cpu) and t else None


def _spread_text(r):
    """'±3.1%': half the range of the repetitions' time per op, over their median."""
    vals = [v for v in (r.get("spread", "values") or []) if is_number(v)]
    mid = r.time_per_op_ns
    if len(vals) < 2 or not mid:
        return "—"
    return f"±{(max(vals) - min(vals)) / 2 / mid * 100:.1f}%"


def _cost(r):
    busy = cpus_busy(r)
    return {"CPUs busy": f"{busy:.2f}" if is_number(busy) else "—", "spread": _spread_text(r)}


def with_wait(name: str, r) -> str:
    """`name` with the record's wait strategy, where it has one and the name does not say it
    already (a ring that spins costs a core): the answers' rows and the README's table."""
    wait = r.params.get("wait")
    if wait is not None and "wait:" not in name:
        name += f" wait:{wait}"
    return name


def _name(r, names):
    """The row's short name with its wait strategy (with_wait)."""
    return with_wait(names[r.name], r)


def _ranks(records, key, kind, ci_key=None):
    """Competition ranks with ties: a row whose interval (plots.interval) overlaps that of the first
    row of the current group takes the group's rank; ["1", "2=", "2=", "4"]."""
    ivs = [interval(r, key, kind, ci_key) or (key(r), key(r)) for r in records]
    ranks, lead = [], 0
    for i, iv in enumerate(ivs):
        lo, hi = ivs[lead]
        if i and not (iv[0] <= hi and lo <= iv[1]):
            lead = i
        ranks.append(lead + 1)
    counts = {k: ranks.count(k) for k in ranks}
    return [f"{k}=" if counts[k] > 1 else str(k) for k in ranks]


def _left_out(universe, pool, ranked, within):
    """What the ranking's rows do not show of the mechanisms of `universe` (what the question could
    have ranked: the suite's), grouped by why: ranked below them (with their rank), failed or
    skipped among the records the question chose from (`pool`, every status), or not measured as
    it asks (`within`)."""
    shown = {r.mechanism for r in ranked[:TOP]}
    below = {}
    for i, r in enumerate(ranked[TOP:], TOP + 1):
        below.setdefault(r.mechanism, i)
    groups = {}
    for mech in sorted({r.mechanism for r in universe} - shown):
        mine = [r for r in pool if r.mechanism == mech]
        bad = [r for r in mine if r.get("status") in ("failed", "skipped")]
        if mech in below:
            groups.setdefault(f"ranked below the top {TOP} (of {len(ranked)})", []).append(f"{mech} ({below[mech]})")
        elif bad:
            err = bad[0].get("error")
            groups.setdefault(bad[0].get("status"), []).append(mech + (f" ({err})" if err else ""))
        elif mine:
            groups.setdefault("no figure to rank by", []).append(mech)
        else:
            groups.setdefault(f"not measured {within}".rstrip(), []).append(mech)
    below_key = f"ranked below the top {TOP} (of {len(ranked)})"
    if below_key in groups:   # in rank order
        groups[below_key].sort(key=lambda t: int(t.rsplit("(", 1)[1].rstrip(")")))
    return [f"{why}: {', '.join(names)}" for why, names in groups.items()]


def _table(records, key, reverse, cells, question, ranked_by, columns, multi, kind=None, universe=(), pool=(),
           within="", ci_key=None):
    """`kind` ("time" or "rate", as plots.interval): how the figure moves with the repetitions' time
    per op, for the ties. `universe`, `pool`, `within`: for what was left out (_left_out)."""
    records = [r for r in records if is_number(key(r))]
    short = [r for r in records if SHORT_WINDOW in r.flags]
    records = [r for r in records if SHORT_WINDOW not in r.flags]
    if not records:
        return Answer(question=question, ranked_by=ranked_by, columns=["rank", "name"], rows=[],
                      left_out=[_short_left_out(short)]) if short else None
    records.sort(key=key, reverse=reverse)
    names = short_names(records)   # as the console and the suite tables name a row
    ranks = _ranks(records, key, kind, ci_key)
    rows = []
    for i, r in enumerate(records[:TOP]):
        row = {"rank": ranks[i], "name": _name(r, names), "full": r.name}
        if multi:
            row["run"] = r.source.tag or r.source.label
        row.update(cells(r))
        row.update(_cost(r))
        rows.append(row)
    cols = ["rank", "name"] + (["run"] if multi else []) + columns + ["CPUs busy", "spread"]
    left_out = _left_out(universe, pool, records, within) if universe else []
    return Answer(question=question, ranked_by=ranked_by, columns=cols, rows=rows, measured=_shared(records),
                  left_out=left_out + ([_short_left_out(short)] if short else []),
                  ties=any(r["rank"].endswith("=") for r in rows))


def _rate(v):
    if not is_number(v):
        return "—"
    for div, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{v / div:.3g}{unit}/s"
    return f"{v:.3g}/s"


def _where(placement) -> str:
    return {"same": "both sides on one CPU", "cross": "on two CPUs"}.get(placement, f"placement {placement}")


def _placement(r) -> str:
    return str(r.params.get("placement", ""))


def _small_message_latency(records, multi) -> list:
    """Round trips of small messages, one question per placement the run holds."""
    ok = [r for r in records if _ok(r) and (_size(r) or 0) <= SMALL and _size(r)]
    universe = [r for r in records if not r.is_rate]   # what the questions could rank
    small_all = [r for r in universe if _size(r) and _size(r) <= SMALL]
    rtt = [r for r in ok if r.params.get("pattern") in ("roundtrip", "pingpong")
           and r.get("latency_ns", "kind") == "rtt"]
    out = []
    for placement in sorted({_placement(r) for r in rtt}):
        rs = [r for r in rtt if _placement(r) == placement]
        out.append(_table(rs, lambda r: r.num("latency_ns", "p50"), False,
                          lambda r: {"RTT p50": fmt_time_ns(r.num("latency_ns", "p50")),
                                     "RTT p99": fmt_time_ns(r.num("latency_ns", "p99")),
                                     "CPU/round trip": fmt_time_ns(r.num("cpu", "per_op_ns"))},
                          f"Which transport for small messages at low latency, {_where(placement)}?",
                          "round-trip p50 (lowest first)", ["RTT p50", "RTT p99", "CPU/round trip"], multi,
                          kind="time", ci_key="p50_ns", universe=universe,
                          within=f"as a round trip at ≤ {SMALL} B, placement={placement}",
                          pool=[r for r in small_all if r.params.get("pattern") in ("roundtrip", "pingpong")
                                and _placement(r) == placement]))
    return out


def _small_message_rate(records, multi) -> list:
    """Small messages per second, the throughput pattern, one question per placement."""
    ok = [r for r in records if _ok(r) and (_size(r) or 0) <= SMALL and _size(r)]
    universe = [r for r in records if not r.is_rate]
    small_all = [r for r in universe if _size(r) and _size(r) <= SMALL]
    thr = [r for r in ok if r.params.get("pattern") == "throughput"]
    out = []
    for placement in sorted({_placement(r) for r in thr}):
        rs = [r for r in thr if _placement(r) == placement]
        out.append(_table(rs, lambda r: r.num("rates", "ops_per_s"), True,
                          lambda r: {"messages/s": _rate(r.num("rates", "ops_per_s")),
                                     "CPU/message": fmt_time_ns(r.num("cpu", "per_op_ns"))},
                          f"Which moves the most small messages per second, {_where(placement)}?",
                          "messages per second (highest first; the throughput pattern queues them, so its "
                          "latency is no round trip)", ["messages/s", "CPU/message"], multi,
                          kind="rate", universe=universe,
                          within=f"with pattern=throughput at ≤ {SMALL} B, placement={placement}",
                          pool=[r for r in small_all if r.params.get("pattern") == "throughput"
                                and _placement(r) == placement]))
    return out


def _largest_size_bandwidth(records, multi) -> list:
    """The largest size the run moved, in bytes per second."""
    sized = [r for r in records if _ok(r) and _size(r)]
    if not sized:
        return []
    top = max(_size(r) for r in sized)
    rs = [r for r in sized if _size(r) == top]
    return [_table(rs, lambda r: (r.num("bytes") or 0) / r.num("wall_s") if r.num("wall_s") else None, True,
                   lambda r: {"GiB/s": f"{(r.num('bytes') or 0) / r.num('wall_s') / 2**30:.2f}",
                              "CPU/op": fmt_time_ns(r.num("cpu", "per_op_ns"))},
                   f"Which moves {top // 1024 if top < 2**20 else top // 2**20} "
                   f"{'KiB' if top < 2**20 else 'MiB'} messages fastest?",
                   "bytes per second (highest first)", ["GiB/s", "CPU/op"], multi,
                   kind="rate", universe=records, within=f"at {top} B",
                   pool=[r for r in records if _size(r) == top])]


def _task_switch(records, multi) -> list:
    """One task yielding, the cost of a switch."""
    sw_all = [r for r in records if r.mechanism.startswith("switch_") and not r.mechanism.startswith("switch_many")]
    return [_table([r for r in sw_all if _ok(r)], lambda r: r.num("time_per_op_ns"), False,
                   lambda r: {"ns/switch": fmt_time_ns(r.num("time_per_op_ns"))},
                   "Which runtime switches tasks fastest?", "time per yield (lowest first)", ["ns/switch"], multi,
                   kind="time", universe=sw_all, pool=sw_all)]


# The questions, in the order the first screen asks them, by the names suites declare in their
# registry entry (mechanism.hpp `Suite::answers`): each builder is given those suites' records.
ANSWERS = {
    "small_message_latency": _small_message_latency,
    "small_message_rate": _small_message_rate,
    "largest_size_bandwidth": _largest_size_bandwidth,
    "task_switch": _task_switch,
}


def answers(records, registry, multi=False) -> list:
    out = []
    for name, build in ANSWERS.items():
        suites = set(registry.answers(name))
        mine = [r for r in records if r.suite in suites]
        if mine:
            out += [a for a in build(mine, multi) if a]
    return out
