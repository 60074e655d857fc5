"""The result table every output shares, in the columns the registry defines (registry.py, from
the C++ columns() that the console and the Markdown file use): name, time/op, rate, p50, p99, CPU/op,
ctx/op, sys/op, status."""

from __future__ import annotations

from .registry import figure, size_text
from .util import fmt_si, fmt_time_ns, is_number


def row(r, cols, multi=False) -> dict:
    """Formatted cells for one summary record in the columns `cols` (the registry's); figures of
    failed/skipped records are not shown."""
    ok = r.ok
    reps = r.get("repetition")
    cells = {
        "run": r.source.tag or r.source.label,
        "error": r.error or (f"saturated: {r.get('extra', 'rate', 'saturation') or 'achieved rate short of the request'}"
                             if r.saturated else r.steal_note),
        "reps": reps if isinstance(reps, int) else None,
        "cv": r.num("spread", "cv"),
    }
    for c in cols:
        key = c["key"]
        cells[key] = (r.name if c["format"] == "name" else r.status if c["format"] == "status"
                      else figure(c, r) if ok else "—")
    return cells


def columns(cols, multi: bool):
    """The column keys of a suite's table (`cols`: the registry's columns), with the run's after
    the name when several files are compared."""
    keys = [c["key"] for c in cols]
    return (keys[:1] + ["run"] + keys[1:]) if multi else keys


def short_names(recs, registry=None, exclude=(), suite=True) -> dict:
    """Each record's name as the console shows it (output/names.cpp, the same rule): suite/mechanism
    and the parameters whose values differ among that mechanism's records here, sizes as ipclab
    reads them (1K) where the registry says which are sizes; the full name stays in the data and on
    hover. A plot leaves out the parameters its axes show (`exclude`) and the suite its section names."""
    by_mech = {}
    for r in recs:
        by_mech.setdefault((r.suite, r.mechanism), []).append(r)
    out = {}
    for (sname, mech), rs in by_mech.items():
        keys = list(dict.fromkeys(k for r in rs for k in r.params if k not in exclude))
        vary = [k for k in keys if len({str(r.params.get(k)) for r in rs}) > 1]

        def shown(k, v, sname=sname, mech=mech):
            return size_text(v) if registry and registry.param_type(sname, mech, k) == "size" else str(v)

        for r in rs:
            if not r.params and suite:  # a name without parameters in the record: keep it as it is
                out[r.name] = r.name
                continue
            out[r.name] = (f"{sname}/{mech}" if suite else mech) + "".join(
                f" {k}:{shown(k, r.params[k])}" for k in vary if k in r.params)
    return out


def suite_rows(recs, cols, registry, multi=False):
    """Rows sorted so that one benchmark's results from several files sit next to each other; each
    row's `name` short (short_names), its `full` name beside it."""
    order = {n: i for i, n in enumerate(dict.fromkeys(r.name for r in recs))}
    files = {f: i for i, f in enumerate(dict.fromkeys(r.source.label for r in recs))}
    recs = sorted(recs, key=lambda r: (order[r.name], files[r.source.label]))
    short = short_names(recs, registry)
    rows = []
    for r in recs:
        cells = row(r, cols, multi)
        cells["full"] = r.name
        cells["name"] = short.get(r.name, r.name)
        rows.append(cells)
    return rows


CAPACITY_COLUMNS = ["name", "SLO p99", "SLO basis", "capacity", "confirmed", "p99 at capacity", "trials"]


def _us(v):
    return fmt_time_ns(v * 1e3) if is_number(v) else "—"


def capacity_rows(recs, multi=False):
    """The capacity searches (rate=auto) of a suite: the highest rate whose corrected p99 met the
    bound, and each trial walked (`trials`: requested, achieved, p50/p99/p99.9, saturated, meets)."""
    out = []
    for r in recs:
        if not (r.ok and r.is_capacity):
            continue
        cap = r.num("extra", "capacity", "capacity_per_s")
        confirmed = r.get("extra", "capacity", "confirmed")
        trials = r.get("extra", "capacity", "trials")
        out.append({
            "name": r.name, "run": r.source.tag or r.source.label,
            "SLO p99": _us(r.num("extra", "capacity", "slo_p99_us")),
            "SLO basis": r.get("extra", "capacity", "slo_basis") or "—",
            "capacity": "none met the bound" if cap == 0 else fmt_si(cap, "/s"),
            "confirmed": {True: "yes", False: "no"}.get(confirmed, "—"),
            "p99 at capacity": fmt_time_ns(r.rate_latency("p99")) if cap else "—",
            "trials": [{"requested": fmt_si(t.get("requested_per_s"), "/s"),
                        "achieved": fmt_si(t.get("achieved_per_s"), "/s"),
                        "p50": _us(t.get("p50_us")), "p99": _us(t.get("p99_us")), "p99.9": _us(t.get("p999_us")),
                        "saturated": "yes" if t.get("saturated") else "no",
                        "meets SLO": "yes" if t.get("meets_slo") else "no"}
                       for t in trials if isinstance(t, dict)] if isinstance(trials, list) else [],
        })
    return out


def capacity_columns(multi: bool):
    return (["name", "run"] + CAPACITY_COLUMNS[1:]) if multi else CAPACITY_COLUMNS
