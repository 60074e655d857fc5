"""A suite's page tables, its first-screen questions and its roles come from its registry entry
(`Suite::tables`, `answers`, `headline`, `floors`; report/ipclab_report/figures.py): a suite the
report has never heard of, declared only in the result's registry, gets them with no report code
naming it; a declaration the report cannot read is one line and exit 2, before any file is written."""

import json
import os
import random

import pytest

import fixtures
from ipclab_report import registry
from ipclab_report.cli import main
from ipclab_report.util import fmt_si, fmt_time_ns

NEW = "dialup"   # a suite no report code names
RTT_NS = {"v34": 90000, "v90": 60000, "isdn": 20000}


def _entry(**declared):
    cols = registry.from_binary()["columns"]   # every table's columns, as the built ipclab declares them
    entry = {"name": NEW, "help": "modems, beside nothing", "mechanisms": sorted(RTT_NS), "columns": cols,
             "plots": [], "scaling": [], "answers": ["small_message_latency"], "beside": "",
             "headline": True, "floors": False,
             "tables": [{"id": "handshakes", "title": "Handshakes: one request in flight, answered",
                         "where": "pattern=roundtrip", "label": "modem", "across": "", "hide": [],
                         "figures": [{"key": "answers/s", "figure": "rate"},
                                     {"key": "RTT p50", "figure": "latency:p50"},
                                     {"key": "CPU/handshake", "figure": "cpu"}]}]}
    entry.update(declared)
    return entry


def _doc(**declared):
    """Round trips and throughput of three modems of suite NEW, with NEW's registry entry in the
    context (as `ipclab run` writes it) and no other suite."""
    rng = random.Random(3)
    benchmarks = []
    for mech, ns in RTT_NS.items():
        for pattern in ("roundtrip", "throughput"):
            for placement in ("same", "cross"):
                params = {"pattern": pattern, "size": 64, "mode": "threads", "placement": placement}
                kind = "rtt" if pattern == "roundtrip" else "one_way"
                spec = (NEW, mech, params, ns, 128, kind, 1.0, None, "ok", None)
                iters = fixtures.iterations(spec, rng, repetitions=3, samples=100)
                benchmarks += iters + [fixtures._aggregate(iters)]
    ctx = fixtures.context()
    ctx["registry"] = {"columns": registry.from_binary()["columns"], "suites": [_entry(**declared)],
                       "mechanisms": [{"suite": NEW, "name": m, "kind": "workload", "help": "", "params": []}
                                      for m in sorted(RTT_NS)]}
    return {"schema_version": 1, "context": ctx, "benchmarks": benchmarks}


def _pages(tmp_path, doc):
    res = fixtures.write(tmp_path / "r.json", doc)
    pages = tmp_path / "pages"
    readme = tmp_path / "README.md"
    readme.write_text("# x\n<!-- reference:begin -->\n<!-- reference:end -->\n")
    rc = main(["report", res, "--pages", str(pages), "--readme", str(readme)])
    return rc, res, pages, readme


def test_a_suite_the_report_never_heard_of_gets_its_declared_table(tmp_path):
    rc, res, pages, readme = _pages(tmp_path, _doc())
    assert rc == 0
    md = (pages / f"{NEW}.md").read_text()
    # Its own table, under its own title and label, with the figures it names...
    start = md.index("## Handshakes: one request in flight, answered")
    section = md[start:md.index("\n## ", start)]
    table = [ln for ln in section.splitlines() if ln.startswith("|")]
    head = [c.strip() for c in table[0].strip("|").split("|")]
    assert head == ["modem", "placement", "answers/s", "RTT p50", "CPU/handshake"]
    body = [[c.strip() for c in ln.strip("|").split("|")] for ln in table[2:]]
    assert len(body) == 6   # the roundtrip records only: where=pattern=roundtrip
    recs = [b for b in json.load(open(res))["benchmarks"]
            if b["run_type"] == "aggregate" and b["params"]["pattern"] == "roundtrip"]
    isdn = next(b for b in recs if b["mechanism"] == "isdn" and b["params"]["placement"] == "cross")
    row = next(r for r in body if r[0] == "isdn" and r[1] == "cross")
    assert row[2:] == [fmt_si(isdn["rates"]["ops_per_s"], "/s"), fmt_time_ns(isdn["latency_ns"]["p50"]),
                       fmt_time_ns(isdn["cpu"]["per_op_ns"])]
    # ...and the records no table takes (throughput) in the generic one after it.
    assert "## Other benchmarks" in md and md.index("## Handshakes") < md.index("## Other benchmarks")
    # The README's headline table comes from the suite that declares it.
    assert "| isdn |" in readme.read_text()


def test_a_suite_the_report_never_heard_of_answers_the_questions_it_declares(tmp_path):
    res = fixtures.write(tmp_path / "r.json", _doc())
    html = tmp_path / "r.html"
    assert main(["report", res, "-o", str(html)]) == 0
    text = html.read_text()
    q = text.index("Which transport for small messages at low latency, on two CPUs?")
    table = text[q:text.index("</table>", q)]
    assert table.index("isdn") < table.index("v90") < table.index("v34")   # by round-trip p50
    # Without the declaration, no question: the report does not guess from the records.
    res = fixtures.write(tmp_path / "q.json", _doc(answers=[]))
    assert main(["report", res, "-o", str(html)]) == 0
    assert 'id="answers"' not in html.read_text()


@pytest.mark.parametrize("bad", [{"figure": "no_such_figure"}, {"where": "no_such_selection"}])
def test_a_declaration_the_report_cannot_read_is_one_line_before_any_write(tmp_path, capsys, bad):
    entry = _entry()
    table = entry["tables"][0]
    if "figure" in bad:
        table["figures"][1]["figure"] = bad["figure"]
    else:
        table["where"] = bad["where"]
    rc, _, pages, _ = _pages(tmp_path, _doc(tables=[table]))
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert next(iter(bad.values())) in err and "run the report of the same ipclab" in err
    assert not os.path.exists(pages / f"{NEW}.md")


def test_every_table_and_answer_the_built_ipclab_declares_is_one_the_report_can_build():
    from ipclab_report import answers, figures
    doc = registry.from_binary()
    declared = [s for s in doc["suites"] if s.get("tables")]
    assert declared, "the built ipclab declares no page table: rebuild it (`make build`)"
    for s in declared:
        assert [t.id for t in figures.tables_of(s["tables"])] == [t["id"] for t in s["tables"]], s["name"]
        assert set(s.get("answers") or []) <= set(answers.ANSWERS), s["name"]
