"""Scaling plots: operations per second and CPU per operation against the number of workers (pairs,
producers, server threads, reactors), with the point where the workers fill the CPUs."""

import re

import pytest

import fixtures
from ipclab_report.cli import main
from ipclab_report.load import load
from ipclab_report.model import anchor
from ipclab_report.suites import cpu_marks

PLOTS = {"messaging": ["Scaling with producers (and their consumers)"],
         "echo": ["Scaling with reactors (one per core)"],
         "servers": ["Scaling with server threads", "Scaling with reactors (one per core)"],
         "runtime": ["Scaling with worker pairs"]}


def section(html, suite):
    return re.search(rf'<section id="{anchor(suite)}" class="suite">(.*?)</section>', html, re.S).group(1)


@pytest.fixture(scope="module")
def scaling(tmp_path_factory, draw):
    d = tmp_path_factory.mktemp("scaling")
    res = fixtures.write(d / "s.json", fixtures.make_scaling_result(allowed=(0, 1, 2, 3)))
    out = d / "s.html"
    rc, drawn = draw(lambda: main(["report", res, "-o", str(out)]))
    assert rc == 0
    return out.read_text(), drawn, res


def test_each_scaling_dimension_gets_its_plot_in_its_suite(scaling):
    html, drawn, _ = scaling
    for suite, titles in PLOTS.items():
        body = section(html, suite)
        for title in titles:
            assert f'alt="{title}"' in body, (suite, title)
        assert body.count('alt="Scaling with') == len(titles)
        assert "Dotted line: where the workers fill the CPUs the run could use" in body
    # two panels: operations per second and CPU per operation
    panels = drawn["Scaling with server threads"]
    assert [ax["title"] for ax in panels] == ["operations per second", "CPU per operation"]


def test_one_line_per_mechanism_on_a_log2_axis(scaling):
    _, drawn, res = scaling
    recs = {(s.mechanism, s.params["producers"]): s for s in _summaries(res, "messaging")}
    for ax, metric in zip(drawn["Scaling with producers (and their consumers)"],
                          (lambda r: r.rate("ops_per_s"), lambda r: r.num("cpu", "per_op_ns"))):
        assert ax["xscale"] == "log" and [t for t in ax["xticks"] if 1 <= t <= 8] == [1, 2, 4, 8]
        lines = {label: (xs, ys) for label, xs, ys in ax["lines"] if not label.startswith("_")}
        # consumers change with producers: they split no line
        assert sorted(lines) == ["posix_mq", "shm_mpmc"]
        for mech, (xs, ys) in lines.items():
            assert xs == [1, 2, 4, 8]
            assert ys == [pytest.approx(metric(recs[(mech, x)])) for x in xs]


def _summaries(path, suite):
    from ipclab_report.load import summaries
    return [s for s in summaries(load(path)) if s.suite == suite]


def test_dotted_line_where_the_workers_fill_the_cpus(scaling):
    _, drawn, _ = scaling
    # 4 CPUs allowed: 2 worker pairs fill them, 4 reactors or server threads do
    for title, x in (("Scaling with worker pairs", 2), ("Scaling with server threads", 4),
                     ("Scaling with producers (and their consumers)", 2)):
        for ax in drawn[title]:
            assert ("_child", [x, x]) in [(label[:6], xs) for label, xs, _ in ax["lines"]], title


def test_cpu_marks_read_the_environment(tmp_path):
    doc = fixtures.make_scaling_result(allowed=range(6))
    recs = [s for s in _summaries(fixtures.write(tmp_path / "a.json", doc), "runtime")]
    assert cpu_marks(recs, "pairs", False) == [(3, "6 CPUs")]
    assert cpu_marks(recs, "reactors", False) == [(6, "6 CPUs")]
    doc["context"]["cpu"]["allowed"] = "0-3,8"            # a kernel CPU list
    recs = _summaries(fixtures.write(tmp_path / "b.json", doc), "runtime")
    assert cpu_marks(recs, "threads", False) == [(5, "5 CPUs")]
    del doc["context"]["cpu"]["allowed"]                  # logical_cpus then (2 in the fixture)
    recs = _summaries(fixtures.write(tmp_path / "c.json", doc), "runtime")
    assert cpu_marks(recs, "pairs", False) == [(1, "2 CPUs")]
    del doc["context"]["cpu"]["logical_cpus"]
    recs = _summaries(fixtures.write(tmp_path / "d.json", doc), "runtime")
    assert cpu_marks(recs, "pairs", False) == []


def test_a_single_value_draws_no_scaling_plot(report_html):
    # The standard fixture fixes producers, threads and reactors; only pingpong varies its pairs.
    html = report_html.read_text()
    for suite in ("messaging", "servers", "echo", "runtime", "fileio", "cachecalc", "anchors"):
        assert 'alt="Scaling with' not in section(html, suite), suite
    assert 'alt="Scaling with worker pairs"' in section(html, "pingpong")
