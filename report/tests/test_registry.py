"""The report reads the C++ registry (`ipclab list --json`, or the registry a result carries in its
context): a suite it has never heard of gets its page, its table, the plots it names (else the
generic chart), in the registry's order, and its names as the console gives them."""

import copy
import json
import os
import random
import re
import subprocess
import sys

import fixtures
from ipclab_report import registry, suites
from ipclab_report.cli import main
from ipclab_report.load import load
from ipclab_report.model import build


def _fixture_result(tmp_path):
    """anchors, and a made-up suite `fixturesuite` (a `size` and a `depth` parameter) that the
    result's registry puts first."""
    doc = fixtures.make_result(suites=["anchors"], samples=30)
    reg = copy.deepcopy(registry.from_binary())
    reg["suites"] = [s for s in reg["suites"] if s["name"] == "anchors"]
    reg["mechanisms"] = [m for m in reg["mechanisms"] if m["suite"] == "anchors"]
    reg["suites"].insert(0, {"name": "fixturesuite", "help": "made up", "mechanisms": ["widget"],
                             "columns": reg["columns"]})
    reg["mechanisms"].append({"suite": "fixturesuite", "name": "widget", "kind": "loop", "help": "made up",
                              "params": [{"name": "size", "type": "size", "default": "64", "help": "bytes"},
                                         {"name": "depth", "type": "int", "default": "1", "help": "depth"}]})
    doc["context"]["registry"] = reg
    rng = random.Random(7)
    for size in (1024, 2048):
        spec = ("fixturesuite", "widget", {"size": size, "depth": 1}, 500 + size, 0, "op", 1.0, None, "ok", None)
        iters = fixtures.iterations(spec, rng, repetitions=2, samples=30)
        doc["benchmarks"] += iters + [fixtures._aggregate(iters)]
    return fixtures.write(tmp_path / "r.json", doc), reg


def test_a_suite_the_report_never_heard_of_gets_its_page_and_table(tmp_path):
    path, reg = _fixture_result(tmp_path)
    pages = tmp_path / "pages"
    assert main(["report", path, "--pages", str(pages)]) == 0
    page = (pages / "fixturesuite.md").read_text()
    assert "# fixturesuite: results" in page
    lines = page.splitlines()
    at = lines.index("## Benchmarks")
    header = lines[at + 2]
    figures = [c["key"] for c in reg["columns"] if c.get("value")]
    assert header == "| " + " | ".join(["mechanism", "size"] + figures) + " |", header
    rows = [ln for ln in lines[at + 4:] if ln.startswith("| widget |")]
    assert len(rows) == 2 and all(len(r.split(" | ")) == 2 + len(figures) for r in rows), rows
    assert "The same in every row: depth 1." in page


def test_its_table_and_chart_in_the_html_and_summary_in_registry_order(tmp_path):
    path, reg = _fixture_result(tmp_path)
    md = tmp_path / "s.md"
    assert main(["report", path, "-o", str(tmp_path / "r.html"), "--markdown", str(md)]) == 0
    text = md.read_text()
    # The registry puts it first; a suite no registry named would come after the known ones.
    assert text.index("## fixturesuite") < text.index("## anchors")
    head = next(ln for ln in text.split("## fixturesuite")[1].splitlines() if ln.startswith("| "))
    assert head == "| " + " | ".join(c["key"] for c in reg["columns"]) + " |"
    # Sizes as the console shows them (the registry says `size` is a size), only what varies.
    assert "| `fixturesuite/widget size:1K` |" in text and "| `fixturesuite/widget size:2K` |" in text
    report = build([load(path)])
    suite = next(s for s in report.suites if s.name == "fixturesuite")
    assert [p.title for p in suite.plots if p.title.startswith("Time per operation")], [p.title for p in suite.plots]


def test_a_file_without_a_registry_and_no_ipclab_to_ask_is_one_line_exit_2(tmp_path):
    path = fixtures.write(tmp_path / "old.json", fixtures.make_result(suites=["anchors"], samples=10))
    env = {k: v for k, v in os.environ.items() if k != "IPCLAB_BIN"}
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(registry.__file__)))
    p = subprocess.run([sys.executable, "-m", "ipclab_report", "report", path, "-o", str(tmp_path / "r.html")],
                       capture_output=True, text=True, env=env)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "ipclab report" in p.stderr
    assert not (tmp_path / "r.html").exists()


# --- plots named in the registry: a suite's `plots` and `scaling` -----------------------------------

def _plots_result(tmp_path, suites):
    """anchors, and made-up suites {name: (plots, scaling)} of one mechanism `widget` (a `size` and a
    `producers` parameter): sizes 64 and 1024 at one producer, 2 and 4 producers at 64 B."""
    doc = fixtures.make_result(suites=["anchors"], samples=30)
    reg = copy.deepcopy(registry.from_binary())
    reg["suites"] = [s for s in reg["suites"] if s["name"] == "anchors"]
    reg["mechanisms"] = [m for m in reg["mechanisms"] if m["suite"] == "anchors"]
    rng = random.Random(7)
    for name, (plots, scaling) in suites.items():
        reg["suites"].append({"name": name, "help": "made up", "mechanisms": ["widget"], "columns": reg["columns"],
                              "plots": plots, "scaling": scaling})
        reg["mechanisms"].append({"suite": name, "name": "widget", "kind": "transport", "help": "made up",
                                  "params": [{"name": "size", "type": "size", "default": "64", "help": "bytes"},
                                             {"name": "producers", "type": "int", "default": "1", "help": "n"}]})
        for size, producers in ((64, 1), (1024, 1), (64, 2), (64, 4)):
            spec = (name, "widget", {"size": size, "producers": producers}, 500 + size / producers, size,
                    "one_way", 1.0, None, "ok", None)
            iters = fixtures.iterations(spec, rng, repetitions=2, samples=30)
            doc["benchmarks"] += iters + [fixtures._aggregate(iters)]
    doc["context"]["registry"] = reg
    return fixtures.write(tmp_path / "r.json", doc)


def _suite_section(html, suite):
    from ipclab_report.model import anchor
    return re.search(rf'<section id="{anchor(suite)}" class="suite">(.*?)</section>', html, re.S).group(1)


def test_a_suite_that_names_known_plots_and_a_scaling_dimension_gets_them(tmp_path):
    path = _plots_result(tmp_path, {"widgets": (["rate_vs_size", "bandwidth_vs_size"], ["producers"])})
    out = tmp_path / "r.html"
    assert main(["report", path, "-o", str(out)]) == 0
    body = _suite_section(out.read_text(), "widgets")
    titles = re.findall(r'<img [^>]*alt="([^"]*)"', body)
    assert titles[:3] == ["Messages per second vs message size", "Bandwidth vs message size",
                          "Scaling with producers (and their consumers)"], titles


def test_an_unknown_plot_name_is_warned_about_once_and_its_suite_gets_the_generic_chart(tmp_path, capsys,
                                                                                          monkeypatch):
    monkeypatch.setattr(suites, "_warned", set())
    path = _plots_result(tmp_path, {"widgets": (["no_such_plot", "rate_vs_size"], []),
                                    "gadgets": (["no_such_plot"], [])})
    report = build([load(path)])
    plots = {s.name: [p.title for p in s.plots] for s in report.suites}
    assert plots["widgets"][0] == "Messages per second vs message size", plots["widgets"]
    assert plots["gadgets"] == ["Time per operation"], plots["gadgets"]
    warnings = [ln for ln in capsys.readouterr().err.splitlines() if "no_such_plot" in ln]
    assert len(warnings) == 1 and "gadgets" not in warnings[0], warnings


def _list_json():
    p = subprocess.run([os.environ["IPCLAB_BIN"], "list", "--json"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_every_suite_of_the_binary_names_plots_the_report_knows_and_parameters_it_has():
    doc = _list_json()
    named = set()
    for s in doc["suites"]:
        assert isinstance(s.get("plots"), list) and isinstance(s.get("scaling"), list), s["name"]
        assert set(s["plots"]) <= set(suites.PLOTS), (s["name"], set(s["plots"]) - set(suites.PLOTS))
        params = {p["name"] for m in doc["mechanisms"] if m["suite"] == s["name"] for p in m["params"]}
        assert set(s["scaling"]) <= params, (s["name"], set(s["scaling"]) - params)
        named |= set(s["plots"])
    # and every builder the report has is one some suite names
    assert named == set(suites.PLOTS), set(suites.PLOTS) - named


def test_a_run_writes_the_same_plots_and_scaling_into_its_context(tmp_path):
    out = tmp_path / "r.json"
    env = dict(os.environ, TMPDIR=str(tmp_path), XDG_STATE_HOME=str(tmp_path / "state"))
    env.pop("IPCLAB_FAULT", None)
    p = subprocess.run([os.environ["IPCLAB_BIN"], "run", "pingpong/thread", "-p", "pairs=1", "--duration", "0.05",
                        "--warmup", "0", "--repetitions", "1", "--json", str(out)],
                       capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    ran = json.loads(out.read_text())["context"]["registry"]["suites"]
    listed = {s["name"]: s for s in _list_json()["suites"]}
    assert [(s["name"], s["plots"], s["scaling"]) for s in ran] == [
        ("pingpong", listed["pingpong"]["plots"], listed["pingpong"]["scaling"])]
    assert ran[0]["plots"] and ran[0]["scaling"] == ["pairs"]
