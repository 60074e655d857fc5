"""Steal time (docs/methodology.md, "Steal time"): a repetition whose window a hypervisor took more
than 5% of is flagged `steal` by the harness; the report carries the flag into the summary (the
harness's aggregate, or one computed here), notes it beside the status, titles its time-series
panel with it, and a reduced result keeps the steal figures."""

import json

import fixtures
from ipclab_report import plots, tables
from ipclab_report.cli import main
from ipclab_report.load import load, summaries

NAME = "messaging/pipe/mode:throughput/size:8192/producers:1/consumers:1/placement:cross"


def _stolen(aggregates):
    """The messaging fixtures with steal figures in every record; NAME's last repetition lost 12%
    of its window, and says so as the harness would."""
    doc = fixtures.make_result(suites=["messaging"], samples=20, aggregates=aggregates)
    for b in doc["benchmarks"]:
        if "cpu" not in b or not b.get("ops"):  # skipped
            continue
        share = 0.12 if b["name"] == NAME and b["run_type"] == "iteration" and b["repetition"] == 2 else 0.01
        if b["run_type"] == "aggregate":
            share = 0.01  # the median repetition's
            if b["name"] == NAME:
                b["flags"] = sorted(set(b.get("flags", [])) | {"steal"})
        b["cpu"].update(steal_s=share * b["wall_s"] * 2, steal_share=share, steal_cpus=[0, 1],
                        steal_per_op_ns=share * b["wall_s"] * 2e9 / b["ops"])
        if share > 0.05:
            b["flags"] = ["steal"]
            b["warnings"] = [{"message": "the hypervisor ran other work ... for 12.0% of its measured window",
                              "remedy": "rerun on a host with dedicated (pinned) vCPUs"}]
    return doc


def test_the_flag_reaches_the_summary_its_note_and_its_panel(tmp_path):
    for aggregates in (True, False):
        rf = load(fixtures.write(tmp_path / f"r{aggregates}.json", _stolen(aggregates)))
        recs = {s.name: s for s in summaries(rf)}
        stolen = recs[NAME]
        assert "steal" in stolen.flags, aggregates
        assert stolen.steal_note == "steal: a hypervisor took more than 5% of a measured window's CPU time (1.0% median)"
        assert "steal" in plots.series_flags(stolen)
        cols = [{"key": "name", "format": "name", "value": []}, {"key": "status", "format": "status", "value": []}]
        assert tables.row(stolen, cols)["error"] == stolen.steal_note
        assert tables.row(stolen, cols)["status"] == "ok"
        for name, r in recs.items():
            if name != NAME and r.ok:
                assert "steal" not in plots.series_flags(r) and r.steal_note == "" and not tables.row(r, cols)["error"]
        # the repetition itself
        it = [x for x in rf.repetitions(NAME) if x.get("repetition") == 2][0]
        assert it.steal_note == "steal: a hypervisor took more than 5% of a measured window's CPU time (12.0% here)"


def test_the_panel_is_titled_with_it_and_the_html_notes_it(tmp_path, draw):
    res = fixtures.write(tmp_path / "r.json", _stolen(True))
    out = tmp_path / "r.html"
    rc, drawn = draw(lambda: main(["report", res, "-o", str(out)]))
    assert rc == 0
    titles = [p["title"] for fig in drawn.values() for p in fig if " — " in p["title"]]
    assert any("pipe" in t and "steal" in t for t in titles), titles
    assert "more than 5% of a measured window" in out.read_text()


def test_a_reduced_result_keeps_the_steal_figures(tmp_path):
    res = fixtures.write(tmp_path / "r.json", _stolen(False))
    small = tmp_path / "small.json"
    assert main(["report", res, "--reduce", str(small)]) == 0
    red = {b["name"]: b for b in json.load(open(small))["benchmarks"]}
    assert red[NAME]["flags"] == ["steal"]
    assert red[NAME]["cpu"]["steal_share"] == 0.01
    assert "steal_per_op_ns" in red[NAME]["cpu"] and "steal_s" not in red[NAME]["cpu"]
