"""CPU matrices (`ipclab run --cpu-matrix`): a heatmap per benchmark run on every pair of CPUs, beside
the cache-line round trip; bars per class for those run on a pair per class; and none of their
points in the suite's other plots."""

import re

import pytest

import fixtures
from ipclab_report import model
from ipclab_report.cli import main
from ipclab_report.load import load_all

SPIN = "thread/wait:spin/pairs:1: p50 round trip per CPU pair"
PROCESS = "process/wait:spin/pairs:1: p50 round trip per CPU pair"
CLASSES = "thread/wait:futex/pairs:1: p50 round trip per CPU placement class"
ORDER = [0, 2, 1, 3]   # make_topology(cores=2, llcs=1): 0 and 2 share core 0, 1 and 3 core 1


def built(draw, tmp_path, doc, name="m.json"):
    path = fixtures.write(tmp_path / name, doc)
    rep, drawn = draw(lambda: model.build(load_all([path])))
    (suite,) = rep.suites
    return suite, drawn


@pytest.fixture(scope="module")
def matrix(tmp_path_factory, draw):
    return built(draw, tmp_path_factory.mktemp("matrix"), fixtures.make_cpu_matrix_result())


def points(suite, mech, wait):
    return {r.cpu_pair: r for r in suite.records
            if r.is_cpu_matrix and r.mechanism == mech and r.params["wait"] == wait}


def test_a_heatmap_per_benchmark_beside_the_cache_line(matrix):
    suite, drawn = matrix
    titles = [p.title for p in suite.plots]
    assert SPIN in titles and PROCESS in titles
    c2c, bench = drawn[PROCESS]
    assert (c2c["title"], bench["title"]) == ("cache-line round trip (ipclab topo)", "this benchmark")
    recs = points(suite, "process", "spin")
    grid = bench["images"][0]
    for i, a in enumerate(ORDER):
        for j, b in enumerate(ORDER):
            r = recs.get((a, b)) or recs.get((b, a))
            if a == b or (r and not r.ok):
                assert grid.mask[i, j], (a, b)
            else:  # the p50 round trip of the pair's own run, both ways round, in ns (under 10 µs)
                assert grid[i, j] == pytest.approx(r.latency("p50")), (a, b)
    assert grid.mask[ORDER.index(1), ORDER.index(3)] and grid.mask[ORDER.index(3), ORDER.index(1)]
    # the cache line over the same CPUs in the same order
    assert c2c["images"][0].shape == (4, 4) and c2c["images"][0][0, 1] == pytest.approx(20.0, rel=0.05)
    plot = next(p for p in suite.plots if p.title == PROCESS)
    assert "Not in the plot: CPUs 1,3 (failed: pong side did not answer within 10 s)." in plot.note
    assert plot.used == {id(r) for r in recs.values() if r.ok}


def test_per_class_points_are_bars_per_class(matrix):
    suite, drawn = matrix
    (ax,) = drawn[CLASSES]
    recs = points(suite, "thread", "futex")
    assert ax["bars"] == [("smt · CPUs 0,2", pytest.approx(recs[(0, 2)].latency("p50"))),
                          ("llc · CPUs 0,1", pytest.approx(recs[(0, 1)].latency("p50")))]


def test_matrix_points_stay_out_of_the_other_plots(matrix):
    suite, drawn = matrix
    ids = {id(r) for r in suite.records if r.is_cpu_matrix}
    others = [p for p in suite.plots if p.title not in (SPIN, PROCESS, CLASSES)]
    assert [p.title for p in others] == ["System effective OPS vs worker pairs", "Fairness vs worker pairs",
                                         "Round-trip latency CDF", "Scaling with worker pairs"]
    for p in others:
        assert not p.used & ids, p.title
        assert len(p.used) == 3, p.title          # the ordinary pairs=1, 2, 4 records
    (ax,) = drawn["System effective OPS vs worker pairs"]
    assert [(label, xs) for label, xs, _ in ax["lines"] if not label.startswith("_")] == [("spin", [1, 2, 4])]


def test_time_per_op_when_a_point_has_no_latency(tmp_path, draw):
    doc = fixtures.make_cpu_matrix_result()
    doc["benchmarks"] = [b for b in doc["benchmarks"] if b["name"].startswith("pingpong/thread/wait:spin/pairs:1/")]
    for b in doc["benchmarks"]:
        if b["name"].endswith("cpus=0,1"):
            b["latency_ns"] = None
    suite, drawn = built(draw, tmp_path, doc)
    title = "thread/wait:spin/pairs:1: time per operation per CPU pair"
    assert title in [p.title for p in suite.plots] and SPIN not in [p.title for p in suite.plots]
    recs = points(suite, "thread", "spin")
    grid = drawn[title][1]["images"][0]
    assert grid[ORDER.index(2), ORDER.index(3)] == pytest.approx(recs[(2, 3)].time_per_op_ns)


def test_malformed_points_are_named_not_drawn(tmp_path, draw):
    doc = fixtures.make_cpu_matrix_result()
    del doc["context"]["cpu"]["topology"]            # no topology: CPUs by number, no cache-line panel
    for b in doc["benchmarks"]:
        if b["name"].startswith("pingpong/process/") and b["name"].endswith("cpus=0,1"):
            b["params"]["cpus"] = "zero,one"
            b["placement"]["pair"] = ["0", 1]
    suite, drawn = built(draw, tmp_path, doc)
    (bench,) = drawn[PROCESS]
    grid = bench["images"][0]
    assert grid.shape == (4, 4) and grid.mask[0, 1] and not grid.mask[0, 2]
    plot = next(p for p in suite.plots if p.title == PROCESS)
    assert "process/wait:spin/pairs:1/cpus=0,1 (names no CPU pair)" in plot.note
    # the class of a per-class point without extra.cpu_class comes from the topology, here absent
    doc["benchmarks"] = [b for b in doc["benchmarks"] if (b.get("extra") or {}).get("cpu_matrix") == "per_class"]
    for b in doc["benchmarks"]:
        b["extra"].pop("cpu_class", None)  # an aggregate shares its extra with an iteration
    suite, drawn = built(draw, tmp_path, doc, "n.json")
    assert [c for c, _ in drawn[CLASSES][0]["bars"]] == ["unknown class · CPUs 0,1", "unknown class · CPUs 0,2"]


def test_without_a_matrix_there_is_no_matrix_view(report_html):
    text = report_html.read_text()
    assert "per CPU pair" not in text and "per CPU placement class" not in text


def test_html_report_shows_the_matrix_views(tmp_path):
    res = fixtures.write(tmp_path / "m.json", fixtures.make_cpu_matrix_result())
    out = tmp_path / "m.html"
    assert main(["report", res, "-o", str(out)]) == 0
    body = re.search(r'<section id="suite-pingpong" class="suite">(.*?)</section>', out.read_text(), re.S).group(1)
    for title in (SPIN, PROCESS, CLASSES):
        assert f'alt="{title}"' in body
    assert 'alt="Time per operation' not in body
