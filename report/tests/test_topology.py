"""The measured cache-line round trip between CPUs in the report's environment section: the heatmap,
the classes, the pairs that behave as SMT siblings, sampled and malformed matrices, and a saved
`ipclab topo --json` given with --topology."""

import re
import statistics

import pytest

import fixtures
from ipclab_report import topology
from ipclab_report.cli import main

TITLE = "Cache-line round trip between CPUs"


def environment(html: str) -> str:
    return re.search(r'<section id="environment">(.*?)</section>', html, re.S).group(1)


def report(tmp_path, doc, *extra, name="r"):
    res = fixtures.write(tmp_path / f"{name}.json", doc)
    out = tmp_path / f"{name}.html"
    assert main(["report", res, "-o", str(out), *extra]) == 0
    return out.read_text()


def anchors_with(topo):
    return fixtures.with_topology(fixtures.make_result(suites=["anchors"], samples=10), topo)


@pytest.fixture(scope="module")
def measured(tmp_path_factory, draw):
    """A report of a run whose environment carries a matrix with CPUs 1 and 2 measured as siblings."""
    topo = fixtures.make_topology(hidden=((1, 2, 25.0),))
    html, drawn = draw(lambda: report(tmp_path_factory.mktemp("topo"), anchors_with(topo)))
    return topo, html, drawn


def test_heatmap_in_the_environment_section(measured):
    topo, html, drawn = measured
    env = environment(html)
    assert f'alt="{TITLE}"' in env and "<h3" in env
    (ax,) = drawn[TITLE]
    grid = ax["images"][0]
    # CPUs in domain order (each core's siblings together, one LLC after the other), every pair
    # both ways round, the diagonal blank.
    order = [0, 4, 1, 5, 2, 6, 3, 7]
    ns = {frozenset((p["a"], p["b"])): p["c2c_ns"] for p in topo["c2c"]["pairs"]}
    for i, a in enumerate(order):
        for j, b in enumerate(order):
            if a == b:
                assert grid.mask[i, j]
            else:
                assert grid[i, j] == pytest.approx(ns[frozenset((a, b))])
    assert [int(t) for t in ax["xticks"]] == list(range(8))
    # the LLC boundary: between CPU 5 (LLC 0) and CPU 2 (LLC 1), at index 4
    assert ("_child", [3.5, 3.5], [0, 1]) in [(lbl[:6], xs, ys) for lbl, xs, ys in ax["lines"]]


def test_hidden_sibling_warning_names_the_pair_and_its_figure(measured):
    _, html, _ = measured
    warn = re.search(r'<div class="warn">⚠ (Pairs that behave as SMT siblings[^<]*)</div>', environment(html))
    assert warn, "no warning"
    assert "CPUs 1 and 2: 25.0 ns" in warn.group(1) and "sysfs: cross_llc" in warn.group(1)
    # the badge in the table of contents counts it beside the context's two warnings
    assert re.search(r'href="#environment">Environment <span class="badge b-warn"[^>]*>3<', html)


def test_classes_line_gives_medians_per_class_and_relation(measured):
    topo, html, _ = measured
    line = re.search(r'<p class="classes">([^<]*)</p>', environment(html)).group(1)
    pairs = topo["c2c"]["pairs"]
    for cls in sorted({p["class"] for p in pairs}):
        members = [p for p in pairs if p["class"] == cls]
        med = statistics.median(p["c2c_ns"] for p in members)
        assert f"class {cls}: {med:.1f} ns over {len(members)} pairs" in line
    for rel in ("smt", "llc", "cross_llc"):
        members = [p["c2c_ns"] for p in pairs if p["relation"] == rel]
        assert f"{rel} {statistics.median(members):.1f} ns ({len(members)} pairs)" in line
    # the hidden pair sits in the fastest class beside the true siblings
    assert "class 0: 20.0 ns over 5 pairs (smt 4, cross_llc 1)" in line


def test_layout_marks_llc_and_node_boundaries():
    two = fixtures.make_topology(cores=4, llcs=2, packages=2, smt=False, hidden=())
    order, bounds = topology.layout([3, 2, 1, 0, 9], topology.read_cpus(two))
    assert order == [0, 1, 2, 3, 9]         # 9 is not in the topology: last, no boundary
    assert bounds == [(2, "node")]            # each package is one LLC here
    one = fixtures.make_topology(cores=4, llcs=2, smt=True, hidden=())
    assert topology.layout(range(8), topology.read_cpus(one)) == ([0, 4, 1, 5, 2, 6, 3, 7], [(4, "llc")])


def test_sampled_matrix_leaves_unmeasured_cells_blank(tmp_path, draw):
    topo = fixtures.make_topology(cores=36, llcs=4, packages=2, sampled_per_relation=3, hidden=((0, 1, 24.0),))
    html, drawn = draw(lambda: report(tmp_path, anchors_with(topo)))
    env = environment(html)
    assert f'alt="{TITLE}"' in env and "Sampled: over 64 CPUs only some pairs" in env
    grid = drawn[TITLE][0]["images"][0]
    assert grid.shape == (72, 72)
    measured = len(topo["c2c"]["pairs"])
    assert measured == 3 * 4 + 1 and int((~grid.mask).sum()) == 2 * measured
    assert "CPUs 0 and 1: 24.0 ns" in env


def test_malformed_pieces_are_left_out_and_said(tmp_path, draw):
    topo = fixtures.make_topology(cores=2, llcs=1, smt=False, hidden=())
    topo["cpus"].append({"package": 0})                            # no CPU number: not a CPU
    topo["c2c"]["pairs"] += [
        {"a": 0, "b": 99, "c2c_ns": 50.0, "class": 0, "relation": "llc"},   # a CPU the topology lacks
        {"a": 1, "b": 0, "c2c_ns": 70.0, "class": 0, "relation": "llc"},    # the pair again
        {"a": 0, "b": 1, "c2c_ns": "fast"}, {"a": 0, "b": 1, "c2c_ns": None}, {"a": 0, "b": 1, "c2c_ns": 0},
        {"a": "0", "b": 1, "c2c_ns": 10.0}, {"a": 1, "b": 1, "c2c_ns": 10.0}, "pair", [0, 1],
    ]
    topo["c2c"]["behaves_as_smt_siblings"] = [{"a": 0, "b": 7, "c2c_ns": 9.0}, {"a": 0, "b": 1, "c2c_ns": "x"}]
    html, drawn = draw(lambda: report(tmp_path, anchors_with(topo)))
    env = environment(html)
    assert f'alt="{TITLE}"' in env and "behave as SMT siblings" not in env
    ignored = topology.read(topo).ignored
    assert ignored == [
        "pair 0–99: CPU 99 is not in the topology's CPUs", "pair 1–0: given twice (the first kept)",
        'pair 0–1: round trip "fast" is not a number', "pair 0–1: round trip null is not a number",
        "pair 0–1: not measured (round trip 0 ns)", "pair 0–1: not two CPU numbers",
        "pair 1–1: not two CPU numbers", 'pair "pair": not an object', "pair [0, 1]: not an object",
        "SMT-like pair 0–7: CPU 7 is not in the topology's CPUs", 'SMT-like pair 0–1: round trip "x" is not a number']
    # the report names the first eight and counts the rest
    note = re.search(r'<p class="lede">Left out \(11\): ([^<]*)</p>', env).group(1)
    assert note.replace("&#39;", "'").replace("&#34;", '"') == "; ".join(ignored[:8]) + "; and 3 more."
    # only the one good pair is drawn, both ways round, with its own figure
    grid = drawn[TITLE][0]["images"][0]
    good = topo["c2c"]["pairs"][0]["c2c_ns"]
    assert grid.shape == (2, 2) and int((~grid.mask).sum()) == 2
    assert grid[0, 1] == grid[1, 0] == pytest.approx(good)


@pytest.mark.parametrize("c2c", ["measured", {"pairs": "none"}, {"pairs": []}, None])
def test_broken_matrices_never_crash(tmp_path, c2c):
    topo = fixtures.make_topology(cores=2, llcs=1, smt=False, hidden=())
    topo["c2c"] = c2c
    env = environment(report(tmp_path, anchors_with(topo)))
    if isinstance(c2c, dict):  # a matrix object with nothing to draw: the heading and why, no figure
        assert "Cache-line round trip between CPUs</h3>" in env and f'alt="{TITLE}"' not in env
        assert ("Left out (1): pairs: not a list." in env) == (c2c["pairs"] == "none")
    else:
        assert TITLE not in env


def test_no_matrix_no_section(tmp_path, report_html):
    assert TITLE not in report_html.read_text() and "behave as SMT siblings" not in report_html.read_text()
    unmeasured = fixtures.make_topology(measure=False)   # cpu.topology as sysfs says, nothing measured
    assert TITLE not in report(tmp_path, anchors_with(unmeasured))


def test_saved_topology_file(tmp_path, capsys):
    res = fixtures.write(tmp_path / "r.json", fixtures.make_result(suites=["anchors"], samples=10))
    topo = fixtures.write(tmp_path / "topo.json", fixtures.make_topology(hidden=((3, 4, 21.0),)))
    out = tmp_path / "r.html"
    assert main(["report", res, "-o", str(out), "--topology", topo]) == 0
    env = environment(out.read_text())
    assert f"{TITLE} — topo.json (ipclab topo --json)</h3>" in env and f'alt="{TITLE}"' in env
    assert "CPUs 3 and 4: 21.0 ns" in env
    capsys.readouterr()
    unmeasured = fixtures.write(tmp_path / "sysfs.json", fixtures.make_topology(measure=False))
    for args, said in (([res, "--markdown", str(tmp_path / "s.md"), "--topology", topo], "--topology goes with -o"),
                       ([res, "-o", str(out), "--topology", res], "is not a topology (no \"cpus\" list)"),
                       ([res, "-o", str(out), "--topology", unmeasured], "has no measured matrix"),
                       ([res, "-o", str(out), "--topology", str(tmp_path / "none.json")], "no such file")):
        out.write_text("kept")
        assert main(["report", *args]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and said in err[0], err
        assert out.read_text() == "kept"
