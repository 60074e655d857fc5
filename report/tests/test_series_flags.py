"""Time-slice flags (`non_steady`, `bimodal`) only where a slice holds enough operations to judge
(docs/methodology.md, "Flags"): files an older harness wrote flag runs of 0-1 operations a slice,
and the report reads them by the same rule."""

import fixtures
from ipclab_report import plots
from ipclab_report.cli import main
from ipclab_report.load import load, summaries


def _flagged_doc():
    """The messaging fixtures (shm_spsc_futex cross-CPU at two levels, 1000s of ops a slice) and a
    pipe run as an older harness wrote it: 0-1 operations a slice, flagged bimodal."""
    doc = fixtures.make_result(suites=["messaging"], samples=20)
    sparse = "messaging/pipe/mode:throughput/size:8192/producers:1/consumers:1/placement:cross"
    for b in doc["benchmarks"]:
        if b["name"] == sparse and b["run_type"] == "iteration":
            ops = [k % 2 for k in range(20)]
            b["series"] = dict(b["series"], ops=ops, flags=["bimodal"],
                               rate_per_s=[o / (b["wall_s"] / 20) for o in ops])
        elif b["name"] == sparse:
            b["flags"] = ["bimodal"]
    return doc, sparse


def test_a_series_of_0_1_operations_a_slice_is_not_flagged_a_real_two_level_one_is(tmp_path):
    doc, sparse = _flagged_doc()
    recs = {s.name: s for s in summaries(load(fixtures.write(tmp_path / "f.json", doc)))}
    assert recs[sparse].get("flags") == ["bimodal"]      # what the file says
    assert plots.series_flags(recs[sparse]) == []         # too few operations a slice to judge
    bimodal = next(n for n in recs if "shm_spsc_futex" in n and "placement:cross" in n)
    assert plots.series_flags(recs[bimodal]) == ["bimodal"]
    assert plots.MIN_OPS_PER_SLICE == 10


def test_only_judged_series_get_a_time_series_panel(tmp_path, draw):
    doc, sparse = _flagged_doc()
    res = fixtures.write(tmp_path / "f.json", doc)
    rc, drawn = draw(lambda: main(["report", res, "-o", str(tmp_path / "f.html")]))
    assert rc == 0
    # the time-series panels are titled "suite: name — flags"
    titles = [p["title"] for fig in drawn.values() for p in fig if " — " in p["title"]]
    assert titles and all("shm_spsc_futex" in t for t in titles) and not any("pipe" in t for t in titles)


def _report(tmp_path, doc):
    res = fixtures.write(tmp_path / "f.json", doc)
    html, md = tmp_path / "f.html", tmp_path / "summary.md"
    assert main(["report", res, "-o", str(html), "--markdown", str(md)]) == 0
    return html.read_text(), md.read_text()


def _bimodal_points(tmp_path, doc):
    """The summary records the report counts flagged bimodal (plots.series_flags)."""
    n = sum("bimodal" in plots.series_flags(s) for s in summaries(load(fixtures.write(tmp_path / "n.json", doc))))
    assert n > 1
    return n


def test_each_flag_that_occurs_says_what_to_do_in_the_words_the_file_carries(tmp_path):
    # context.flags as `ipclab run` writes it (src/core/stats/flags.cpp): the texts are the file's,
    # never the report's own.
    doc, _ = _flagged_doc()
    doc["context"]["flags"] = {"bimodal": {"word": "bimodal", "meaning": "the slices fell into two levels (from the file)",
                                           "remedy": "pin the sides and re-run (from the file)"}}
    html, md = _report(tmp_path, doc)
    section = md[md.index("## What the flags mean, and what to do"):]
    assert f"- **bimodal** (`bimodal`, {_bimodal_points(tmp_path, doc)} points): the slices fell into two levels (from the file) — what to do: " \
           "pin the sides and re-run (from the file)" in section, section
    assert 'id="flags"' in html and "pin the sides and re-run (from the file)" in html
    assert html.index("the slices fell into two levels (from the file)") < html.index("pin the sides and re-run")


def test_a_file_without_the_flags_texts_points_to_the_documentation(tmp_path):
    doc, _ = _flagged_doc()
    assert "flags" not in doc["context"]   # as a file written before context.flags
    html, md = _report(tmp_path, doc)
    section = md[md.index("## What the flags mean, and what to do"):]
    assert f"- **bimodal** (`bimodal`, {_bimodal_points(tmp_path, doc)} points): what to do: see docs/methodology.md, “Flags”" in section, section
    assert "see docs/methodology.md, “Flags”" in html


def test_no_flag_no_section(tmp_path):
    doc = fixtures.make_result(suites=["anchors"], samples=20)
    for b in doc["benchmarks"]:
        b.pop("flags", None)
        if isinstance(b.get("series"), dict):
            b["series"]["flags"] = []
    html, md = _report(tmp_path, doc)
    assert "What the flags mean" not in md and 'id="flags"' not in html
