"""The self-contained HTML report: one file, plots embedded as SVG data URIs, no network."""

from __future__ import annotations

import datetime
import os

import jinja2
import markupsafe

from .answers import COST_NOTE
from .model import all_warnings, build, machine_line, warnings
from .tables import suite_rows


OPEN_PLOTS = 2   # charts per suite shown open: one row of the grid; the rest folded under it


def split_plots(plots):
    """(shown, more, flagged) of a suite's plots: the first OPEN_PLOTS drawn ones and every chart
    that was not drawn (a line saying why) shown; the other drawn ones folded behind one summary
    (`more`); the flagged time series folded behind their flags."""
    flagged = [p for p in plots if p.collapsed]
    rest = [p for p in plots if not p.collapsed]
    drawn = [p for p in rest if p.uri]
    first = {id(p) for p in drawn[:OPEN_PLOTS]}
    shown = [p for p in rest if not p.uri or id(p) in first]
    return shown, [p for p in drawn if id(p) not in first], flagged


def environment() -> jinja2.Environment:
    """The templates' environment, with the filters they use."""
    env = jinja2.Environment(loader=jinja2.PackageLoader("ipclab_report", "templates"),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True)
    env.filters["basename"] = os.path.basename
    # let long benchmark names break after a '/', not in the middle of a parameter
    env.filters["wbr"] = lambda name: markupsafe.Markup("/<wbr>").join(markupsafe.escape(p) for p in str(name).split("/"))
    return env


def generated() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def render(files, saved_topologies=()) -> str:
    """`saved_topologies`: (path, object) of each saved `ipclab topo --json` to show in the environment."""
    report = build(files, saved_topologies=saved_topologies)
    env = environment()
    totals = {k: sum(s.count(k) for s in report.suites) for k in ("ok", "failed", "skipped")}

    def plot_rows(suite, plot):
        return suite_rows([r for r in suite.records if id(r) in plot.used], suite.column_defs, report.registry,
                          report.multi)

    return env.get_template("report.html.j2").render(
        files=files, suites=report.suites, multi=report.multi, env=report.env, totals=totals,
        warnings=warnings, split_plots=split_plots, all_warnings=all_warnings(files), machine=machine_line,
        plot_rows=plot_rows,
        warning_count=len(all_warnings(files)) + sum(1 for t in report.topologies if t.warning),
        topologies=report.topologies, answers=report.answers, cost_note=COST_NOTE, flags=report.flags,
        since=report.since, noise=report.noise,
        generated=generated())


def render_history(store: str, series, whose: str) -> str:
    """The page of `ipclab history --html`: a trend chart and a table of runs per series."""
    from . import history, plots

    views = []
    for s in series:
        note = (f"Each point: the median {s.metric} of one run over its repetitions; bars: the bootstrap 95% "
                "interval of that median (none for one repetition or a stored aggregate alone). Dashed lines: "
                "change points, with the change of the median level in percent; dotted: each level, the median "
                "of its runs.")
        head, rows = history.run_rows(s)
        views.append({"series": s, "short": s.name.split("/", 1)[-1], "where": history.where(s), "head": head,
                      "rows": rows, "changes": [history.change_text(s, c) for c in s.changes],
                      "noise": history.noise_text(s),
                      "plot": plots.trend(s, title=s.name, ylabel=f"{s.metric}, median of a run ({history.unit(s.metric)})",
                                          note=note)})
    return environment().get_template("history.html.j2").render(
        store=store, whose=whose, views=views, method=history.METHOD, generated=generated())
