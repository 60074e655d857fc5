"""Under noise (docs/noise.md): medians that carry `extra.inflation` — runs under --antagonist,
each repetition paired with a quiet one — are drawn as a heatmap of the p99's inflation, mechanism ×
antagonist, one per placement, in a section of the report of its own; a report without them has
no such section."""

import fixtures
from ipclab_report.cli import main
from ipclab_report.load import load, summaries
from ipclab_report.model import noise_view


def _noisy(tmp_path, antagonist, ratio):
    """The messaging fixtures as a run under `antagonist`: every median's p99 inflated by `ratio`."""
    doc = fixtures.make_result(suites=["messaging"], samples=20)
    for b in doc["benchmarks"]:
        b.setdefault("extra", {})["antagonists"] = [{"kind": antagonist.split("@")[0], "text": antagonist}]
        if b.get("run_type") == "aggregate" and b.get("status") == "ok":
            b["extra"]["inflation"] = {"pairs": 3, "p99": {"ratio": ratio, "ci": [ratio * 0.9, ratio * 1.1]},
                                       "p50": {"ratio": 1.0, "ci": [0.99, 1.01]}}
    doc["context"]["antagonists"] = [antagonist]
    return fixtures.write(tmp_path / f"{antagonist.replace('@', '_')}.json", doc)


def test_the_inflation_of_each_median_is_a_cell_of_its_placements_heatmap(tmp_path):
    files = [load(str(_noisy(tmp_path, "none@others", 1.0))), load(str(_noisy(tmp_path, "cpu@same:100", 1721.0)))]
    recs = [s for f in files for s in summaries(f)]
    inflated = [r for r in recs if r.get("extra", "inflation")]
    assert inflated
    v = noise_view(recs)
    assert v.points == len(inflated)
    placements = {str(r.params.get("placement") or "-") for r in inflated}
    assert len(v.plots) == len(placements)
    assert all(p.uri.startswith("data:image/svg+xml;base64,") for p in v.plots)
    assert "p99 under each antagonist over p99 quiet" in v.plots[0].title


def test_the_report_has_an_under_noise_section_only_for_noisy_runs(tmp_path):
    out = tmp_path / "r.html"
    assert main(["report", str(_noisy(tmp_path, "cpu@same:100", 1.3)), "-o", str(out)]) == 0
    html = out.read_text()
    assert '<section id="noise">' in html and "<h2>Under noise</h2>" in html
    quiet = fixtures.write(tmp_path / "quiet.json", fixtures.make_result(suites=["messaging"], samples=20))
    assert main(["report", str(quiet), "-o", str(out)]) == 0
    assert '<section id="noise">' not in out.read_text()
    assert noise_view([s for s in summaries(load(str(quiet)))]) is None
