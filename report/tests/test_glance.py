"""What a reader sees at a glance (issue 52): every axis says its unit, no bar on a log axis, no
chart that carries no information, a 15-line CDF in small multiples of distinct colours, error
bars from the repetitions, flagged series folded behind their flag, the timer panel explained."""

import random
import re

import pytest
from matplotlib.ticker import NullFormatter

import fixtures
from ipclab_report import plots, suites
from ipclab_report.cli import main
from ipclab_report.load import load, summaries


@pytest.fixture
def figures(monkeypatch):
    """The matplotlib figures the plots draw, kept open (each as it was when saved)."""
    import matplotlib.pyplot as plt

    kept = []

    def keep(fig):
        kept.append(fig)
        return "data:image/svg+xml;base64,"
    monkeypatch.setattr(plots, "_svg_uri", keep)
    monkeypatch.setitem(plt.rcParams, "figure.max_open_warning", 0)
    yield kept
    for fig in kept:
        plt.close(fig)


def test_a_chart_whose_every_value_is_the_same_is_a_line_of_text(figures):
    p = plots.bars([f"model{i}" for i in range(10)], {"processed": [100] * 10, "lost": [0] * 10},
                   title="Sessions", xlabel="sessions")
    assert p.uri == "" and not figures
    assert "Zero on every bar, so not drawn: lost." in p.note
    assert "Not drawn: processed is 100 for every one of the 10." in p.note
    # one different value is information: drawn
    p = plots.bars([f"model{i}" for i in range(10)], {"processed": [100] * 9 + [97]}, title="S", xlabel="sessions")
    assert p.uri and len(figures) == 1


def test_values_on_a_log_axis_are_dots_and_its_ticks_all_carry_units(figures):
    p = plots.bars(["a", "b", "c"], {"p50": [6e6, 2e7, 9e3], "p99": [8e6, 3e7, 2e4]}, title="Session latency",
                   xlabel="session latency", time_axis=True)
    (ax,) = figures[0].axes
    assert ax.get_xscale() == "log" and not ax.patches          # no bars: a bar's length means nothing there
    assert [len(ln.get_xdata()) for ln in ax.get_lines()] == [3, 3]
    assert isinstance(ax.xaxis.get_minor_formatter(), NullFormatter)  # no raw 6×10⁶ among "10 ms"
    figures[0].canvas.draw()
    labels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert labels and all(re.search(r"(ns|µs|ms|s)$", t) for t in labels), labels
    assert "log scale" in ax.get_xlabel() and p.uri


def _report_figures(tmp_path, figures, doc, name="r"):
    res = fixtures.write(tmp_path / f"{name}.json", doc)
    assert main(["report", res, "-o", str(tmp_path / f"{name}.html")]) == 0
    return (tmp_path / f"{name}.html").read_text()


def test_every_axis_of_every_chart_says_what_it_measures(tmp_path, figures):
    _report_figures(tmp_path, figures, fixtures.make_result(samples=40))
    assert len(figures) > 15
    for fig in figures:
        sup_x = fig._supxlabel.get_text() if fig._supxlabel else ""
        for ax in fig.axes:
            if not ax.get_visible() or ax.get_label() == "<colorbar>":
                continue
            title = fig._suptitle.get_text() if fig._suptitle else ax.get_title()
            assert ax.get_xlabel() or sup_x, f"{title}: no x label"
            # a y axis says what it measures in its label, or in its ticks: categories (a bar per
            # benchmark) or figures with their unit (10 µs)
            fig.canvas.draw()
            ticks = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
            shared = any(o.get_ylabel() for o in ax.get_shared_y_axes().get_siblings(ax))  # the panel beside it
            assert shared or any(re.search(r"[A-Za-zµ]", t) for t in ticks), f"{title}: no y label"


def _transports(n, pattern="roundtrip", kind="rtt", reps=3):
    rng = random.Random(4)
    benchmarks = []
    for i in range(n):
        spec = ("messaging", f"transport{i:02d}", {"pattern": pattern, "size": 64}, 1000 + 150 * i,
                64, kind, 1.0, None, "ok", None)
        iters = fixtures.iterations(spec, rng, repetitions=reps, samples=40)
        benchmarks += iters + [fixtures._aggregate(iters)]
    return {"schema_version": 1, "context": fixtures.context(), "benchmarks": benchmarks}


def test_a_fifteen_line_cdf_is_small_multiples_of_distinct_colours(tmp_path, figures):
    _report_figures(tmp_path, figures, _transports(15))
    fig = next(f for f in figures if f._suptitle and f._suptitle.get_text() == "Round-trip latency CDF")
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == 4
    named = []
    for ax in panels:
        coloured = [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]
        assert 1 <= len(coloured) <= plots.CDF_PER_PANEL
        assert len({ln.get_color() for ln in coloured}) == len(coloured)   # no two alike in a panel
        assert len(ax.get_lines()) - len(coloured) == 15                    # every line, grey, behind
        named += [ln.get_label() for ln in coloured]
    assert sorted(named) == sorted(set(named)) and len(named) == 15
    # the colours themselves stay apart: no two of a panel's palette closer than a clear step
    from matplotlib.colors import to_rgb
    cs = [to_rgb(c) for c in plots.CDF_COLOURS[:plots.CDF_PER_PANEL]]
    assert min(sum((a - b) ** 2 for a, b in zip(x, y)) ** 0.5 for i, x in enumerate(cs) for y in cs[i + 1:]) > 0.35


def test_error_bars_come_from_the_repetitions(tmp_path, figures):
    html = _report_figures(tmp_path, figures, fixtures.make_result(suites=["anchors"], samples=20))
    fig = next(f for f in figures if f.axes[0].get_title() == "Time per operation")
    ax = fig.axes[0]
    assert ax.containers   # the error bars
    recs = [r for r in summaries(load(str(tmp_path / "r.json"))) if r.ok]
    r = recs[0]
    t = r.time_per_op_ns
    # the harness's 95% interval of the median where the record has one...
    ci = r.raw["ci"]["time_per_op_ns"]
    assert plots.interval(r, lambda r: r.time_per_op_ns, "time") == pytest.approx(tuple(ci))
    rlo, rhi = plots.interval(r, lambda r: 1e9 / r.time_per_op_ns, "rate")
    assert rlo == pytest.approx(1e9 / ci[1]) and rhi == pytest.approx(1e9 / ci[0])
    r.raw["ci"]["p50_ns"] = [100.0, 120.0]
    assert plots.interval(r, lambda r: 110.0, "time", "p50_ns") == (100.0, 120.0)
    # ...else the lowest to the highest repetition, moved to the figure drawn
    del r.raw["ci"]
    vals = r.get("spread", "values")
    lo, hi = plots.interval(r, lambda r: 2 * r.time_per_op_ns, "time")
    assert lo == pytest.approx(2 * min(vals)) and hi == pytest.approx(2 * max(vals))
    r.raw["spread"]["values"] = [t]
    assert plots.interval(r, lambda r: r.time_per_op_ns, "time") is None   # one repetition: no interval
    assert plots.ERROR_NOTE in html


def test_flagged_time_series_are_folded_behind_their_flag(tmp_path, figures):
    from test_series_flags import _flagged_doc

    doc, _ = _flagged_doc()
    html = _report_figures(tmp_path, figures, doc)
    m = re.search(r'<details class="flagged"><summary>(.*?)</summary>\s*<figure>\s*'
                  r'<img [^>]*alt="Time series of flagged runs"',
                  html, re.S)
    assert m and re.fullmatch(r"⚑ (\d+) flagged benchmarks? \(bimodal ×\1\): their time series", m.group(1))
    assert html.count('<details class="flagged">') == 1


def test_the_timer_panel_says_why_runtimes_differ_a_thousandfold(tmp_path, figures):
    rng = random.Random(3)
    benchmarks = []
    for rt, ns in (("ipcrt", 56), ("tokio_ct", 1.05e6), ("asio", 18_000)):
        for op in ("timer", "switch"):
            spec = ("runtime", f"{op}_{rt}", {"delay_us": 1} if op == "timer" else {}, ns if op == "timer" else 40,
                    0, None, 1.0, None, "ok", None)
            iters = fixtures.iterations(spec, rng, repetitions=2, samples=20)
            benchmarks += iters + [fixtures._aggregate(iters)]
    html = _report_figures(tmp_path, figures, {"schema_version": 1, "context": fixtures.context(),
                                               "benchmarks": benchmarks})
    assert "the timer&#39;s resolution, not the cost" in html or "the timer's resolution, not the cost" in html
    # without such a gap, no such note
    recs = [r for r in summaries(load(str(tmp_path / "r.json"))) if not r.mechanism.startswith("timer_")]
    assert suites.TIMER_NOTE not in suites.time_per_operation_panels(recs, False).note
