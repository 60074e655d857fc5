"""The plots a suite's readers expect, by the names the suite gives them in the registry (struct
Suite `plots`, `ipclab list --json`), and its scaling plots over the parameters it names (`scaling`).
A suite that names no plot or one this package does not know, and records that fit none of a
suite's plots (a parameter renamed, a new mechanism), get the generic time-per-op chart."""

from __future__ import annotations

import sys

from . import plots, topology
from .plots import (PALETTE, DASHES, bars, capacity_walk, cpu_heatmap, flagged_series, hashable, latency_cdf, record_bars,
                    slice_records, sweep, vs_load)
from .stats import median
from .util import fmt_memory, is_number

def _ops(r):
    return r.rate("ops_per_s")


def _mib(r):
    return r.rate("MiB_per_s")


def _mb(r):
    b = r.rate("bytes_per_s")
    return b / 1e6 if b is not None else None


def _cpu(r):
    return r.num("cpu", "per_op_ns")


def _server_cpu(key):
    """The server's own CPU per operation (servers, echo): the record's cpu is client + server."""
    def get(r):
        v = r.num("extra", key)
        return v if is_number(v) and v > 0 else None
    return get


def _fairness(r):
    f = r.get("extra", "fairness")
    if isinstance(f, dict):
        f = next((f[k] for k in ("ratio", "min_over_max", "value") if is_number(f.get(k))), None)
    return f if is_number(f) else None


# --- the plots a suite names in the registry (`plots`), one builder each: (records, multi) -> Plot --

def rate_vs_size(recs, multi):
    return sweep(recs, "size", _ops, title="Messages per second vs message size", multi=multi,
                 xlabel="message size", ylabel="messages/s", x_bytes=True, err="rate")


def bandwidth_vs_size(recs, multi):
    return sweep(recs, "size", _mib, title="Bandwidth vs message size", multi=multi,
                 xlabel="message size", ylabel="MiB/s", x_bytes=True, err="rate")


def roundtrip_cdf(recs, multi):
    """Latency as round trips where the run has them: the throughput pattern's latency is the time a
    message waits in a full queue, not how fast the transport answers."""
    rtt = [r for r in recs if r.params.get("pattern") in ("roundtrip", "pingpong")]
    return latency_cdf(rtt or recs, title="Round-trip latency CDF" if rtt else None, multi=multi,
                       limit=len(PALETTE) * len(DASHES))


def cpu_per_message(recs, multi):
    ok = [r for r in recs if r.ok and is_number(_cpu(r))]
    if not ok:
        return None
    sizes = {r.dim("size") for r in ok if r.dim("size") is not None}
    sl, fixed = slice_records(ok, keep=("mechanism", "size"))
    metrics = ({f"size {fmt_memory(s) if is_number(s) else s}": (lambda r, s=s: _cpu(r) if r.dim("size") == s else None)
                for s in sorted(sizes, key=lambda v: (not is_number(v), v))}
               if 1 < len(sizes) <= 6 and not multi else {"CPU/msg": _cpu})
    p = record_bars(sl, metrics, title="CPU time per message", xlabel="CPU (user+sys) per message",
                    multi=multi, time_axis=True, category=(lambda r: r.mechanism) if len(metrics) > 1 else None)
    if p:
        p.note = " ".join(x for x in (plots.fixed_note(fixed), p.note) if x)
    return p


def placement_rates(recs, multi):
    placed = [r for r in recs if r.ok and r.dim("placement") is not None and is_number(_ops(r))]
    layouts = list(dict.fromkeys(r.dim("placement") for r in placed))
    if len(layouts) < 2:
        return None
    sl, fixed = slice_records(placed, keep=("mechanism", "placement"))
    p = record_bars(sl, {f"placement {l}": (lambda r, l=l: _ops(r) if r.dim("placement") == l else None)
                         for l in layouts},
                    title="Same vs cross CPU placement", xlabel="messages/s", multi=multi,
                    category=lambda r: r.mechanism, err="rate")
    if p:
        p.note = " ".join(x for x in (plots.fixed_note(fixed), p.note) if x)
        p.used = {id(r) for r in placed}
    return p


def system_ops_vs_pairs(recs, multi):
    return sweep(recs, "pairs", lambda r: r.rate("system_effective_ops"), series="wait", multi=multi,
                 title="System effective OPS vs worker pairs", xlabel="worker pairs",
                 ylabel="round trips/s (all pairs)")


def fairness_vs_pairs(recs, multi):
    return sweep(recs, "pairs", _fairness, series="wait", multi=multi, y_fixed=(0, 1.05),
                 title="Fairness vs worker pairs", xlabel="worker pairs", ylabel="slowest / fastest pair (ratio)")


def latency_cdf_by_wait(recs, multi):
    return latency_cdf(recs, series="wait", multi=multi)


def session_outcomes(recs, multi):
    counters = {k: (lambda r, k=k: r.num("extra", k)) for k in ("processed", "rejected", "lost")}
    return record_bars(recs, counters, title="Sessions processed / rejected / lost per server model",
                       xlabel="sessions", multi=multi)


def session_latency_percentiles(recs, multi):
    pct = {p: (lambda r, p=p: r.latency(p)) for p in ("p50", "p90", "p99", "p999")}
    return record_bars(recs, pct, title="Session latency percentiles per server model",
                       xlabel="session latency (time from a session's start to its end)", multi=multi,
                       time_axis=True, log=True)


def server_cpu_per_session(recs, multi):
    return record_bars(recs, {"server": _server_cpu("server_cpu_per_session_ns")},
                       title="Server CPU per session per server model",
                       xlabel="server CPU per session (load generator excluded)", multi=multi, time_axis=True)


def echo_rate_vs_connections(recs, multi):
    return sweep(recs, "connections", _ops, title="Echo throughput vs connections", multi=multi,
                 xlabel="concurrent connections", ylabel="echoes/s", err="rate")


def cpu_per_echo_vs_connections(recs, multi):
    return sweep(recs, "connections", _cpu, title="CPU per echo vs connections", multi=multi,
                 xlabel="concurrent connections", ylabel="CPU (client + server) per echo", y_time=True)


def server_cpu_per_echo_vs_connections(recs, multi):
    return sweep(recs, "connections", _server_cpu("server_cpu_per_echo_ns"),
                 title="Server CPU per echo vs connections", multi=multi,
                 xlabel="concurrent connections", ylabel="server CPU per echo", y_time=True)


# Why one operation's runtimes differ by orders of magnitude, said under the panels when they do.
TIMER_NOTE = ("timer panels: a delay_us:0 sleep may complete without waiting at all (tens of ns); a "
              "delay_us:1 sleep waits for the runtime's timer, and a runtime whose timer fires on a coarse "
              "tick (the peers' timer wheels, or a poller that waits in whole milliseconds) rounds it up to "
              "that tick, near 1 ms. The gap between runtimes there is the timer's resolution, not the cost "
              "of a switch.")


def time_per_operation_panels(recs, multi):
    p = plots.by_operation(recs, lambda r: r.time_per_op_ns, title="Time per operation by operation and runtime",
                           xlabel="time per operation (shorter is better)", multi=multi)
    timers = [r.time_per_op_ns for r in recs if r.ok and r.mechanism.startswith("timer_")
              and is_number(r.time_per_op_ns) and r.time_per_op_ns > 0]
    if p and timers and max(timers) / min(timers) >= 100:
        p.note = f"{p.note} {TIMER_NOTE}"
    return p


def iops_vs_queue_depth(recs, multi):
    return sweep(recs, "qd", _ops, title="IOPS vs queue depth per engine", multi=multi,
                 xlabel="queue depth", ylabel="IOs/s")


def throughput_vs_queue_depth(recs, multi):
    return sweep(recs, "qd", _mb, title="Throughput vs queue depth per engine", multi=multi,
                 xlabel="queue depth", ylabel="MB/s (10⁶ B/s)")


def wall_and_cpu_per_iteration(recs, multi):
    return record_bars(recs, {"wall": lambda r: r.time_per_op_ns, "CPU (user+sys)": _cpu},
                       title="Wall and CPU time per iteration per variant", multi=multi,
                       xlabel="time per iteration (1000 tasks)", time_axis=True, err="time")


def _bulk_throughput(recs):
    """The throughput pattern's records: one side streams to the other."""
    return [r for r in recs if r.dim("pattern") != "roundtrip"]


def bulk_gib_s_vs_size(recs, multi):
    return sweep(_bulk_throughput(recs), "size", plots.bulk_gib_s, title="Bulk throughput: GiB/s vs size",
                 multi=multi, x_bytes=True, xlabel="message size", ylabel="GiB/s (higher is better)")


def bulk_cpu_per_mib_vs_size(recs, multi):
    return sweep(_bulk_throughput(recs), "size", plots.bulk_cpu_per_mib_ns, title="Bulk CPU per MiB moved vs size",
                 multi=multi, x_bytes=True, y_time=True, xlabel="message size",
                 ylabel="CPU (user+sys, both sides) per MiB")


def bulk_roundtrip_vs_size(recs, multi):
    return sweep([r for r in recs if r.dim("pattern") == "roundtrip"], "size", lambda r: r.time_per_op_ns,
                 title="Bulk round trip vs size", multi=multi, x_bytes=True, y_time=True,
                 xlabel="message size", ylabel="time per round trip")


# The builders by the names suites give them in the registry (struct Suite `plots`).
PLOTS = {f.__name__: f for f in (
    rate_vs_size, bandwidth_vs_size, roundtrip_cdf, cpu_per_message, placement_rates,
    system_ops_vs_pairs, fairness_vs_pairs, latency_cdf_by_wait,
    session_outcomes, session_latency_percentiles, server_cpu_per_session,
    echo_rate_vs_connections, cpu_per_echo_vs_connections, server_cpu_per_echo_vs_connections,
    time_per_operation_panels, iops_vs_queue_depth, throughput_vs_queue_depth, wall_and_cpu_per_iteration,
    bulk_gib_s_vs_size, bulk_cpu_per_mib_vs_size, bulk_roundtrip_vs_size)}


def generic(recs, multi, title="Time per operation"):
    return record_bars(recs, {"time/op": lambda r: r.time_per_op_ns}, title=title, multi=multi,
                       xlabel="time per operation", time_axis=True, err="time")


def open_loop(recs, multi):
    """Any suite's open-loop records (pattern=rate): latency and CPU per operation against the
    achieved rate, and the trials of the capacity searches."""
    pct = (("p50", "p50"), ("p99", "p99"), ("p99.9", "p999"))
    panels = {f"{which} ({origin})": {label: (lambda r, p=p, w=which: r.rate_latency(p, w)) for label, p in pct}
              for which, origin in (("corrected", "from the intended send time"),
                                    ("raw", "from the actual send time"))}
    roles = list(dict.fromkeys(role for r in recs if r.is_rate for role in r.roles))
    cpu = {"total": _cpu} | {role: (lambda r, role=role: r.role_cpu(role)) for role in roles}
    return [
        vs_load(recs, panels, title="Latency vs load", ylabel="latency", multi=multi),
        vs_load(recs, {"": cpu}, title="CPU per operation vs load", ylabel="CPU (user+sys) per operation",
                multi=multi),
        capacity_walk(recs, multi=multi),
    ]


# --- scaling: rate and CPU per operation against the number of workers -----------------------------

# The dimensions a suite scales over are the registry's (`scaling`): a plot for each that takes two
# values or more, its axis labelled as here (else by the parameter's name).
SCALING_LABEL = {"pairs": "worker pairs", "producers": "producers (and their consumers)",
                 "threads": "server threads", "reactors": "reactors (one per core)"}
# The threads one unit of a dimension keeps busy: a pair two, a producer one and its consumer one.
THREADS_PER = {"pairs": 2, "producers": 2}


def cpu_marks(recs, dim, multi):
    """(x, label) where the workers of `dim` fill the CPUs each file's run could use (cpu.allowed,
    else logical_cpus): at the CPU count over the threads per unit (a pair is two)."""
    counts = {}
    for r in recs:
        if r.source.cpu_count:
            counts.setdefault(r.source.cpu_count, []).append(r.source.tag or r.source.label)
    per = THREADS_PER.get(dim, 1)
    return [(n / per, f"{n} CPUs" + (f" ({', '.join(dict.fromkeys(tags))})" if multi and len(counts) > 1 else ""))
            for n, tags in sorted(counts.items())]


def scaling(recs, dims, multi):
    """Per scaling dimension of `dims`: operations per second and CPU per operation against it (log2),
    one line per mechanism and what else varies, a dotted line where the workers fill the CPUs."""
    out = []
    for d in dims:
        marks = cpu_marks(recs, d, multi)
        p = sweep(recs, d, panels=[("operations per second", _ops, "operations/s", False),
                                   ("CPU per operation", _cpu, "CPU (user+sys) per operation", True)],
                  title=f"Scaling with {SCALING_LABEL.get(d, d)}", xlabel=SCALING_LABEL.get(d, d),
                  multi=multi, x_log2=True, marks=marks)
        if p and marks:
            per = THREADS_PER.get(d, 1)
            p.note = " ".join(x for x in (p.note, (
                "Dotted line: where the workers fill the CPUs the run could use" +
                (f" ({per} threads each)" if per > 1 else "") + "; to its right they outnumber them.")) if x)
        out.append(p)
    return out


# --- CPU matrices (`ipclab run --cpu-matrix`): one run of a benchmark per CPU pair ----------------

def _matrix_value(recs):
    """(getter, what) of one benchmark's matrix: its p50 latency when every point has one (a round
    trip, for the two-sided benchmarks a matrix runs), else its time per operation."""
    if recs and all(r.latency("p50") is not None for r in recs):
        kinds = {r.get("latency_ns", "kind") for r in recs}
        kind = kinds.pop() if len(kinds) == 1 else None
        return (lambda r: r.latency("p50")), {"rtt": "p50 round trip", "one_way": "p50 one-way latency"}.get(
            kind, "p50 latency")
    return (lambda r: r.time_per_op_ns), "time per operation"


def _matrix_bench(r):
    """What the points of one matrix share: the file, the benchmark but its CPUs, and the matrix kind."""
    return (r.source.label, r.suite, r.mechanism, r.get("extra", "cpu_matrix") == "per_class",
            tuple(sorted((k, hashable(v)) for k, v in r.params.items() if k != "cpus")))


def _matrix_label(r, multi):
    name = "/".join(p for p in r.short_name.split("/") if not p.startswith(("cpus=", "cpus:")))
    return name + (f" · {r.source.tag}" if multi else "")


def _unmeasured(recs) -> str:
    """The note naming the points of a matrix that gave no figure."""
    lost = [r for r in recs if not r.ok or r.cpu_pair is None]
    if not lost:
        return ""
    return "Not in the plot: " + "; ".join(
        (f"CPUs {r.cpu_pair[0]},{r.cpu_pair[1]}" if r.cpu_pair else f"{r.short_name} (names no CPU pair)") +
        (f" ({r.status}{': ' + r.error if r.error else ''})" if not r.ok else "") for r in lost[:8]) + (
        f"; and {len(lost) - 8} more" if len(lost) > 8 else "") + "."


def matrix_heatmap(recs, multi):
    """One benchmark run on every pair of CPUs: its figure per pair as a heatmap (row: the first
    side's CPU), beside the file's cache-line round trip over the same CPUs when it has one."""
    ok = [r for r in recs if r.ok and r.cpu_pair]
    get, what = _matrix_value(ok)
    cells = {r.cpu_pair: get(r) for r in ok if is_number(get(r))}
    for (a, b), v in list(cells.items()):
        cells.setdefault((b, a), v)   # a pair run one way round stands for both
    if not cells:
        return None
    rf = recs[0].source
    order, bounds = topology.layout({c for pair in cells for c in pair}, topology.read_cpus(rf.topology))
    panels = [("this benchmark", cells, what)]
    c2c = topology.read(rf.topology)
    if c2c:
        panels.insert(0, ("cache-line round trip (ipclab topo)", topology.cells(c2c), "cache-line round trip"))
    note = ("Row: the first side's CPU, column: the second's; a pair run one way round is shown both ways. " +
            _unmeasured(recs))
    return cpu_heatmap(order, panels, title=f"{_matrix_label(recs[0], multi)}: {what} per CPU pair",
                       bounds=bounds, note=note.strip(), used={id(r) for r in ok if r.cpu_pair in cells})


def _cpu_class(r):
    """The placement class of a per-class point: extra.cpu_class, else the relation sysfs gives its CPUs."""
    cls = r.get("extra", "cpu_class")
    if isinstance(cls, str) and cls:
        return cls
    a, b = r.cpu_pair
    cpus = topology.read_cpus(r.source.topology)
    return topology.relation(cpus.get(a), cpus.get(b)) or "unknown class"


def class_bars(groups, multi):
    """Benchmarks run on one pair of CPUs per placement class: a bar per benchmark and class (a few
    pairs make a sparse heatmap), the classes closest first."""
    series, used, whats, lost = {}, set(), set(), []
    cats = {}
    for recs in groups:
        ok = [r for r in recs if r.ok and r.cpu_pair]
        lost += [r for r in recs if not (r.ok and r.cpu_pair)]
        get, what = _matrix_value(ok)
        vals = {}
        for r in ok:
            if is_number(get(r)):
                cls = _cpu_class(r)
                cat = f"{cls} · CPUs {r.cpu_pair[0]},{r.cpu_pair[1]}"
                cats[cat] = (topology.RELATIONS.index(cls) if cls in topology.RELATIONS else len(topology.RELATIONS),
                             cls, r.cpu_pair)
                vals.setdefault(cat, []).append(get(r))
                used.add(id(r))
        if vals:
            whats.add(what)
            series[_matrix_label(recs[0], multi)] = vals
    if not series:
        return None
    order = sorted(cats, key=lambda c: cats[c])
    what = whats.pop() if len(whats) == 1 else "p50 latency, or time per operation"
    # one benchmark has no legend: its name is in the title
    title = (f"{next(iter(series))}: " if len(series) == 1 else "") + f"{what} per CPU placement class"
    return bars(order, {k: [median(v.get(c, [])) for c in order] for k, v in series.items()},
                title=title, xlabel=what, time_axis=True, used=used, note=_unmeasured(lost))


def cpu_matrix(recs, multi):
    """The CPU-matrix records of a suite: a heatmap per benchmark run on every pair, bars for those
    run on a pair per class."""
    groups = {}
    for r in recs:
        groups.setdefault(_matrix_bench(r), []).append(r)
    out = [matrix_heatmap(g, multi) for k, g in groups.items() if not k[3]]
    per_class = [g for k, g in groups.items() if k[3]]
    if per_class:
        out.append(class_bars(per_class, multi))
    return out


_warned = set()   # the unknown plot names warned about: each once


def _warn(text):
    print(f"ipclab report: warning: {text}", file=sys.stderr)


def named_builders(suite, names) -> list:
    """(name, builder) of each plot name the suite gives that this package knows; an unknown one is
    warned about once and left out (its records fall to the generic chart)."""
    for n in names:
        if n not in PLOTS and n not in _warned:
            _warned.add(n)
            _warn(f"{suite} names a plot the report does not know ({n!r}); using the generic chart")
    return [(n, PLOTS[n]) for n in names if n in PLOTS]


def _built(suite, what, build, recs, multi) -> list:
    """The plots `build` draws of `recs` (one or a list); none, with a warning, when it fails: a plot
    must never take the whole report down."""
    try:
        got = build(recs, multi)
    except MemoryError:
        raise  # not a plot's failure: the report's (cli.run says so in one line)
    except Exception as e:
        _warn(f"{suite} {what} failed ({e!r}); not drawn")
        return []
    return [p for p in (got if isinstance(got, list) else [got]) if p is not None]


def suite_plots(suite, recs, multi, names=(), dims=()):
    """Plots for one suite's summary records (all files): the plots it names (`names`, the registry's
    `plots`), its scaling plots over `dims` (`scaling`), then those every suite has; never raises on
    odd data. CPU-matrix and open-loop records have plots of their own in every suite; the suite's
    plots, and its scaling plots, get the rest."""
    matrix = [r for r in recs if r.is_cpu_matrix]
    rate = [r for r in recs if r.is_rate and not r.is_cpu_matrix]
    closed = [r for r in recs if not r.is_rate and not r.is_cpu_matrix]
    parts = [(f"plot {n}", build, closed) for n, build in named_builders(suite, names)] + [
        ("scaling plots", lambda rs, m: scaling(rs, dims, m), closed),
        ("CPU-matrix plots", cpu_matrix, matrix), ("open-loop plots", open_loop, rate)]
    out = []
    for what, build, part in parts:
        if part:
            out += _built(suite, what, build, part, multi)
    used = set().union(*(p.used for p in out)) if out else set()
    rest = [r for r in recs if r.ok and id(r) not in used]
    if rest:
        title = "Time per operation" if not out else "Time per operation (benchmarks not in the plots above)"
        out += _built(suite, "generic chart", lambda rs, m: generic(rs, m, title=title), rest, multi)
    return out + _built(suite, "time series", lambda rs, m: flagged_series(rs, multi=m), recs, multi)
