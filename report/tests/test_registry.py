"""The report reads the C++ registry (`ipclab list --json`, or the registry a result carries in its
context): a suite it has never heard of gets its page, its table and the generic chart, in the
registry's order, and its names as the console gives them."""

import copy
import os
import random
import subprocess
import sys

import fixtures
from ipclab_report import registry
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
