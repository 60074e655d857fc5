"""Plot primitives over summary records: sweeps (metric vs parameter), latency CDFs, bar charts.

Each returns a Plot (an SVG data URI plus a note saying which slice of the grid it shows) or None
when the records do not fit, so that the caller can fall back to the generic chart.
"""

from __future__ import annotations

import base64
import io
import math
from collections import Counter
from dataclasses import dataclass, field

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter  # noqa: E402

from .stats import histogram_cdf, median  # noqa: E402
from .tables import short_names  # noqa: E402
from .util import fmt_bytes_param, fmt_memory, fmt_si, fmt_time_ns, is_number  # noqa: E402

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#17becf", "#7f7f7f", "#bcbd22", "#393b79", "#637939", "#843c39", "#7b4173"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p", "d", "8"]
DASHES = ["-", "--", ":", "-."]
MAX_SERIES = 10
MAX_BARS = 60       # groups of one bar chart: its height is capped, so more would not be legible


def style(i):
    """(colour, marker) of the i-th series: no two alike — past the palette the colours come round
    again with the markers moved on by one (the 15th series is no second blue circle)."""
    return PALETTE[i % len(PALETTE)], MARKERS[(i + i // len(PALETTE)) % len(MARKERS)]

plt.rcParams.update({
    "font.family": "DejaVu Sans", "font.size": 9.5, "axes.titlesize": 11.5,
    "axes.titleweight": "bold", "axes.labelsize": 9.5, "axes.spines.top": False,
    "axes.spines.right": False, "axes.grid": True, "grid.color": "#e3e6ea", "grid.linewidth": 0.8,
    "axes.edgecolor": "#8a939e", "axes.axisbelow": True, "legend.fontsize": 8.5,
    "legend.frameon": False, "svg.hashsalt": "ipclab", "svg.fonttype": "path",
})


@dataclass
class Plot:
    title: str
    uri: str
    note: str = ""
    used: set = field(default_factory=set)   # id() of the records the plot applies to
    collapsed: str = ""   # the summary line it is folded behind (a <details>), when it is not shown open


def _pair(v):
    return v if isinstance(v, list) and len(v) == 2 and all(is_number(x) and x > 0 for x in v) else None


def interval(r, get, kind, ci_key=None):
    """(low, high) of `get(r)`: the record's own 95% confidence interval of it where it has one
    (`ci[ci_key]`: p50_ns, p99_ns), else that of its time per op (`ci.time_per_op_ns`, the harness's
    bootstrap over 3 repetitions or more), else the lowest to the highest repetition
    (`spread.values`), moved to the figure: a time (`kind` "time") moves with the time per op, a
    rate ("rate") against it. None without either."""
    v = get(r)
    if not is_number(v):
        return None
    own = _pair(r.get("ci", ci_key)) if ci_key else None
    if own:
        return tuple(own)
    mid = r.time_per_op_ns
    if kind not in ("time", "rate") or not is_number(mid) or not mid:
        return None
    ci = _pair(r.get("ci", "time_per_op_ns"))
    vals = [x for x in (r.get("spread", "values") or []) if is_number(x) and x > 0] \
        if isinstance(r.get("spread", "values"), list) else []
    if ci:
        lo, hi = ci[0] / mid, ci[1] / mid
    elif len(vals) >= 2:
        lo, hi = min(vals) / mid, max(vals) / mid
    else:
        return None
    return (v * lo, v * hi) if kind == "time" else (v / hi, v / lo)


ERROR_NOTE = ("Error bars: the 95% confidence interval of the median (bootstrapped by the harness, 3 repetitions "
              "or more), else the lowest to the highest repetition.")


def _svg_uri(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    plt.close(fig)
    return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


# --- choosing what to draw -----------------------------------------------------------------------

def dims_of(records):
    keys = ["mechanism"]
    for r in records:
        for k in r.params:
            if k not in keys:
                keys.append(k)
    return keys


def hashable(v):
    return v if isinstance(v, (str, int, float, bool, type(None))) else repr(v)


def varying(records, exclude=()):
    """Dimensions (params and mechanism) that take more than one value across `records`."""
    return [d for d in dims_of(records)
            if d not in exclude and len({hashable(r.dim(d)) for r in records}) > 1]


def slice_records(records, keep):
    """Fix every varying dimension not in `keep` at its most common value (ties: first seen).

    Returns (records, {dim: value}) so that the plot can say which slice of the grid it shows.
    A parameter that only some records have (a ring's `wait`, a queue's `queue_depth`) is fixed
    among the records that have it, and separately per mechanism when mechanisms are kept (each
    at its own most common value: `posix_mq`'s queue depth is not a ring's); the records without
    it stay. Otherwise fixing it would drop every mechanism that has it.
    """
    def mode(values):
        counts = Counter(values)
        best = max(counts.values())
        return next(v for v in values if counts[v] == best)

    fixed = {}
    for d in varying(records, exclude=keep):
        having = [r for r in records if r.dim(d) is not None]
        if not having:
            continue
        if len(having) == len(records) or "mechanism" not in keep:
            value = mode([hashable(r.dim(d)) for r in having])
            fixed[d] = value
            records = [r for r in records if r.dim(d) is None or hashable(r.dim(d)) == value]
            continue
        chosen = {}
        for r in having:
            chosen.setdefault(r.mechanism, []).append(hashable(r.dim(d)))
        chosen = {m: mode(vs) for m, vs in chosen.items()}
        values = list(dict.fromkeys(chosen.values()))
        fixed[d] = values[0] if len(values) == 1 else "/".join(map(str, values)) + " (by mechanism)"
        records = [r for r in records if r.dim(d) is None or hashable(r.dim(d)) == chosen[r.mechanism]]
    return records, fixed


def fixed_note(fixed) -> str:
    if not fixed:
        return ""
    return "Other parameters fixed at their most common value: " + ", ".join(
        f"{k}={v}" for k, v in fixed.items()) + " (all points are in the table)."


def series_label(r, dims, multi):
    parts = [str(r.dim(dims[0]))] + [f"{d}={r.dim(d)}" for d in dims[1:] if r.dim(d) is not None]
    label = ", ".join(parts)
    return f"{label} · {r.source.tag}" if multi else label


def _tick_label(v):
    if is_number(v) and v == int(v) and int(v) >= 1024:
        return fmt_bytes_param(v)
    return f"{v:g}" if is_number(v) else str(v)


def _time_axis(axis):
    axis.set_major_formatter(FuncFormatter(lambda v, _: fmt_time_ns(v).replace(" ", "\u2009")))


def _si_axis(axis):
    axis.set_major_formatter(FuncFormatter(lambda v, _: fmt_si(v).replace(" ", "\u2009")))


def _spans(values, ratio):
    pos = [v for v in values if is_number(v) and v > 0]
    return len(pos) == len(values) and pos and max(pos) / min(pos) >= ratio


def _log_y(ax, ys):
    """A log y axis; under three decades of `ys` labelled at 1, 2 and 5 of each, the minor ticks
    unlabelled (matplotlib would label them too on a short range)."""
    ax.set_yscale("log")
    if max(ys) / min(ys) < 1000:
        ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _legend(fig, axes, n):
    seen = {}
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(lab, h)
    if not seen:
        return
    handles, labels = list(seen.values()), list(seen.keys())
    if n <= 4:
        axes[-1].legend(handles, labels, loc="best")
    else:
        fig.legend(handles, labels, loc="outside right upper")


# --- sweeps --------------------------------------------------------------------------------------

@dataclass
class _Lines:
    """How sweep splits its records: the panel dimension (`facet`), the dimensions beyond `series`
    that split lines (`others`), those held at their mode (`fixed`), and the lines themselves."""
    recs: list
    series: str
    facet: str | None
    others: list
    fixed: dict
    lines: dict      # key -> the line's records

    def key(self, r, multi):
        return (r.source.label if multi else "", hashable(r.dim(self.series))) + tuple(
            hashable(r.dim(d)) for d in self.others)


def _sweep_lines(recs, x, series, multi, one_panel) -> _Lines:
    """A string dimension with 2-4 values becomes the panels (with one panel's metric); the other
    varying dimensions split lines, unless they only change with the panel or follow x; with more
    than MAX_SERIES lines per panel, all but x, series and the panel are fixed at their mode."""
    others = varying(recs, exclude=(x, series))
    facet = next((d for d in sorted(others, key=lambda d: d != "placement")
                  if all(isinstance(r.dim(d), str) for r in recs)
                  and 2 <= len({r.dim(d) for r in recs}) <= 4), None) if one_panel else None
    # A dimension that only changes together with the panel (bs with pattern) splits no line.
    others = [d for d in others if d != facet and any(
        len({hashable(r.dim(d)) for r in recs if r.dim(facet) == fv}) > 1
        for fv in ({r.dim(facet) for r in recs} if facet else {None}))]
    # Nor does one that follows x (consumers with producers): it is kept wherever x is.
    follows = [d for d in others if len({(r.dim(x), hashable(r.dim(d))) for r in recs}) == len({r.dim(x) for r in recs})]
    out = _Lines(recs, series, facet, [d for d in others if d not in follows], {}, {})
    per_facet = Counter((hashable(r.dim(facet)) if facet else None, out.key(r, multi)) for r in recs)
    if len(per_facet) / max(1, len({k[0] for k in per_facet})) > MAX_SERIES:
        out.recs, out.fixed = slice_records(recs, keep=(x, series, facet, *follows))
        out.others = []
    for r in out.recs:   # each line's records, grouped in one pass
        out.lines.setdefault(out.key(r, multi), []).append(r)
    return out


def _error_bars(ax, line, x, xs, ys, get, err, color) -> bool:
    """Error bars over the repetitions where a point of the line is one record with a spread
    (`err`: "time" or "rate", as `interval`); whether any was drawn."""
    at = {}
    for r in line:
        at.setdefault(r.dim(x), []).append(r)
    ivs = [(v, y, interval(at[v][0], get, err)) for v, y in zip(xs, ys) if len(at.get(v, ())) == 1]
    ivs = [(v, y, iv) for v, y, iv in ivs if iv]
    if ivs:
        ax.errorbar([v for v, _, _ in ivs], [y for _, y, _ in ivs],
                    yerr=[[max(0, y - iv[0]) for _, y, iv in ivs], [max(0, iv[1] - y) for _, y, iv in ivs]],
                    fmt="none", ecolor=color, elinewidth=1, capsize=0, alpha=0.8)
    return bool(ivs)


def _sweep_x_axis(ax, xs_all, x_log2, x_bytes, marks):
    """A log2 axis at the powers of two (x_log2), or at the points where x is a size or spans 8x;
    the dotted marks that fall within the points."""
    tick = (lambda v: fmt_memory(v).replace(" ", "\u2009")) if x_bytes else _tick_label
    if x_log2 and xs_all[0] > 0:
        ax.set_xscale("log", base=2)
        lo, hi = math.floor(math.log2(xs_all[0])), math.ceil(math.log2(xs_all[-1]))
        ticks = [2 ** e for e in range(lo, hi + 1)]
        ax.set_xticks(ticks, [tick(v) for v in ticks])
        ax.xaxis.set_minor_formatter(NullFormatter())
    elif (x_bytes and xs_all[0] > 0) or _spans(xs_all, 8):
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs_all, [tick(v) for v in xs_all])
        ax.xaxis.set_minor_formatter(NullFormatter())
    for mx, mlabel in marks:
        if xs_all[0] <= mx <= xs_all[-1]:
            ax.axvline(mx, color="#555", linestyle=":", linewidth=1.3)
            ax.text(mx, 0.98, mlabel, transform=ax.get_xaxis_transform(), fontsize=8, color="#555",
                    va="top", ha="center", bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.5})


def _sweep_y_axes(axes, columns, ys_of, panels, y_min_zero, y_fixed):
    """Each panel's y scale (shared when they show one metric): log where the values span 50x,
    else from zero or `y_fixed`; time or SI ticks; the labels."""
    if len(panels) == 1:  # one metric: the panels share the y axis and its scale
        ys_of = {ax: [y for ys in ys_of.values() for y in ys] for ax in axes}
    for ax, (_, (_, _, plabel, ptime)) in zip(axes, columns):
        ys = ys_of[ax]
        log_y = bool(ys) and _spans(ys, 50) and not y_min_zero
        if log_y:
            _log_y(ax, ys)
        elif y_fixed:
            ax.set_ylim(*y_fixed)
        else:
            ax.set_ylim(bottom=0)
        (_time_axis if ptime else _si_axis)(ax.yaxis)
        if len(panels) > 1:
            ax.set_ylabel(plabel)
    if len(panels) == 1:
        axes[0].set_ylabel(panels[0][2])


def sweep(records, x, metric=None, *, title, xlabel, ylabel="", series="mechanism", multi=False,
          y_time=False, y_min_zero=False, y_fixed=None, panels=None, x_log2=False, x_bytes=False, marks=(),
          err=None):
    """Metric vs numeric parameter `x`, one line per `series` value (plus whatever else varies).

    A string dimension with 2-4 values (e.g. placement) becomes side-by-side panels; when there
    would still be more than MAX_SERIES lines, the remaining dimensions are fixed at their mode.
    `panels`, in place of `metric`: several metrics side by side, [(panel title, getter, ylabel,
    y_time)], each panel with its own y axis (the string dimension is then a dimension like any
    other). `x_log2`: a log2 x axis labelled at the powers of two, whatever the span. `marks`:
    (x, label) dotted vertical lines, drawn where they fall within the points. `x_bytes`: x is a
    size in bytes, its ticks written as sizes (4 KiB, 16 MiB). `err` ("time" or "rate", as
    `interval`): error bars over the repetitions where a point is one record with a spread.
    """
    panels = panels or [(None, metric, ylabel, y_time)]
    recs = [r for r in records if r.ok and is_number(r.dim(x)) and any(is_number(g(r)) for _, g, _, _ in panels)]
    if len({r.dim(x) for r in recs}) < 2:
        return None
    used = {id(r) for r in recs}
    if series != "mechanism" and all(r.dim(series) is None for r in recs):
        series = "mechanism"
    split = _sweep_lines(recs, x, series, multi, len(panels) == 1)
    facet, lines = split.facet, split.lines
    facets = list(dict.fromkeys(r.dim(facet) for r in split.recs)) if facet else [None]
    keys = list(lines)
    # One colour per line of the grid; with several files the file is the dash pattern.
    bases = list(dict.fromkeys(k[1:] for k in keys))
    tags = list(dict.fromkeys(k[0] for k in keys))
    looks = {k: style(bases.index(k[1:])) + (DASHES[tags.index(k[0]) % len(DASHES)],) for k in keys}
    columns = [(fv, panel) for fv in facets for panel in panels]  # facets or panels: one of them is one
    fig, axes = plt.subplots(1, len(columns), figsize=(9.2 if len(keys) > 4 or len(panels) > 1 else 8.2, 3.5),
                             sharey=len(panels) == 1, squeeze=False, layout="constrained")
    axes = list(axes[0])
    xs_all = sorted({r.dim(x) for r in split.recs})
    ys_of = {}
    drew_err = False
    for ax, (fv, (ptitle, get, _, _)) in zip(axes, columns):
        ys_of[ax] = []
        for k in keys:
            mine = [r for r in lines[k] if facet is None or r.dim(facet) == fv]
            pts = {}
            for r in mine:
                if is_number(get(r)):
                    pts.setdefault(r.dim(x), []).append(get(r))
            if not pts:
                continue
            xs = sorted(pts)
            ys = [median(pts[v]) for v in xs]
            ys_of[ax] += ys
            color, marker, dash = looks[k]
            ax.plot(xs, ys, marker=marker, color=color, linestyle=dash,
                    label=series_label(lines[k][0], [series] + split.others, multi), linewidth=1.6, markersize=4.5)
            if err:
                drew_err |= _error_bars(ax, mine, x, xs, ys, get, err, color)
        if facet or ptitle:
            ax.set_title(f"{facet} = {fv}" if facet else ptitle, fontsize=9.5, fontweight="normal")
        _sweep_x_axis(ax, xs_all, x_log2, x_bytes, marks)
        ax.set_xlabel(xlabel)
    _sweep_y_axes(axes, columns, ys_of, panels, y_min_zero, y_fixed)
    fig.suptitle(title, fontweight="bold", fontsize=11.5)
    _legend(fig, axes, len(keys))
    note = " ".join(x for x in (fixed_note(split.fixed), ERROR_NOTE if drew_err else "") if x)
    return Plot(title=title, uri=_svg_uri(fig), note=note, used=used)


# --- latency CDF ---------------------------------------------------------------------------------

CDF_SPLIT = 8        # lines a CDF draws on one axes; past that, small multiples
CDF_PER_PANEL = 4    # lines in colour per panel of the small multiples
CDF_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]

KIND_TITLE = {"rtt": "Round-trip latency", "one_way": "One-way latency", "session": "Session latency",
              "op": "Operation latency", "io": "Per-IO latency at the queue depth",
              "batch_mean": "Batch-mean operation time"}


def latency_cdf(records, *, title=None, series="mechanism", multi=False, limit=MAX_SERIES):
    recs = [r for r in records if r.ok and histogram_cdf(r.get("latency_ns", "histogram"))]
    if not recs:
        return None
    used = {id(r) for r in recs}
    recs, fixed = slice_records(recs, keep=(series, "mechanism"))
    left_out = recs[limit:]
    recs = recs[:limit]
    kinds = {r.get("latency_ns", "kind") for r in recs}
    kind = kinds.pop() if len(kinds) == 1 else None
    title = title or f"{KIND_TITLE.get(kind, 'Latency')} CDF"
    name = compact_labels(recs)  # the fixed parameters are in the note, not in every label
    curves = [(name(r) + (f" · {r.source.tag}" if multi else ""), histogram_cdf(r.get("latency_ns", "histogram")))
              for r in recs]
    # Past CDF_PER_PANEL lines the colours would blur into one another: small multiples instead, each
    # panel its few lines in colour over every other line in grey, all on the same axes.
    groups = [curves[i:i + CDF_PER_PANEL] for i in range(0, len(curves), CDF_PER_PANEL)] \
        if len(curves) > CDF_SPLIT else [curves]
    ncols = 1 if len(groups) == 1 else 2
    nrows = math.ceil(len(groups) / ncols)
    size = (8.2, 3.9) if len(groups) == 1 else (9.2, 2.6 * nrows + 0.5)
    fig, axes = plt.subplots(nrows, ncols, figsize=size,
                             sharex=True, sharey=True, squeeze=False, layout="constrained")
    for ax, group in zip(axes.flat, groups):
        if len(groups) > 1:
            for _, (xs, ys) in curves:
                ax.step(xs, ys, where="post", color="#d5d9de", linewidth=0.9, zorder=1)
        for i, (label, (xs, ys)) in enumerate(group):
            ax.step(xs, ys, where="post", color=CDF_COLOURS[i % len(CDF_COLOURS)],
                    linestyle=DASHES[(i // len(CDF_COLOURS)) % len(DASHES)], label=label, linewidth=1.6, zorder=2)
        ax.set_xscale("log")
        _time_axis(ax.xaxis)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_ylim(0, 1.02)
        ax.set_yticks([0, 0.25, 0.5, 0.75, 0.9, 0.99], ["0", "0.25", "0.5", "0.75", "0.9", "0.99"])
        if len(groups) > 1:
            ax.legend(loc="lower right", fontsize=7.5)
    for ax in list(axes.flat)[len(groups):]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("latency (log scale)")
    for ax in axes[:, 0]:
        ax.set_ylabel("fraction ≤ latency")
    if len(groups) == 1:
        axes[0, 0].set_title(title)
        _legend(fig, [axes[0, 0]], len(recs))
    else:
        fig.suptitle(title, fontweight="bold", fontsize=11.5)
    note = fixed_note(fixed)
    if len(groups) > 1:
        note += (" " if note else "") + (f"{len(curves)} lines: {len(groups)} panels of up to {CDF_PER_PANEL}, "
                                         "every other line grey behind them.")
    if left_out:
        note += (" " if note else "") + (f"Not drawn ({len(left_out)} more than {limit} series): "
                                         + ", ".join(name(r) for r in left_out) + ".")
    return Plot(title=title, uri=_svg_uri(fig), note=note, used=used)


# --- bars ----------------------------------------------------------------------------------------

def _unit_text(v, time_axis):
    return fmt_time_ns(v) if time_axis else fmt_si(v)


def bars(categories, series, *, title, xlabel, time_axis=False, log=None, used=(), note="", errors=None):
    """Horizontal grouped bars: one group per category, one bar per series (dict label -> values).
    On a log axis (values spanning 100x, or `log`) a bar's length means nothing, so each value is
    a dot instead. `errors`: label -> [(low, high) or None per category], drawn as error bars.
    A chart whose every value is the same carries no information: it is not drawn, and its Plot
    (uri "") says the value in its note instead."""
    series = {k: v for k, v in series.items() if any(is_number(x) for x in v)}
    # A series that is zero on every bar draws nothing and takes its room from the others: said
    # in the note instead (no session rejected or lost).
    zero = [k for k, v in series.items() if all(x == 0 for x in v if is_number(x))]
    if zero and len(zero) < len(series):
        series = {k: v for k, v in series.items() if k not in zero}
        note = " ".join(x for x in (note, f"Zero on every bar, so not drawn: {', '.join(zero)}.") if x)
    if not categories or not series:
        return None
    values = [x for v in series.values() for x in v if is_number(x)]
    if len(values) > 1 and len(set(values)) == 1:
        return Plot(title=title, uri="", used=set(used), note=" ".join(x for x in (
            note, f"Not drawn: {', '.join(series)} is {_unit_text(values[0], time_axis)} for every one of "
                  f"the {len(values)}.") if x))
    if len(categories) > MAX_BARS:  # more than a page can label: the rest are in the table under it
        note = " ".join(x for x in (note, f"Drawn: the first {MAX_BARS} of {len(categories)} "
                                          "(every one is in the table).") if x)
        categories = categories[:MAX_BARS]
        series = {k: v[:MAX_BARS] for k, v in series.items()}
    values = [x for v in series.values() for x in v if is_number(x)]
    if log is None:
        log = _spans(values, 100)
    log = log and all(v > 0 for v in values)
    n, m = len(categories), len(series)
    height = min(1.2 + n * (0.1 + 0.14 * m), 6.5)
    fig, ax = plt.subplots(figsize=(8.2, height), layout="constrained")
    bar_h = 0.8 / m
    drew_err = False
    for j, (label, vals) in enumerate(series.items()):
        ys = [i - 0.4 + bar_h * (j + 0.5) for i in range(n)]
        color, marker = style(j)
        if log:   # a dot per value, on a faint guide line from the axis
            pts = [(x, y) for x, y in zip(vals, ys) if is_number(x)]
            ax.plot([x for x, _ in pts], [y for _, y in pts], linestyle="none", marker=marker, color=color,
                    markersize=5.5, label=label)
        else:
            xs = [v if is_number(v) else 0 for v in vals]
            ax.barh(ys, xs, height=bar_h * 0.92, color=color, label=label)
        ivs = [(iv, v, y) for iv, v, y in zip((errors or {}).get(label) or [], vals, ys) if iv and is_number(v)]
        if ivs:
            drew_err = True
            ax.errorbar([v for _, v, _ in ivs], [y for _, _, y in ivs],
                        xerr=[[max(0, v - iv[0]) for iv, v, _ in ivs], [max(0, iv[1] - v) for iv, v, _ in ivs]],
                        fmt="none", ecolor="#333", elinewidth=0.9, capsize=0)
    if drew_err:
        note = " ".join(x for x in (note, ERROR_NOTE) if x)
    ax.set_yticks(range(n), categories, fontsize=8.5 if n < 25 else 7)
    ax.invert_yaxis()
    ax.grid(axis="y", visible=False)
    if log:
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(NullFormatter())   # no raw figures (6×10⁶) among the units
        ax.grid(axis="y", visible=True, color="#f0f2f4")
    (_time_axis if time_axis else _si_axis)(ax.xaxis)
    ax.set_xlabel(xlabel + (" (log scale: dots, not bars)" if log else ""))
    ax.set_title(title)
    if m > 1:
        ax.legend(loc="best" if m <= 4 else "upper right")
    return Plot(title=title, uri=_svg_uri(fig), note=note, used=set(used))


def compact_labels(records):
    """Labels of bars and lines: the mechanism and the parameters that vary among its own records
    here, as tables.short_names names a row (a peer's server path is no label); the full name is
    in the data table under the plot."""
    names = short_names(records, suite=False)
    return lambda r: names.get(r.name, r.mechanism)


def record_bars(records, metrics, *, title, xlabel, multi=False, time_axis=False, log=None,
                category=None, err=None):
    """Bars per benchmark; `metrics` maps a series name to a getter. With several files each
    metric gets one series per file, so the same benchmark on two machines sits side by side.
    `err` ("time" or "rate", as `interval`): error bars where a bar is one record with a spread."""
    recs = [r for r in records if r.ok and any(is_number(f(r)) for f in metrics.values())]
    if not recs:
        return None
    category = category or compact_labels(recs)
    # The records of each bar, grouped in one pass: (category, file label or None) -> records.
    groups, tags = {}, {}
    for r in recs:
        groups.setdefault((category(r), r.source.label if multi else None), []).append(r)
        tags.setdefault(r.source.label, r.source.tag)
    cats = list(dict.fromkeys(c for c, _ in groups))
    labels = list(dict.fromkeys(r.source.label for r in recs)) if multi else [None]
    series, errors = {}, {}
    for mname, getter in metrics.items():
        for lab in labels:
            tag = tags.get(lab, lab)
            key = mname if lab is None else (f"{mname} · {tag}" if len(metrics) > 1 else tag)
            series[key] = [median([getter(r) for r in groups.get((c, lab), ())]) for c in cats]
            if err:
                errors[key] = [interval(groups[(c, lab)][0], getter, err) if len(groups.get((c, lab), ())) == 1
                               else None for c in cats]
    return bars(cats, series, title=title, xlabel=xlabel, time_axis=time_axis, log=log,
                used={id(r) for r in recs}, errors=errors)


# --- small multiples of bars: one panel per operation, one bar per runtime ------------------------

def split_operation(mechanisms):
    """{mechanism: (operation, runtime)} for names made `<operation>_<runtime>` (runtime/spawn_asio,
    channel_pairs_tokio_ct), the runtime read off the names themselves: of each name's suffixes
    at an underscore, the one that ends the most operations (`compio` ends channel_, spawn_, ...;
    `futures_compio` only channel_ and channel_pairs_); ties to the suffix whose operation the
    most runtimes share (`tokio_ct` after channel_, not `ct` after channel_tokio_), then the shorter."""
    names = list(dict.fromkeys(mechanisms))
    splits = {m: [(m[:i], m[i + 1:]) for i in range(len(m)) if m[i] == "_" and 0 < i < len(m) - 1]
              for m in names}
    ops_of, rts_of = {}, {}
    for cands in splits.values():
        for op, rt in cands:
            ops_of.setdefault(rt, set()).add(op)
            rts_of.setdefault(op, set()).add(rt)
    out = {}
    for m, cands in splits.items():
        if not cands:
            out[m] = (m, m)
            continue
        op, rt = max(cands, key=lambda c: (len(ops_of[c[1]]), len(rts_of[c[0]]), -len(c[1])))
        out[m] = (op, rt)
    return out


def panel_bars(panels, *, title, xlabel, time_axis=True, lower_is_better=True, used=(), note="",
               columns=None):
    """Small multiples of horizontal bars: `panels` maps a panel title to {bar label: value}. Each
    panel sorted best first (lowest when `lower_is_better`), on its own linear x axis from zero,
    each bar labelled with its figure; a bar label keeps one colour in every panel. None when no
    panel has a value."""
    panels = {t: {k: v for k, v in bs.items() if is_number(v)} for t, bs in panels.items()}
    panels = {t: bs for t, bs in panels.items() if bs}
    if not panels:
        return None
    labels = list(dict.fromkeys(k for bs in panels.values() for k in bs))
    color = {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(labels)}
    ncols = columns or min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    most = max(len(bs) for bs in panels.values())
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.3 * ncols + 0.6, nrows * (0.5 + 0.18 * most) + 0.6),
                             squeeze=False, layout="constrained")
    for ax, (ptitle, bs) in zip(axes.flat, panels.items()):
        order = sorted(bs, key=lambda k: bs[k], reverse=not lower_is_better)
        vals = [bs[k] for k in order]
        ax.barh(range(len(order)), vals, color=[color[k] for k in order], height=0.72)
        ax.set_yticks(range(len(order)), order, fontsize=8.5)
        ax.set_ylim(most - 0.5, -0.5)  # one bar height in every panel, the best on top
        ax.grid(axis="y", visible=False)
        top = max(vals)
        ax.set_xlim(0, top * 1.32)
        for y, v in enumerate(vals):
            ax.text(v + top * 0.02, y, _unit_text(v, time_axis), va="center", fontsize=7.5, color="#333")
        (_time_axis if time_axis else _si_axis)(ax.xaxis)
        ax.xaxis.set_major_locator(MaxNLocator(3))
        ax.tick_params(axis="x", labelsize=7.5)
        ax.set_title(ptitle, fontsize=9.5, fontweight="normal", loc="left")
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.supxlabel(xlabel, fontsize=9.5)
    fig.suptitle(title, fontweight="bold", fontsize=11.5)
    return Plot(title=title, uri=_svg_uri(fig), note=note, used=set(used))


def by_operation(records, value, *, title, xlabel, time_axis=True, fixed_dims=("n",), multi=False):
    """Records named `<operation>_<runtime>` as small multiples (panel_bars): a panel per operation
    and the parameters that vary within it, a bar per runtime (and file, with several). The
    dimensions of `fixed_dims` (the count of operations) are held at their most common value per
    operation, and said so in the note."""
    recs = [r for r in records if r.ok and is_number(value(r))]
    if not recs:
        return None
    split = split_operation(r.mechanism for r in recs)
    groups = {}
    for r in recs:
        groups.setdefault(split[r.mechanism][0], []).append(r)
    panels, fixed_all = {}, {}
    for op, rs in groups.items():
        keep = tuple(d for d in dims_of(rs) if d not in fixed_dims)
        rs, fixed = slice_records(rs, keep)
        for d, v in fixed.items():
            fixed_all.setdefault(d, set()).add(str(v))
        # the parameters that vary within the operation among the runtimes that have them
        vary = [d for d in varying(rs, exclude=("mechanism",))
                if len({hashable(r.dim(d)) for r in rs if r.dim(d) is not None}) > 1]
        for r in rs:
            ptitle = " · ".join([op] + [f"{d}:{r.dim(d)}" for d in vary if r.dim(d) is not None])
            bar = split[r.mechanism][1] + (f" · {r.source.tag}" if multi else "")
            panels.setdefault(ptitle, {}).setdefault(bar, []).append(value(r))
    panels = {t: {k: median(v) for k, v in bs.items()} for t, bs in sorted(panels.items())}
    note = ("" if not fixed_all else "Held at the most common value per operation: " + ", ".join(
        f"{d}={'/'.join(sorted(v))}" for d, v in fixed_all.items()) + " (all points are in the table). ")
    note += "Each panel sorted fastest first; a runtime keeps its colour in every panel."
    return panel_bars(panels, title=title, xlabel=xlabel, time_axis=time_axis, note=note,
                      used={id(r) for r in recs})


# --- bulk: bandwidth and CPU against the size moved ----------------------------------------------

def bulk_gib_s(r):
    return r.num("extra", "bulk", "GiB_per_s")


def bulk_cpu_per_mib_ns(r):
    """CPU (user + sys, both sides) per MiB moved, in ns: extra.bulk's cpu_{user,sys}_us_per_MiB."""
    parts = [r.num("extra", "bulk", f"cpu_{k}_us_per_MiB") for k in ("user", "sys")]
    return sum(parts) * 1e3 if all(is_number(v) for v in parts) else None


# --- CPU x CPU heatmaps --------------------------------------------------------------------------

ANNOTATE_MAX = 16   # CPUs up to which every cell is written out


def _short_unit(values):
    """(divisor, unit) that keeps the figures of `values` (ns) to four digits."""
    top = max(values)
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if top >= 10 * scale:
            return scale, unit
    return 1, "ns"


def cpu_heatmap(cpus, panels, *, title, bounds=(), note="", used=()):
    """CPU x CPU heatmaps side by side over the same CPUs (`cpus`, in that order, rows and columns),
    one per entry of `panels`: (panel title, {(row CPU, column CPU): ns}, colour bar label). Each
    panel has its own colour bar, logarithmic when its values span four times or more; a cell with
    no value stays blank; every cell is written out up to ANNOTATE_MAX CPUs. `bounds` are the
    domain boundaries of topology.layout: lines between LLCs (thin) and NUMA nodes or packages
    (thick). None when no panel has a value."""
    import numpy as np
    from matplotlib.colors import LogNorm, Normalize

    index = {c: i for i, c in enumerate(cpus)}
    panels = [(t, {k: v for k, v in cells.items() if is_number(v) and k[0] in index and k[1] in index}, label)
              for t, cells, label in panels]
    panels = [p for p in panels if p[1]]
    if not panels:
        return None
    n = len(cpus)
    side = 4.6 if n <= 8 else 5.6 if n <= ANNOTATE_MAX else 6.4
    fig, axes = plt.subplots(1, len(panels), figsize=((side + 1.2) * len(panels), side), squeeze=False,
                             layout="constrained")
    cmap = matplotlib.colormaps["viridis"].with_extremes(bad="#ffffff")
    step = max(1, math.ceil(n / 32))
    ticks = list(range(0, n, step))
    for ax, (ptitle, cells, label) in zip(axes[0], panels):
        scale, unit = _short_unit(list(cells.values()))
        grid = np.full((n, n), np.nan)
        for (a, b), v in cells.items():
            grid[index[a], index[b]] = v / scale
        lo, hi = np.nanmin(grid), np.nanmax(grid)
        norm = LogNorm(lo, hi) if lo > 0 and hi / lo >= 4 else Normalize(lo, hi if hi > lo else lo + 1)
        im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=norm, interpolation="nearest")
        bar = fig.colorbar(im, ax=ax, shrink=0.85)
        bar.set_label(f"{label} ({unit})")
        if isinstance(norm, LogNorm):  # plain figures at 1, 2 and 5 of each decade, not 6×10¹
            bar.ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5)))
            bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            bar.ax.yaxis.set_minor_formatter(NullFormatter())
        ax.grid(False)
        ax.tick_params(length=0)
        size = 8 if n <= ANNOTATE_MAX else 6.5
        ax.set_xticks(ticks, [str(cpus[i]) for i in ticks], fontsize=size, rotation=0 if n <= ANNOTATE_MAX else 90)
        ax.set_yticks(ticks, [str(cpus[i]) for i in ticks], fontsize=size)
        for k, kind in bounds:
            for line in (ax.axhline, ax.axvline):
                line(k - 0.5, color="#222", linewidth=2.4 if kind == "node" else 1.1)
        if n <= ANNOTATE_MAX:
            for i in range(n):
                for j in range(n):
                    v = grid[i, j]
                    if not np.isnan(v):
                        ax.text(j, i, f"{v:.0f}" if v >= 100 else f"{v:.3g}", ha="center", va="center",
                                fontsize=7.5 if n <= 8 else 6, color="white" if norm(v) < 0.5 else "black")
        ax.set_xlabel("CPU")
        ax.set_ylabel("CPU")
        if ptitle:
            ax.set_title(ptitle, fontsize=9.5, fontweight="normal")
    fig.suptitle(title, fontweight="bold", fontsize=11.5)
    return Plot(title=title, uri=_svg_uri(fig), note=note, used=set(used))


def inflation_heatmap(cells, *, title, note=""):
    """Mechanisms (rows) × antagonists (columns), each cell a ratio `{(row, column): (ratio, ci)}` on a
    diverging colour scale centred on 1 (logarithmic: ×2 and ×½ equally far), written out with its
    interval; a cell not measured stays blank. None without a cell."""
    import numpy as np
    from matplotlib.colors import TwoSlopeNorm

    if not cells:
        return None
    rows = sorted({k[0] for k in cells})
    cols = sorted({k[1] for k in cells}, key=lambda c: (not c.startswith("none"), c))  # the A/A column first
    grid = np.full((len(rows), len(cols)), np.nan)
    for (r, c), (ratio, _) in cells.items():
        if ratio > 0:
            grid[rows.index(r), cols.index(c)] = math.log2(ratio)
    # ×1.1 at the least, so that noise is pale; ×4 at the most, so that one collapse (×1000) does not
    # wash every other cell out: beyond it a cell takes the scale's end, and its figure says how far.
    reach = min(2.0, max(0.15, float(np.nanmax(np.abs(grid))) if np.isfinite(grid).any() else 1.0))
    norm = TwoSlopeNorm(vcenter=0.0, vmin=-reach, vmax=reach)
    fig, ax = plt.subplots(figsize=(2.2 + 1.45 * len(cols), 1.2 + 0.5 * len(rows)), layout="constrained")
    cmap = matplotlib.colormaps["RdBu_r"].with_extremes(bad="#ffffff")
    im = ax.imshow(np.ma.masked_invalid(np.clip(grid, -reach, reach)), cmap=cmap, norm=norm, aspect="auto",
                   interpolation="nearest")
    bar = fig.colorbar(im, ax=ax, shrink=0.85)
    bar.set_label("p99 noisy ÷ p99 quiet")
    bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"×{2 ** v:.3g}"))
    ax.set_xticks(range(len(cols)), cols, fontsize=8, rotation=20, ha="right")
    ax.set_yticks(range(len(rows)), rows, fontsize=8)
    ax.tick_params(length=0)
    ax.grid(False)
    for (r, c), (ratio, ci) in cells.items():
        i, j = rows.index(r), cols.index(c)
        def fig3(v):  # three figures, never an exponent: ×1721, ×1.28
            return f"{v:.0f}" if v >= 100 else f"{v:.3g}"

        text = f"×{fig3(ratio)}" + (f"\n[{fig3(ci[0])}, {fig3(ci[1])}]" if ci else "")
        dark = abs(grid[i, j]) > 0.6 * reach if np.isfinite(grid[i, j]) else False
        ax.text(j, i, text, ha="center", va="center", fontsize=7, color="white" if dark else "black")
    ax.set_xlabel("antagonist")
    ax.set_title(title, fontsize=10, fontweight="bold")
    return Plot(title=title, uri=_svg_uri(fig), note=note, used=set())


# --- open-loop load (pattern=rate) ---------------------------------------------------------------

def achieved(r):
    return r.num("extra", "rate", "achieved_per_s")


def saturation_text(r) -> str:
    """'200 k/s requested, 146 k/s achieved (why)' for the note under a plot."""
    reason = r.get("extra", "rate", "saturation")
    return (f"{fmt_si(r.num('extra', 'rate', 'requested_per_s'), '/s')} requested, "
            f"{fmt_si(achieved(r), '/s')} achieved" + (f" ({reason})" if isinstance(reason, str) and reason else ""))


@dataclass
class LoadCurves:
    """What a plot against load draws, computed apart from the drawing: `lines` maps (series key,
    metric) to its (achieved rate, value) points, sorted by rate; `saturated` holds (series key,
    record) of the points that are no figure at all, only a mark at their achieved rate."""

    lines: dict
    saturated: list
    labels: dict             # series key -> legend label
    fixed: dict
    used: set


def load_curves(records, metrics, *, multi=False) -> LoadCurves | None:
    """Open-loop records (rate=auto excluded: capacity_walk draws those) against their achieved
    rate, one series per mechanism and whatever else varies but the requested rate (the x axis is
    what it became). `metrics` maps a label to a getter; a saturated point gives no value, whatever
    its record holds."""
    recs = [r for r in records if r.ok and r.is_rate and not r.is_capacity and is_number(achieved(r))]
    if not recs:
        return None
    used = {id(r) for r in recs}
    others = varying(recs, exclude=("mechanism", "rate"))
    fixed = {}

    def keyf(r):
        return (r.source.label if multi else "", r.mechanism) + tuple(hashable(r.dim(d)) for d in others)

    if len({keyf(r) for r in recs}) > MAX_SERIES:
        recs, fixed = slice_records(recs, keep=("mechanism", "rate"))
        others = []
    labels = {keyf(r): series_label(r, ["mechanism"] + others, multi) for r in recs}
    lines, saturated = {}, []
    for r in recs:
        if r.saturated:
            saturated.append((keyf(r), r))
            continue
        for m, get in metrics.items():
            v = get(r)
            if is_number(v):
                lines.setdefault((keyf(r), m), []).append((achieved(r), v))
    for pts in lines.values():
        pts.sort()
    if not lines and not saturated:
        return None
    return LoadCurves(lines=lines, saturated=saturated, labels=labels, fixed=fixed, used=used)


def vs_load(records, panels, *, title, ylabel, multi=False, y_time=True):
    """Metrics against the achieved rate: one colour per series, one line style per metric, one
    panel per entry of `panels` ({panel title: {metric: getter}}, sharing the y axis). Saturated
    points are marked x at the top of the axes at their achieved rate and named in the note."""
    flat = {(p, m): g for p, ms in panels.items() for m, g in ms.items()}
    curves = load_curves(records, flat, multi=multi)
    if curves is None or not curves.lines:
        return None
    from matplotlib.lines import Line2D

    keys = list(curves.labels)
    metric_names = list(dict.fromkeys(m for _, m in flat))
    fig, axes = plt.subplots(1, len(panels), figsize=(9.2, 3.9), sharey=True, squeeze=False,
                             layout="constrained")
    axes = list(axes[0])
    xs_all = [x for pts in curves.lines.values() for x, _ in pts] + [achieved(r) for _, r in curves.saturated]
    ys_all = [y for pts in curves.lines.values() for _, y in pts]
    for ax, panel in zip(axes, panels):
        for (key, pm), pts in curves.lines.items():
            if pm[0] != panel:
                continue
            color, marker = style(keys.index(key))
            ax.plot([x for x, _ in pts], [y for _, y in pts], color=color,
                    marker=marker, linestyle=DASHES[metric_names.index(pm[1]) % len(DASHES)],
                    linewidth=1.5, markersize=4)
        for key, r in curves.saturated:
            i = keys.index(key)
            ax.plot([achieved(r)], [1.0], transform=ax.get_xaxis_transform(), marker="x", markersize=8,
                    markeredgewidth=2, color=PALETTE[i % len(PALETTE)], linestyle="none", clip_on=False)
        if len(panels) > 1:
            ax.set_title(panel, fontsize=9.5, fontweight="normal")
        if _spans(xs_all, 8):
            ax.set_xscale("log")
        _si_axis(ax.xaxis)
        ax.set_xlabel("achieved rate (per second)")
        if _spans(ys_all, 50):
            _log_y(ax, ys_all)
        else:
            ax.set_ylim(bottom=0)
        (_time_axis if y_time else _si_axis)(ax.yaxis)
    axes[0].set_ylabel(ylabel)
    handles = [Line2D([], [], color=style(i)[0], marker=style(i)[1], label=curves.labels[k])
               for i, k in enumerate(keys)]
    handles += [Line2D([], [], color="#444", linestyle=DASHES[j % len(DASHES)], label=m)
                for j, m in enumerate(metric_names)]
    if curves.saturated:
        handles.append(Line2D([], [], color="#444", marker="x", linestyle="none", label="saturated"))
    fig.legend(handles=handles, loc="outside right upper")
    fig.suptitle(title, fontweight="bold", fontsize=11.5)
    notes = [fixed_note(curves.fixed)] if curves.fixed else []
    if curves.saturated:
        notes.append("Saturated, so no figure (marked × at the top at the rate achieved): " + "; ".join(
            f"{curves.labels[k]}: {saturation_text(r)}" for k, r in curves.saturated) + ".")
    return Plot(title=title, uri=_svg_uri(fig), note=" ".join(notes), used=curves.used)


def capacity_walk(records, *, multi=False):
    """The trials of each capacity search (rate=auto): corrected p99 against the achieved rate, the
    SLO as a dotted line, the capacity found as a star; saturated trials marked x at the top."""
    recs = [r for r in records if r.ok and r.is_capacity and isinstance(r.get("extra", "capacity", "trials"), list)]
    if not recs:
        return None
    fig, ax = plt.subplots(figsize=(8.2, 3.9), layout="constrained")
    name = compact_labels(recs)
    ys = []
    for i, r in enumerate(recs):
        color = PALETTE[i % len(PALETTE)]
        label = name(r) + (f" · {r.source.tag}" if multi else "")
        trials = [t for t in r.get("extra", "capacity", "trials") if isinstance(t, dict)]
        pts = sorted((t["achieved_per_s"], t["p99_us"] * 1e3) for t in trials
                     if not t.get("saturated") and is_number(t.get("achieved_per_s")) and is_number(t.get("p99_us")))
        if pts:
            ax.plot([x for x, _ in pts], [y for _, y in pts], color=color, marker="o", markersize=4,
                    linewidth=1.3, label=label)
            ys += [y for _, y in pts]
        for t in trials:
            if t.get("saturated") and is_number(t.get("achieved_per_s")):
                ax.plot([t["achieved_per_s"]], [1.0], transform=ax.get_xaxis_transform(), marker="x",
                        markersize=8, markeredgewidth=2, color=color, linestyle="none", clip_on=False)
        slo = r.num("extra", "capacity", "slo_p99_us")
        if slo is not None:
            ax.axhline(slo * 1e3, color=color, linestyle=":", linewidth=1.2)
            ys.append(slo * 1e3)
        cap, p99 = r.num("extra", "capacity", "capacity_per_s"), r.rate_latency("p99")
        if cap and p99 is not None:
            ax.plot([cap], [p99], marker="*", markersize=13, color=color, linestyle="none")
            ys.append(p99)
    if not any(y > 0 for y in ys):
        plt.close(fig)
        return None
    ax.set_xscale("log")
    _si_axis(ax.xaxis)
    _log_y(ax, [y for y in ys if y > 0])
    _time_axis(ax.yaxis)
    ax.set_xlabel("achieved rate of the trial (per second)")
    ax.set_ylabel("corrected p99")
    title = "Capacity search: the trials walked (★ capacity found, dotted: the p99 bound)"
    ax.set_title(title)
    _legend(fig, [ax], len(recs))
    return Plot(title=title, uri=_svg_uri(fig), note="Saturated trials are marked × at the top.",
                used={id(r) for r in recs})


# --- time series ---------------------------------------------------------------------------------

MAX_FLAGGED = 6


# The flags a repetition's time slices give, and the operations its median slice must hold for
# them to be judged: one op more or fewer in a slice of 10 is the 10% trend `non_steady` reports
# (src/core/stats/series.hpp, min_ops_per_slice; docs/methodology.md "Flags"). Files written before
# the harness kept to it carry such flags on slices of 0-1 operations: they are dropped here.
SLICE_FLAGS = ("non_steady", "bimodal")
MIN_OPS_PER_SLICE = 10


def judged_flags(it) -> list:
    """A repetition's series flags, none when its median slice holds fewer than MIN_OPS_PER_SLICE."""
    flags = [f for f in (it.get("series", "flags") or []) if isinstance(f, str)]
    ops = [v for v in (it.get("series", "ops") or []) if is_number(v)]
    return flags if not ops or median(ops) >= MIN_OPS_PER_SLICE else []


def series_flags(r) -> list:
    """The flags of a summary record: the judged series flags (judged_flags) that most of its ok
    repetitions carry, as the harness's aggregate takes them (docs/methodology.md, "Flags": one
    window's flag is that window's), the repetitions' own (`steal`) with the aggregate's own
    (`bimodal_repetitions`, `steal`); the aggregate's `flags` as they are when the file holds none
    of its repetitions."""
    reps = r.source.repetitions(r.name)
    own = r.flags
    if not reps:
        return own
    judged = [it for it in reps if it.ok] or reps
    counts = Counter(f for it in judged for f in set(judged_flags(it)))
    most = {f for f, n in counts.items() if 2 * n > len(judged)}
    return sorted({f for f in own if f not in SLICE_FLAGS} | most | {f for it in reps for f in it.flags})


def flagged_series(records, *, multi=False):
    """One panel per flagged benchmark (non-steady, bimodal or steal, docs/methodology.md "Time slices"):
    the rate of each of its repetitions over the 20 slices of the measured window, so that a trend
    or two levels can be seen rather than read from a flag."""
    flagged = [r for r in records if r.ok and series_flags(r)][:MAX_FLAGGED]
    panels = []
    for r in flagged:
        reps = [it for it in r.source.repetitions(r.name) if it.ok
                and isinstance(it.get("series", "rate_per_s"), list) and isinstance(it.get("series", "t_ns"), list)]
        if reps:
            panels.append((r, reps))
    if not panels:
        return None
    fig, axes = plt.subplots(len(panels), 1, figsize=(8.2, 2.3 * len(panels) + 0.4), layout="constrained",
                             squeeze=False)
    name = compact_labels([r for r, _ in panels])  # the full names do not fit a panel's title
    for ax, (r, reps) in zip(axes[:, 0], panels):
        for i, it in enumerate(reps):
            t, rate = it.get("series", "t_ns"), it.get("series", "rate_per_s")
            xs = [(a + b) / 2e6 for a, b in zip(t, t[1:])]
            pts = [(x, y) for x, y in zip(xs, rate) if is_number(y)]
            if not pts:
                continue
            own = judged_flags(it) + it.flags
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=MARKERS[i % len(MARKERS)], markersize=3,
                    linewidth=1.6 if own else 0.8, color=PALETTE[i % len(PALETTE)],
                    label=f"rep {it.get('repetition')}" + (f" ({', '.join(own)})" if own else ""))
        _si_axis(ax.yaxis)
        ax.set_ylim(bottom=0)
        ax.set_ylabel("ops/s")
        ax.set_xlabel("time in the measured window (ms)", fontsize=8)
        ax.set_title(f"{r.suite}: {name(r)}" + (f" · {r.source.tag}" if multi else "") +
                     f" — {', '.join(series_flags(r))}", fontsize=9, loc="left")
        ax.legend(loc="best", fontsize=7.5)
    title = "Time series of flagged runs"
    flags = Counter(f for r, _ in panels for f in series_flags(r))
    return Plot(title=title, uri=_svg_uri(fig),
                note="rate per slice of each repetition; bold: the repetitions flagged themselves",
                collapsed=f"⚑ {len(panels)} flagged benchmark{'s' if len(panels) > 1 else ''} ("
                          + ", ".join(f"{f} ×{n}" for f, n in flags.most_common()) + "): their time series")


# --- history -------------------------------------------------------------------------------------

TREND_TICKS = 24   # commit labels a trend writes under its runs at most; past that every k-th


def trend(s, *, title, ylabel, note) -> Plot:
    """One series of `ipclab history` (history.Series): each run's value by run order with its
    95% interval as error bars, the runs' short commits as ticks, each change point a dashed
    line between its two runs labelled with its change in percent, and each level between them
    a dotted line."""
    pts = [(i, r) for i, r in enumerate(s.runs) if r.value is not None]
    fig, ax = plt.subplots(figsize=(8.2, 3.4), layout="constrained")
    xs, ys = [i for i, _ in pts], [r.value for _, r in pts]
    lo = [r.value - r.ci[0] if r.ci else 0 for _, r in pts]
    hi = [r.ci[1] - r.value if r.ci else 0 for _, r in pts]
    ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o-", color=PALETTE[0], markersize=4.5, linewidth=1.1,
                ecolor="#333", elinewidth=0.9, capsize=2, label="median of a run")
    edges = [-0.5, *((c.prev + c.index) / 2 for c in s.changes), len(s.runs) - 0.5]
    levels = [c.before for c in s.changes[:1]] + [c.after for c in s.changes]
    for k, level in enumerate(levels):   # the median level of each segment between change points
        ax.hlines(level, edges[k], edges[k + 1], color=PALETTE[1], linestyle=":", linewidth=1.1,
                  label="level (median of its runs)" if k == 0 else None)
    for c, x in zip(s.changes, edges[1:-1]):
        ax.axvline(x, color=PALETTE[1], linestyle="--", linewidth=1.2, label="change point")
        ax.annotate(f"{c.pct:+.1f}%", (x, 1), xycoords=("data", "axes fraction"), xytext=(3, -2),
                    textcoords="offset points", color=PALETTE[1], fontsize=9, fontweight="bold", va="top")
    ax.margins(y=0.18)
    step = max(1, math.ceil(len(s.runs) / TREND_TICKS))
    ticks = list(range(0, len(s.runs), step))
    ax.set_xticks(ticks, [s.runs[i].git_sha[:7] for i in ticks], rotation=45, ha="right", fontsize=7.5)
    ax.set_xlim(-0.5, len(s.runs) - 0.5)
    ax.grid(axis="x", visible=False)
    (_si_axis if s.metric == "capacity" else _time_axis)(ax.yaxis)
    ax.set_xlabel("runs in date order (commit)")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    return Plot(title=title, uri=_svg_uri(fig), note=note)
