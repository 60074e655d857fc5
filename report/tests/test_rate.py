"""Open-loop records (pattern=rate, issue 21): plots, capacity table, pages and compare.

data/rate-result.json is written by fixtures.make_rate_result to the contract (docs/json-schema.md,
"Rate records"): messaging pipe and shm_spsc and echo epoll at 10k..200k/s, the 200k points of
pipe and epoll saturated (latency_ns and raw_ns null), and a capacity search of pipe (rate=auto).
Expected figures are read from the file itself, never typed in.
"""

import copy
import json
import os
import re

import pytest

import fixtures
from ipclab_report.cli import main
from ipclab_report.compare import compare_files, format_table
from ipclab_report.load import load, samples, summaries
from ipclab_report.plots import load_curves
from ipclab_report.util import fmt_si, fmt_time_ns

HERE = os.path.dirname(os.path.abspath(__file__))
RATE = os.path.join(HERE, "data", "rate-result.json")
PIPE_200K = "messaging/pipe/pattern:rate/rate:200k/arrivals:poisson/pace:spin/seed:1/size:64"
PIPE_AUTO = "messaging/pipe/pattern:rate/rate:auto/slo_p99_us:50/arrivals:poisson/pace:spin/seed:1/size:64"


def _summary(name, path=RATE):
    return next(s for s in summaries(load(path)) if s.name == name)


def _section(text, suite):
    return re.search(rf'<section id="suite-{suite}".*?</section>', text, re.S).group(0)


def test_the_fixture_follows_the_contract():
    doc = json.load(open(RATE))
    aggs = [b for b in doc["benchmarks"] if b["run_type"] == "aggregate"]
    sat = [b for b in aggs if b["extra"]["rate"]["saturated"]]
    assert {b["name"].split("/")[1] for b in sat} == {"pipe", "epoll"}
    for b in sat:
        assert b["latency_ns"] is None and b["extra"]["rate"]["raw_ns"] is None
        assert b["extra"]["rate"]["sched_error_ns"]["p99"] > 0 and b["extra"]["rate"]["saturation"]
        assert b["extra"]["rate"]["achieved_per_s"] < 0.99 * b["extra"]["rate"]["requested_per_s"]
    auto = [b for b in aggs if b["params"]["rate"] == "auto"]
    assert len(auto) == 1 and auto[0]["extra"]["capacity"]["trials"]


def test_a_saturated_point_has_no_latency_whatever_its_record_holds():
    r = _summary(PIPE_200K)
    assert r.is_rate and r.saturated and not r.is_capacity
    assert r.rate_latency("p99") is None and r.rate_latency("p50", "raw") is None
    assert r.rate_latency("p99", "sched") == r.raw["extra"]["rate"]["sched_error_ns"]["p99"]
    # A record that says saturated but carries figures anyway (an older harness, a bug): still none.
    raw = copy.deepcopy(r.raw)
    raw["latency_ns"] = {"kind": "one_way", "p50": 5.0, "p99": 7.0, "p999": 9.0}
    raw["extra"]["rate"]["raw_ns"] = {"kind": "one_way", "p99": 6.0}
    odd = type(r)(raw=raw, source=r.source)
    assert odd.rate_latency("p99") is None and odd.rate_latency("p99", "raw") is None
    assert odd.latency("p99") == 7.0  # the plain accessor reads the object: only rate_latency judges


def test_load_curves_series_per_mechanism_x_achieved_and_saturated_apart():
    recs = [s for s in summaries(load(RATE)) if s.suite == "messaging"]
    # Give the saturated point figures it should not have: they must not reach a line.
    sat = next(r for r in recs if r.name == PIPE_200K)
    sat.raw = dict(sat.raw, latency_ns={"kind": "one_way", "p99": 123456.0})
    curves = load_curves(recs, {"p99": lambda r: r.rate_latency("p99"), "bogus": lambda r: r.latency("p99")})
    assert sorted(curves.labels.values()) == ["pipe", "shm_spsc"]   # the requested rate splits no line
    assert [r.name for _, r in curves.saturated] == [PIPE_200K]
    assert all(y != 123456.0 for pts in curves.lines.values() for _, y in pts)
    pipe = [r for r in recs if r.mechanism == "pipe" and not r.saturated and not r.is_capacity]
    key = next(k for k, lab in curves.labels.items() if lab == "pipe")
    assert curves.lines[(key, "p99")] == sorted((r.num("extra", "rate", "achieved_per_s"), r.latency("p99"))
                                                for r in pipe)
    assert len(curves.lines[(key, "p99")]) == 3
    assert all(r.name != PIPE_AUTO for _, r in curves.saturated)


@pytest.fixture(scope="module")
def rate_html(tmp_path_factory):
    out = tmp_path_factory.mktemp("rate") / "r.html"
    assert main(["report", RATE, "-o", str(out)]) == 0
    return out.read_text()


def test_report_plots_rate_records_against_load(rate_html):
    for suite in ("messaging", "echo"):
        sec = _section(rate_html, suite)
        assert 'alt="Latency vs load"' in sec and 'alt="CPU per operation vs load"' in sec
        # The closed-loop plots take no rate record (there is no other record here).
        for title in ("Messages per second vs message size", "Echo throughput vs connections", "Time per operation"):
            assert f'alt="{title}"' not in sec
    assert 'alt="Capacity search: the trials walked' in _section(rate_html, "messaging")
    sat = _summary(PIPE_200K)
    note = re.search(r'alt="Latency vs load">\s*<figcaption>(.*?)</figcaption>', _section(rate_html, "messaging"),
                     re.S).group(1)
    assert "Saturated, so no figure" in note and "pipe: " + fmt_si(sat.num("extra", "rate", "requested_per_s"), "/s") in note
    assert "shm_spsc" not in note


def test_report_capacity_table_and_trials(rate_html):
    r = _summary(PIPE_AUTO)
    cap = r.raw["extra"]["capacity"]
    m = re.search(r'<table class="capacity">.*?<tbody>(.*?)</tbody>', rate_html, re.S)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", m.group(1), re.S)
    assert cells[1:] == [fmt_time_ns(cap["slo_p99_us"] * 1e3), cap["slo_basis"], fmt_si(cap["capacity_per_s"], "/s"),
                         "yes" if cap["confirmed"] else "no", fmt_time_ns(r.latency("p99")), str(len(cap["trials"]))]
    trials = re.search(r'<table class="trials">.*?<tbody>(.*?)</tbody>', rate_html, re.S).group(1)
    rows = re.findall(r"<tr>(.*?)</tr>", trials)
    assert len(rows) == len(cap["trials"])
    for row, t in zip(rows, cap["trials"]):
        tds = re.findall(r"<td>(.*?)</td>", row)
        assert tds[0] == fmt_si(t["requested_per_s"], "/s") and tds[5] == ("yes" if t["saturated"] else "no")
        assert (tds[3] == "—") == t["saturated"]


def test_report_table_says_why_a_point_is_saturated(rate_html):
    sat = _summary(PIPE_200K)
    row = re.search(r'<tr class="st-ok"><td class="name" title="messaging/pipe/pattern:rate/rate:200k.*?</tr>',
                    rate_html, re.S).group(0)
    assert "saturated: " + sat.raw["extra"]["rate"]["saturation"] in row
    assert row.count("<td>—</td>") == 4  # latency kind, p50 and p99: no latency; sys/op: no kernel counters here


def test_capacity_none_found(tmp_path, rate_html):
    doc = json.load(open(RATE))
    for b in doc["benchmarks"]:
        if b["params"]["rate"] == "auto":
            b["extra"]["capacity"]["capacity_per_s"] = 0.0
    out = tmp_path / "r.html"
    assert main(["report", fixtures.write(tmp_path / "r.json", doc), "-o", str(out)]) == 0
    row = re.search(r'<table class="capacity">.*?</table>', out.read_text(), re.S).group(0)
    assert "none met the bound" in row


# --- pages ---------------------------------------------------------------------------------------

def _pages(tmp_path):
    pages = tmp_path / "pages"
    pages.mkdir()
    assert main(["report", RATE, "--pages", str(pages)]) == 0
    return {p.stem: p.read_text() for p in pages.glob("*.md")}


def _table(page, title_start):
    m = re.search(rf"## {re.escape(title_start)}[^\n]*\n\n((?:\|[^\n]*\n)+)", page)
    lines = m.group(1).strip().splitlines()
    head = [c.strip() for c in lines[0].strip("|").split(" | ")]
    return [dict(zip(head, [c.strip() for c in ln.strip("|").split(" | ")])) for ln in lines[2:]]


def test_pages_rate_table(tmp_path):
    pages = _pages(tmp_path)
    rows = _table(pages["messaging"], "Open-loop load")
    recs = {(r.mechanism, r.params["rate"]): r for r in summaries(load(RATE))
            if r.suite == "messaging" and not r.is_capacity}
    assert len(rows) == len(recs)
    for row in rows:
        r = next(x for x in recs.values() if x.mechanism == row["mechanism"]
                 and fmt_si(x.num("extra", "rate", "requested_per_s"), "/s") == row["requested"])
        assert row["achieved"] == fmt_si(r.num("extra", "rate", "achieved_per_s"), "/s")
        assert row["sched error p99"] == fmt_time_ns(r.raw["extra"]["rate"]["sched_error_ns"]["p99"])
        roles = r.raw["extra"]["cpu_by_role"]
        assert row["CPU/message by role"] == ", ".join(f"{k} {fmt_time_ns(v['per_op_ns'])}" for k, v in roles.items())
        if r.saturated:
            assert [row[k] for k in ("p50", "p99", "p99.9", "raw p99")] == ["—"] * 4
            assert row["saturated"] == "yes: " + r.raw["extra"]["rate"]["saturation"]
        else:
            assert row["p99"] == fmt_time_ns(r.raw["latency_ns"]["p99"]) and row["saturated"] == "no"
            assert row["raw p99"] == fmt_time_ns(r.raw["extra"]["rate"]["raw_ns"]["p99"])
    assert "rate" not in rows[0]  # the requested column shows it
    assert "| server |" in pages["echo"] and "CPU/echo by role" in pages["echo"]


def test_pages_capacity_table_and_closed_loop_tables_keep_out(tmp_path):
    pages = _pages(tmp_path)
    cap = _summary(PIPE_AUTO).raw["extra"]["capacity"]
    [row] = _table(pages["messaging"], "Capacity")
    assert row["capacity"] == fmt_si(cap["capacity_per_s"], "/s") and row["trials"] == str(len(cap["trials"]))
    assert row["p99 bound"] == fmt_time_ns(cap["slo_p99_us"] * 1e3)
    assert row["bound basis"] == cap["slo_basis"]
    assert row["confirmed"] == ("yes" if cap["confirmed"] else "no")
    assert "## Echo servers" not in pages["echo"] and "## Capacity" not in pages["echo"]
    assert "## Throughput" not in pages["messaging"] and "## Other" not in pages["messaging"]


# --- compare -------------------------------------------------------------------------------------

def _pair(tmp_path, **new):
    base = fixtures.write(tmp_path / "b.json", fixtures.make_rate_result(repetitions=5, samples=100))
    nw = fixtures.write(tmp_path / "n.json", fixtures.make_rate_result(repetitions=5, samples=100, **new))
    return base, nw


def test_compare_rate_points_on_corrected_p99(tmp_path):
    base, new = _pair(tmp_path, slow={"shm_spsc": 1.6})
    sb = samples(load(base))
    name = "messaging/shm_spsc/pattern:rate/rate:50k/arrivals:poisson/pace:spin/seed:1/size:64"
    assert sb[name][2] == [r.latency("p99") for r in load(base).iterations if r.name == name]
    # A fixed floor (--noise 25): what is tested is the metric a rate point is compared on; the p99
    # of these synthetic points' 100 samples moves ~20% between repetitions, which the runs' own
    # spread (3x that) would rightly call noise.
    rows = {c.name: c for c in compare_files(base, new, noise_pct=25).rows}
    assert rows[name].metric == "p99" and rows[name].verdict == "slower" and rows[name].ratio > 1.25
    assert rows[name.replace("shm_spsc", "pipe")].verdict.startswith("same")


def test_compare_saturation_is_a_state_change_not_a_percentage(tmp_path, capsys):
    base, new = _pair(tmp_path, capacity={"pipe": 0.45})  # pipe's 100k point saturates in NEW
    r = compare_files(base, new)
    rows = {c.name: c for c in r.rows}
    became = rows[PIPE_200K.replace("200k", "100k")]
    assert became.state == "became saturated" and became.ratio is None and not became.regression
    assert became.verdict.startswith("became saturated (NEW: achieved ")
    both = rows[PIPE_200K]
    assert both.verdict == "both saturated (not compared)" and both.ratio is None
    main(["compare", base, new])
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith(r.short[PIPE_200K.replace("200k", "100k")] + " "))
    assert "%" not in line.split("became")[0] and "saturated" in line
    assert "SATURATED: 1 open-loop point(s) saturated in NEW" in out
    # And back: BASE saturated, NEW not.
    back = {c.name: c for c in compare_files(new, base).rows}[PIPE_200K.replace("200k", "100k")]
    assert back.state == "no longer saturated" and back.verdict.startswith("no longer saturated (BASE: ")


def test_compare_capacity_higher_is_better(tmp_path):
    base, new = _pair(tmp_path, capacity={"pipe": 0.7})
    c = {c.name: c for c in compare_files(base, new).rows}[PIPE_AUTO]
    assert c.metric == "capacity" and c.ratio < 1 and c.verdict == "slower" and c.regression
    c = {c.name: c for c in compare_files(new, base).rows}[PIPE_AUTO]
    assert c.ratio > 1 and c.verdict == "faster" and not c.regression
    text = format_table(compare_files(base, new), 5.0, 0.05)
    assert f"capacity {fmt_si(_summary(PIPE_AUTO, base).num('extra', 'capacity', 'capacity_per_s'), '/s')}" in text
    assert "capacity searches: capacity, higher is better" in text


def test_compare_mixed_files_keep_the_time_per_op_verdicts(tmp_path):
    """Rate records beside closed-loop ones: the closed-loop rows are judged as before."""
    plain = fixtures.make_result(suites=["anchors", "runtime"], repetitions=5, samples=20)
    base_doc, new_doc = fixtures.make_rate_result(repetitions=5, samples=50), fixtures.make_rate_result(repetitions=5, samples=50)
    base_doc["benchmarks"] += plain["benchmarks"]
    new_doc["benchmarks"] += fixtures.make_result(suites=["anchors", "runtime"], repetitions=5, samples=20,
                                                  speed={"runtime/spawn_asio/n:131072": 1.5})["benchmarks"]
    only_plain = compare_files(fixtures.write(tmp_path / "pb.json", plain),
                               fixtures.write(tmp_path / "pn.json", fixtures.make_result(
                                   suites=["anchors", "runtime"], repetitions=5, samples=20,
                                   speed={"runtime/spawn_asio/n:131072": 1.5})))
    mixed = compare_files(fixtures.write(tmp_path / "b.json", base_doc), fixtures.write(tmp_path / "n.json", new_doc))
    got = {c.name: (c.verdict, c.metric) for c in mixed.rows}
    for c in only_plain.rows:
        assert got[c.name] == (c.verdict, "time/op")
    assert got["runtime/spawn_asio/n:131072"][0] == "slower"


def test_reduce_drops_every_histogram_of_a_rate_record_and_keeps_its_tables(tmp_path):
    out = tmp_path / "small.json"
    assert main(["report", RATE, "--reduce", str(out)]) == 0
    doc = json.loads(out.read_text())
    for b in doc["benchmarks"]:
        rate = b["extra"]["rate"]
        assert "histogram" not in (b.get("latency_ns") or {}) and "histogram" not in rate["sched_error_ns"]
        assert "histogram" not in (rate.get("raw_ns") or {})
        assert rate["sched_error_ns"]["p99"] > 0
    full, small = tmp_path / "full", tmp_path / "small"
    for d, src in ((full, RATE), (small, str(out))):
        d.mkdir()
        assert main(["report", src, "--pages", str(d)]) == 0
    for suite in ("messaging", "echo"):
        assert _table((full / f"{suite}.md").read_text(), "Open-loop load") == \
            _table((small / f"{suite}.md").read_text(), "Open-loop load")


def test_markdown_summary_has_the_capacity_table(tmp_path):
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    assert main(["report", RATE, "-o", str(html), "--markdown", str(md)]) == 0
    text = md.read_text()
    cap = _summary(PIPE_AUTO).raw["extra"]["capacity"]
    table = text.split("Capacity under a latency bound (messaging):")[1]
    line = next(ln for ln in table.splitlines() if ln.startswith(f"| `{PIPE_AUTO}`"))
    assert line.split(" | ")[2] == cap["slo_basis"] and line.split(" | ")[3] == fmt_si(cap["capacity_per_s"], "/s")
    assert line.rstrip(" |").endswith(str(len(cap["trials"])))
    assert text.count("Capacity under a latency bound") == 1  # echo has no capacity search
