"""The tables of a suite's page, as its registry entry declares them (mechanism.hpp `Suite::Table`:
id, title, `where`, figures, label, across, hide), built from two catalogs keyed by the names the
declarations use: WHERE (which records a table takes) and FIGURES (what a column shows). The
report names no suite: a suite whose registry entry declares tables gets them, whatever its name.

A name may carry arguments after colons ("latency:p99", "paced_latency:p99:raw"); a path argument
is dotted ("extra_number:bulk.GiB_per_s" reads extra.bulk.GiB_per_s)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .util import fmt_float, fmt_number, fmt_si, fmt_time_ns, is_number


@dataclass(frozen=True)
class Table:
    """One table of a page. Its rows are the suite's records that `where` accepts; the first
    column names the benchmark (`name`, under `label`); the parameters that vary follow; then one
    column per metric, or with `across`, one column per value of that parameter (and metric)."""

    id: str                      # the notes' section that goes under it
    title: str
    metrics: tuple               # (header, record -> text)
    where: Callable = lambda r: True
    label: str = "mechanism"
    name: Callable = lambda r: r.mechanism
    across: str | None = None
    hide: tuple = ()             # parameters a metric column shows already (rate: requested)


# --- the figures ---------------------------------------------------------------------------------

def _path(dotted):
    return tuple(dotted.split("."))


def _ratio(v):
    return f"{v:.2f}" if v is not None else "—"


def _rate(key="ops_per_s"):
    return lambda r: fmt_si(r.rate(key), "/s")


def _mb(r):
    b = r.rate("bytes_per_s")
    return fmt_number(b / 1e6 if b is not None else None)


# A libs record beside what it is fairly compared with (extra.baseline: a mechanism of the suite
# its registry entry names as `beside`, and the values of its own parameters, e.g. shm_spsc
# wait=futex for iceoryx; older records name only extra.kernel_transport), that suite's record of
# it at the same pattern, size, placement and mode in the same file (attach_baselines), and the
# ratio of their p50s.
BASELINE_DIMS = ("pattern", "size", "placement", "mode")


def _baseline_of(r):
    """(mechanism, {param: value}) the record `r` is set beside."""
    b = r.get("extra", "baseline")
    if isinstance(b, dict) and b.get("mechanism"):
        return b["mechanism"], b.get("params") or {}
    return r.get("extra", "kernel_transport"), {}


def attach_baselines(recs, registry):
    """Sets `baseline` on each record of a suite that the registry sets beside another: that
    suite's record of its baseline, or None."""
    beside = {s: registry.beside(s) for s in {r.suite for r in recs}}
    beside = {s: b for s, b in beside.items() if b}
    index = {}
    for r in recs:
        if r.suite in beside.values():
            index.setdefault((r.suite, r.mechanism) + tuple(r.dim(d) for d in BASELINE_DIMS), []).append(r)
    for r in recs:
        if r.suite in beside:
            mechanism, params = _baseline_of(r)
            key = (beside[r.suite], mechanism) + tuple(r.dim(d) for d in BASELINE_DIMS)
            r.baseline = next((m for m in index.get(key, []) if all(m.dim(k) == v for k, v in params.items())), None)


def _baseline_name(r):
    mechanism, params = _baseline_of(r)
    return " ".join([mechanism or "—"] + [f"{k}={v}" for k, v in sorted(params.items())])


# The roles of a record's daemon (a library's broker), charged apart in extra.cpu_by_role.
DAEMON_ROLES = ("roudi", "dbus-daemon")


def _daemon_cpu(r):
    v = [r.role_cpu(role) for role in DAEMON_ROLES if role in r.roles]
    return fmt_time_ns(sum(x for x in v if is_number(x))) if v else "—"


def _baseline_rate(r):
    b = getattr(r, "baseline", None)
    return fmt_si(b.rate("ops_per_s"), "/s") if b else "—"


def _rate_ratio(r):
    b = getattr(r, "baseline", None)
    mine, theirs = r.rate("ops_per_s"), b.rate("ops_per_s") if b else None
    return f"{mine / theirs:.2f}×" if is_number(mine) and is_number(theirs) and theirs > 0 else "—"


def _baseline_pct(p):
    return lambda r: fmt_time_ns(r.baseline.latency(p)) if getattr(r, "baseline", None) else "—"


def _overhead(p):
    def cell(r):
        b = getattr(r, "baseline", None)
        mine, theirs = r.latency(p), b.latency(p) if b else None
        return f"{mine / theirs:.2f}×" if is_number(mine) and is_number(theirs) and theirs > 0 else "—"
    return cell


# Open-loop records (pattern=rate) and capacity searches.

def _slo_bound(r):
    v = r.num("extra", "capacity", "slo_p99_us")
    return fmt_time_ns(v * 1e3) if v is not None else "—"


def _slo_basis(r):
    """How a capacity search's bound was set: given, or a multiple of the unloaded p99."""
    basis = r.get("extra", "capacity", "slo_basis")
    return basis if isinstance(basis, str) and basis else "—"


def _cpu_by_role(r):
    return ", ".join(f"{role} {fmt_time_ns(r.role_cpu(role))}" for role in r.roles) or "—"


def _saturated(r):
    if not r.saturated:
        return "no"
    reason = r.get("extra", "rate", "saturation")
    return f"yes: {reason}" if isinstance(reason, str) and reason else "yes"


def _capacity(r):
    v = r.num("extra", "capacity", "capacity_per_s")
    return "none met the bound" if v == 0 else fmt_si(v, "/s")


def _confirmed(r):
    return {True: "yes", False: "no"}.get(r.get("extra", "capacity", "confirmed"), "—")


def _trials(r):
    t = r.get("extra", "capacity", "trials")
    return str(len(t)) if isinstance(t, list) else "—"


def _extra_text(path):
    return lambda r: r.get("extra", *_path(path)) or "—"


FIGURES = {   # name -> (*arguments) -> (record -> cell text)
    "rate": _rate,                                                   # rates.KEY (ops_per_s), per second
    "rate_number": lambda key: lambda r: fmt_number(r.rate(key)),    # rates.KEY as a plain number
    "megabytes_per_s": lambda: _mb,                                  # rates.bytes_per_s in MB (10^6)
    "latency": lambda p: lambda r: fmt_time_ns(r.latency(p)),        # latency_ns.P
    "time": lambda: lambda r: fmt_time_ns(r.time_per_op_ns),
    "cpu": lambda: lambda r: fmt_time_ns(r.num("cpu", "per_op_ns")),
    "ctx": lambda: lambda r: _ratio(r.num("cpu", "ctx_per_op")),
    "faults": lambda: lambda r: fmt_number(r.num("cpu", "faults_per_op")),
    "extra_time": lambda path: lambda r: fmt_time_ns(r.num("extra", *_path(path))),
    "extra_number": lambda path: lambda r: fmt_number(r.num("extra", *_path(path))),
    "extra_fraction": lambda path: lambda r: fmt_float(r.num("extra", *_path(path)), 2),
    "extra_ratio": lambda path: lambda r: _ratio(r.num("extra", *_path(path))),
    "extra_text": _extra_text,
    "daemon_cpu": lambda: _daemon_cpu,
    "beside": lambda: _baseline_name,
    "beside_latency": _baseline_pct,
    "latency_over_beside": _overhead,
    "beside_rate": lambda: _baseline_rate,
    "rate_over_beside": lambda: _rate_ratio,
    "paced_rate": lambda key: lambda r: fmt_si(r.num("extra", "rate", key), "/s"),   # requested or achieved
    "paced_latency": lambda p, which="corrected": lambda r: fmt_time_ns(r.rate_latency(p, which)),
    "cpu_by_role": lambda: _cpu_by_role,
    "saturated": lambda: _saturated,
    "slo_bound": lambda: _slo_bound,
    "slo_basis": lambda: _slo_basis,
    "capacity": lambda: _capacity,
    "confirmed": lambda: _confirmed,
    "trials": lambda: _trials,
}


# --- which records -------------------------------------------------------------------------------

def _value(text):
    """A declared parameter value: a number where it reads as one (pairs=1 matches 1 and 1.0)."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _above(dim, v):
    return lambda r: is_number(r.dim(dim)) and r.dim(dim) > v


WHERE = {   # a name without "=" or ">": which records
    "": lambda r: True,
    "closed_loop": lambda r: not r.is_rate,
    "open_loop": lambda r: r.is_rate and not r.is_capacity,
    "capacity": lambda r: r.is_capacity,
}


def _prefix_of(mechanism, prefixes):
    """The longest of `prefixes` that `mechanism` starts with, then "_" (switch_many_go: switch_many)."""
    return max((p for p in prefixes if mechanism.startswith(p + "_")), key=len, default=None)


class DeclarationError(ValueError):
    """A registry entry's table that names no figure or selector of the catalogs."""


def _where(text, prefixes):
    """The record predicate and the row name a `where` declares: "param=value", "param>number",
    "prefix=P" (mechanisms P_* that no longer declared prefix takes, named by their rest), or a
    WHERE name."""
    if text.startswith("prefix="):
        p = text[len("prefix="):]
        return (lambda r: _prefix_of(r.mechanism, prefixes) == p), (lambda r: r.mechanism[len(p) + 1:])
    if "=" in text:
        dim, v = text.split("=", 1)
        v = _value(v)
        return (lambda r: r.dim(dim) == v), None
    if ">" in text:
        dim, v = text.split(">", 1)
        return _above(dim, _value(v)), None
    if text not in WHERE:
        raise DeclarationError(f"where {text!r}")
    return WHERE[text], None


def figure_of(spec: str):
    name, *args = spec.split(":")
    if name not in FIGURES:
        raise DeclarationError(f"figure {spec!r}")
    return FIGURES[name](*args)


def tables_of(declared) -> tuple:
    """The Tables a suite's registry entry declares (its `tables`, as `ipclab list --json` gives them)."""
    prefixes = [d["where"][len("prefix="):] for d in declared if d.get("where", "").startswith("prefix=")]
    out = []
    for d in declared:
        where, name = _where(d.get("where") or "", prefixes)
        kw = {"name": name} if name else {}
        out.append(Table(d["id"], d["title"], tuple((f["key"], figure_of(f["figure"])) for f in d["figures"]),
                         where=where, label=d.get("label") or "mechanism", across=d.get("across") or None,
                         hide=tuple(d.get("hide") or ()), **kw))
    return tuple(out)
