"""The report's first screen: questions answered from the run's own records, ranked by the figure
each names, before the environment and every suite's section (HTML) and table (Markdown)."""
import random
import re

import fixtures
from ipclab_report.cli import main

RTT_NS = {"pipe": 9000, "unix_stream": 11000, "shm_spsc": 900, "tcp": 21000}


def _doc():
    rng = random.Random(7)
    benchmarks = []
    for mech, ns in RTT_NS.items():
        for placement, f in (("same", 1.0), ("cross", 2.0)):
            params = {"pattern": "roundtrip", "size": 64, "mode": "threads", "placement": placement}
            spec = ("messaging", mech, params, ns * f, 128, "rtt", 1.0, None, "ok", None)
            iters = fixtures.iterations(spec, rng, repetitions=3, samples=200)
            benchmarks += iters + [fixtures._aggregate(iters)]
    # A failed transport is no answer, and a large message is not a small one.
    spec = ("messaging", "udp", {"pattern": "roundtrip", "size": 64, "mode": "threads", "placement": "cross"},
            100, 128, "rtt", 1.0, None, "failed", "integrity: 3 lost")
    benchmarks += fixtures.iterations(spec, rng, repetitions=1, samples=50)
    spec = ("messaging", "posix_mq", {"pattern": "roundtrip", "size": 8192, "mode": "threads", "placement": "cross"},
            50, 16384, "rtt", 1.0, None, "ok", None)
    benchmarks += fixtures.iterations(spec, rng, repetitions=1, samples=50)
    return {"schema_version": 1, "context": fixtures.context(), "benchmarks": benchmarks}


def test_round_trip_questions_rank_by_p50_per_placement_in_html_and_markdown(tmp_path):
    res = fixtures.write(tmp_path / "r.json", _doc())
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    assert main(["report", res, "-o", str(html), "--markdown", str(md)]) == 0
    text = html.read_text()
    # First: the answers, then the environment, then the suites.
    assert text.index('id="answers"') < text.index('id="environment"') < text.index('id="suite-messaging"')
    for where in ("both sides on one CPU", "on two CPUs"):
        q = text.index(f"Which transport for small messages at low latency, {where}?")
        table = text[q:text.index("</table>", q)]
        names = re.findall(r'<td class="l" title="[^"]*">([^<]*)</td>', table)
        # shm_spsc < pipe < unix_stream < tcp by construction; udp failed, posix_mq is 8 KiB.
        assert names == ["shm_spsc", "pipe", "unix_stream", "tcp"], names
    # The messaging CDF draws the round trips (the throughput pattern's latency is queueing).
    assert "Round-trip latency CDF" in text
    m = md.read_text()
    assert m.index("## Answers") < m.index("## messaging")
    block = m[m.index("**Which transport for small messages at low latency, on two CPUs?**"):]
    rows = [ln for ln in block.splitlines()[1:12] if ln.startswith("| ") and ln[2].isdigit()]
    assert [r.split(" | ")[1].strip("`") for r in rows] == ["shm_spsc", "pipe", "unix_stream", "tcp"]
    assert "every row: mode=threads, pattern=roundtrip, placement=cross, size=64" in block


def test_no_question_without_records_for_it(tmp_path):
    doc = fixtures.make_result(suites=["fileio", "cachecalc"], samples=30)
    res = fixtures.write(tmp_path / "r.json", doc)
    html = tmp_path / "r.html"
    assert main(["report", res, "-o", str(html)]) == 0
    assert 'id="answers"' not in html.read_text()
