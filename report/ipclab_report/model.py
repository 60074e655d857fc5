"""From loaded files to what every output format renders: environment, suites, rows, plots."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

from . import registry as reg
from . import topology as topo
from .answers import answers
from .load import summaries
from .plots import series_flags
from .suites import suite_plots
from .util import fmt_si, fmt_time_ns, is_number
from .tables import capacity_columns, capacity_rows, columns, suite_rows
from .util import fmt_bytes_param, fmt_memory


@dataclass
class Suite:
    name: str
    anchor: str
    records: list
    rows: list
    columns: list                                          # the keys of `column_defs` (and `run`)
    column_defs: list = field(default_factory=list)       # the registry's columns of its table
    plots: list = field(default_factory=list)
    capacity: list = field(default_factory=list)          # capacity_rows: the rate=auto records
    capacity_columns: list = field(default_factory=list)

    @property
    def problems(self):
        return [r for r in self.rows if r["status"] != "ok"]

    def count(self, status):
        return sum(1 for r in self.rows if r["status"] == status)


def anchor(suite: str) -> str:
    return "suite-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in suite.lower())


def machine_line(rf) -> str:
    """cpu model, cores, kernel, load average: the caption under every plot."""
    ctx = rf.context
    cpu = ctx.get("cpu") if isinstance(ctx.get("cpu"), dict) else {}
    parts = [cpu.get("model") or "unknown CPU"]
    cores = []
    if cpu.get("physical_cores") is not None:
        cores.append(f"{cpu['physical_cores']} core{'s' if cpu['physical_cores'] != 1 else ''}")
    if cpu.get("logical_cpus") is not None:
        cores.append(f"{cpu['logical_cpus']} logical CPUs")
    if cores:
        parts.append(" / ".join(cores))
    if ctx.get("kernel"):
        parts.append(f"kernel {ctx['kernel']}")
    if load_text(ctx):
        parts.append("load avg " + load_text(ctx))
    return ", ".join(str(p) for p in parts)


def load_text(ctx) -> str:
    """The 1, 5 and 15 minute load averages at the start of the run: '0.31 1.66 2.07'."""
    la = ctx.get("load_avg")
    if not isinstance(la, list):
        return ""
    return " ".join(f"{x:.2f}" if isinstance(x, (int, float)) else str(x) for x in la)


def build_text(ctx) -> str:
    """Compiler, build type and flags: 'gcc 12.2.0 Release -march=native' (an empty setting such as
    'sanitize=' says nothing and is left out)."""
    flags = [f for f in str(ctx.get("build_flags") or "").split() if not f.endswith("=")]
    return " ".join(str(x) for x in (ctx.get("compiler"), ctx.get("build_type"), *flags) if x)


def _fmt_value(v):
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, list):
        return ", ".join(_fmt_value(x) for x in v)
    if isinstance(v, dict):
        return "; ".join(f"{k}: {_fmt_value(x)}" for k, x in v.items())
    return "" if v is None else str(v)


ENV_ROWS = [
    ("host", lambda c: c.get("hostname")),
    ("date", lambda c: c.get("date")),
    ("CPU", lambda c: (c.get("cpu") or {}).get("model")),
    ("cores", lambda c: " / ".join(x for x in (
        f"{(c.get('cpu') or {}).get('physical_cores')} physical" if (c.get("cpu") or {}).get("physical_cores") is not None else "",
        f"{(c.get('cpu') or {}).get('logical_cpus')} logical" if (c.get("cpu") or {}).get("logical_cpus") is not None else "",
        f"SMT {_fmt_value((c.get('cpu') or {}).get('smt'))}" if (c.get("cpu") or {}).get("smt") is not None else "") if x)),
    ("online CPUs", lambda c: (c.get("cpu") or {}).get("online")),
    ("caches", lambda c: {k: (f"{fmt_bytes_param(v)}B" if isinstance(v, int) else v)
                          for k, v in ((c.get("cpu") or {}).get("caches") or {}).items()}
                          if isinstance((c.get("cpu") or {}).get("caches"), dict) else (c.get("cpu") or {}).get("caches")),
    ("memory", lambda c: fmt_memory(c["memory_bytes"]) if isinstance(c.get("memory_bytes"), int) else None),
    ("kernel", lambda c: c.get("kernel")),
    ("virtualization", lambda c: c.get("virtualization")),
    ("governor", lambda c: c.get("governor")),
    ("load average", load_text),
    ("io_uring", lambda c: c.get("io_uring")),
    ("limits", lambda c: c.get("limits")),
    ("mitigations", lambda c: c.get("mitigations")),
    ("compiler", lambda c: build_text(c)),
    ("libraries", lambda c: c.get("libraries")),
    ("ipclab", lambda c: " ".join(str(x) for x in (c.get("ipclab_version"), c.get("git_sha")) if x)),
    ("run", lambda c: ", ".join(f"{k} {c[k]}" for k in ("preset", "repetitions", "duration_s", "warmup_s") if c.get(k) is not None)),
    ("command line", lambda c: c.get("command_line")),
]


def env_table(files):
    """Rows of (key, [value per file]); rows empty in every file are dropped."""
    out = []
    for key, getter in ENV_ROWS:
        vals = []
        for f in files:
            try:
                vals.append(_fmt_value(getter(f.context)))
            except Exception:
                vals.append("")
        if any(vals):
            out.append((key, vals))
    return out


def warnings(rf):
    ws = rf.context.get("warnings")
    out = []
    for w in ws if isinstance(ws, list) else []:
        if isinstance(w, dict):
            out.append((str(w.get("message") or ""), str(w.get("remedy") or "")))
        elif isinstance(w, str):
            out.append((w, ""))
    return out


def all_warnings(files):
    """(message, remedy, [tags of the files that raised it]): a warning every file raised is shown once."""
    out = {}
    for f in files:
        for w in warnings(f):
            out.setdefault(w, []).append(f.tag or f.label)
    return [(m, r, tags) for (m, r), tags in out.items()]


# Where the flags are explained, for a result file that does not carry their texts (written before
# context.flags).
FLAGS_DOC = "docs/methodology.md, “Flags”"


@dataclass
class FlagNote:
    """A flag that occurs in the results: its id, the word the tables show, what it means and what
    to do, as the harness that wrote the file says (context.flags, from src/core/stats/flags.cpp)."""

    id: str
    word: str
    meaning: str
    remedy: str
    points: int   # summary records that show it (0 for one the status shows from elsewhere)


def flag_notes(files, recs) -> list:
    """The flags that occur in `files` (their context.flags) or on their summary records `recs`, each
    with its meaning and remedy from the file; a flag no file explains points to FLAGS_DOC instead
    (this package holds no text of its own for a flag)."""
    table = {}
    for f in files:
        given = f.context.get("flags") if isinstance(f.context, dict) else None
        for k, v in (given.items() if isinstance(given, dict) else ()):
            if isinstance(k, str) and isinstance(v, dict):
                table.setdefault(k, v)
    count = Counter(flag for r in recs if r.ok for flag in set(series_flags(r)))
    out = []
    for k in sorted(set(table) | set(count)):
        v = table.get(k, {})
        out.append(FlagNote(id=k, word=str(v.get("word") or k.replace("_", " ")), meaning=str(v.get("meaning") or ""),
                            remedy=str(v.get("remedy") or f"see {FLAGS_DOC}"), points=count.get(k, 0)))
    return out


@dataclass
class TopologyView:
    """A measured cache-line round-trip matrix, as the environment section shows it."""

    label: str             # whose: a result file's label, or the saved `ipclab topo --json`
    plot: object           # plots.Plot, or None when no pair could be drawn
    classes: str           # the classes and the sysfs relations, with their median round trips
    warning: str           # the pairs that behave as SMT siblings; "" when none
    notes: list            # the sample, and the pieces left out and why


HEATMAP_NOTE = ("Each cell: the median round trip of one cache line between the two CPUs (ipclab topo). "
                "CPUs ordered by package, NUMA node, last-level cache and core; lines mark the boundaries "
                "of last-level caches (thin) and of NUMA nodes or packages (thick).")


def topology_view(label, topology, with_plot=True):
    """The view of a topology object's measured matrix; None when it carries none."""
    m = topo.read(topology)
    if m is None:
        return None
    order, bounds = topo.layout(m.cpus, topo.read_cpus(topology))
    notes = []
    if m.sampled:
        notes.append("Sampled: over 64 CPUs only some pairs of each sysfs relation are measured; the "
                     "blank cells were not.")
    if m.ignored:
        notes.append(f"Left out ({len(m.ignored)}): " + "; ".join(m.ignored[:8]) +
                     (f"; and {len(m.ignored) - 8} more" if len(m.ignored) > 8 else "") + ".")
    plot = None
    if with_plot:
        from .plots import cpu_heatmap

        plot = cpu_heatmap(order, [("", topo.cells(m), "cache-line round trip")], bounds=bounds,
                           title="Cache-line round trip between CPUs", note=HEATMAP_NOTE)
    return TopologyView(label=label, plot=plot, classes=topo.classes_text(m), warning=topo.siblings_warning(m),
                        notes=notes)


def topology_views(files, saved=(), with_plot=True):
    """The measured matrices: of each result file whose environment carries one, then of each saved
    `ipclab topo --json` ((path, object) pairs)."""
    out = []
    for f in files:
        v = topology_view(f.label if len(files) > 1 else "", f.topology, with_plot)
        if v:
            out.append(v)
    for path, doc in saved:
        v = topology_view(f"{os.path.basename(path)} (ipclab topo --json)", doc, with_plot)
        if v:
            out.append(v)
    return out


@dataclass
class Since:
    """What moved since the last comparable run in the store, as the run said it (the summary
    records' extra.since, set by the harness from its results store): a heading naming the run
    compared with, a line per benchmark that moved (or may have), and a count of the others."""

    heading: str
    lines: list  # (name, text)
    unchanged: int
    judged: int


def _since_base(b) -> str:
    date = str(b.get("date") or "")
    if len(date) >= 16:
        date = f"{date[:10]} {date[11:16]} UTC"
    return f"{date}, {b.get('git_sha') or 'no commit'}, {b.get('kernel') or ''}"


def since_of(recs):
    """The Since of the summary records `recs`, or None when the run compared nothing."""
    judged = [(r, r.get("extra", "since")) for r in recs]
    judged = [(r, s) for r, s in judged if isinstance(s, dict)]
    if not judged:
        return None
    bases = {str((s.get("base") or {}).get("run_id")) for _, s in judged}
    one = len(bases) == 1
    heading = (f"Since the last comparable run in the store ({_since_base(judged[0][1].get('base') or {})})"
               if one else "Since each benchmark's last comparable run in the store")
    lines, same = [], 0
    for r, s in judged:
        verdict = str(s.get("verdict", ""))
        if verdict == "no change":
            same += 1
            continue
        metric = str(s.get("metric", "time/op"))
        fig = (lambda v: fmt_si(v, "/s")) if metric == "capacity" else fmt_time_ns
        ratio, ci = s.get("ratio") or 1.0, s.get("ci") or [1.0, 1.0]
        pct = lambda x: f"{(x - 1) * 100:+.1f}%"  # noqa: E731
        text = (f"{verdict}: {metric} {pct(ratio)} [{pct(ci[0])}, {pct(ci[1])}], "
                f"{fig((s.get('base') or {}).get('median'))} → {fig(s.get('median'))}")
        text += (f" ({s.get('why', '')})" if verdict.endswith("?") else
                 f" (p {s.get('p', 1):.2g}; no change within ±{(s.get('band') or 0) * 100:.1f}%, "
                 f"{s.get('band_source', '')})")
        if not one:
            text += f" since {_since_base(s.get('base') or {})}"
        lines.append((r.name, text))
    return Since(heading=heading, lines=lines, unchanged=same, judged=len(judged))


@dataclass
class NoiseView:
    """What antagonists did (docs/noise.md): a heatmap of the p99's inflation, mechanism × antagonist,
    per placement, from every median that carries `extra.inflation`."""
    plots: list
    points: int
    note: str


NOISE_NOTE = ("Each cell: the p99 under the antagonist over the same p99 quiet — the median of the ABBA "
              "pairs' ratios (extra.inflation.p99), with its 95% interval beneath when there were 3 pairs or "
              "more. Red: the tail grew; blue: it shrank; white: within a few percent. The `none` column is "
              "the A/A check: the band a real antagonist's must clear.")


def _antagonist_label(r) -> str:
    ants = r.get("extra", "antagonists") or []
    return " + ".join(str(a.get("text") or a.get("kind")) for a in ants if isinstance(a, dict)) or "?"


def noise_view(recs, with_plots=True):
    """The noise view of the summary records `recs`; None when none was paired under an antagonist."""
    cells = {}  # placement -> {(mechanism label, antagonist): (ratio, ci)}
    for r in recs:
        f = r.get("extra", "inflation", "p99")
        if not isinstance(f, dict) or not is_number(f.get("ratio")):
            continue
        label = f"{r.suite}/{r.mechanism}"  # the rows of one placement differ by mechanism and wait
        if r.params.get("wait"):
            label += f" wait={r.params['wait']}"
        if r.params.get("size") is not None:
            label += f" {r.params['size']} B"
        cells.setdefault(str(r.params.get("placement") or "-"), {})[(label, _antagonist_label(r))] = (
            f["ratio"], f.get("ci") if isinstance(f.get("ci"), list) else None)
    if not cells:
        return None
    plots = []
    if with_plots:
        from .plots import inflation_heatmap

        for placement, c in sorted(cells.items()):
            plots.append(inflation_heatmap(c, title=f"p99 under each antagonist over p99 quiet — placement {placement}",
                                           note=NOISE_NOTE))
    return NoiseView(plots=[p for p in plots if p], points=sum(len(c) for c in cells.values()), note=NOISE_NOTE)


@dataclass
class Report:
    files: list
    suites: list
    multi: bool
    topologies: list = field(default_factory=list)   # TopologyView
    answers: list = field(default_factory=list)      # answers.Answer: the first screen
    flags: list = field(default_factory=list)        # FlagNote: each flag that occurs
    since: Since | None = None                       # what moved since the last comparable run
    noise: NoiseView | None = None                   # what antagonists did to the tails
    registry: reg.Registry = field(default_factory=reg.Registry)

    @property
    def env(self):
        return env_table(self.files)


def build(files, with_plots=True, saved_topologies=()) -> Report:
    """`saved_topologies`: (path, object) of each saved `ipclab topo --json` to show beside the
    environment's own."""
    multi = len(files) > 1
    recs = [s for f in files for s in summaries(f)]
    registry = reg.of(files)
    suites = []
    for name in registry.ordered(r.suite for r in recs):
        srecs = [r for r in recs if r.suite == name]
        cols = registry.columns(name)
        s = Suite(name=name, anchor=anchor(name), records=srecs, rows=suite_rows(srecs, cols, registry, multi),
                  columns=columns(cols, multi), column_defs=cols, capacity=capacity_rows(srecs, multi),
                  capacity_columns=capacity_columns(multi))
        if with_plots:
            s.plots = suite_plots(name, srecs, multi, registry.plots(name), registry.scaling(name))
        suites.append(s)
    return Report(files=files, suites=suites, multi=multi, registry=registry,
                  topologies=topology_views(files, saved_topologies, with_plots),
                  answers=answers(recs, registry, multi), flags=flag_notes(files, recs), noise=noise_view(recs, with_plots),
                  since=None if multi else since_of(recs))
