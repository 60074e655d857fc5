import os
import re

import pytest

import fixtures
from ipclab_report import html as html_mod
from ipclab_report.cli import main
from ipclab_report.model import anchor


def test_every_suite_has_a_section_with_plots_and_table(report_html):
    text = report_html.read_text()
    for suite in fixtures.SUITES:
        m = re.search(rf'<section id="{anchor(suite)}" class="suite">(.*?)</section>', text, re.S)
        assert m, suite
        body = m.group(1)
        assert "<img src=\"data:image/svg+xml;base64," in body, suite
        assert "Machine: " in body
        assert f'<h3 id="{anchor(suite)}-table" class="all-results">All results: {suite}</h3>' in text
        assert f'href="#{anchor(suite)}"' in text  # in the table of contents
    assert 'id="environment"' in text and "sysctl -w fs.mqueue.msg_max=64" in text


def test_self_contained(report_html):
    text = report_html.read_text()
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', text)
    assert "<script src" not in text and "<link" not in text and "@import" not in text
    assert "url(http" not in text


def test_expected_plots_per_suite(report_html):
    text = report_html.read_text()
    for title in ("Messages per second vs message size", "Bandwidth vs message size", "One-way latency CDF",
                  "CPU time per message", "Same vs cross CPU placement", "System effective OPS vs worker pairs",
                  "Fairness vs worker pairs", "Sessions processed / rejected / lost per server model",
                  "Session latency percentiles per server model", "Echo throughput vs connections",
                  "CPU per echo vs connections", "Server CPU per echo vs connections",
                  "Server CPU per session per server model", "Time per operation by operation and runtime",
                  "IOPS vs queue depth per engine", "Throughput vs queue depth per engine",
                  "Wall and CPU time per iteration per variant"):
        assert f'alt="{title}"' in text, title


def test_failed_and_skipped_are_marked(report_html):
    text = report_html.read_text()
    assert text.count('class="st-failed"') >= 2 and text.count('class="st-skipped"') >= 2
    assert "IOPOLL not supported by this device" in text and "integrity: 37 messages lost" in text


def test_side_by_side_labels(report_html):
    text = report_html.read_text()
    assert "lab1 · 6.1.0-18-amd64 · 2024-05-01 10:00" in text
    assert "lab2 · 6.8.0-31-generic · 2024-05-02 09:30" in text


def test_params_that_do_not_fit_fall_back_to_generic(tmp_path):
    doc = fixtures.make_result(suites=["messaging", "echo"], samples=20)
    for b in doc["benchmarks"]:  # a renamed parameter: no "size", no "connections"
        b["params"] = {("bytes" if k == "size" else "conns" if k == "connections" else k): v
                       for k, v in b["params"].items()}
    res = fixtures.write(tmp_path / "r.json", doc)
    out = tmp_path / "r.html"
    assert main(["report", res, "-o", str(out)]) == 0
    text = out.read_text()
    assert 'alt="Messages per second vs message size"' not in text
    echo = re.search(r'<section id="suite-echo".*?</section>', text, re.S).group(0)
    assert 'alt="Time per operation"' in echo


def test_write_is_atomic(tmp_path, monkeypatch):
    res = fixtures.write(tmp_path / "r.json", fixtures.make_result(suites=["anchors"], samples=10))
    out = tmp_path / "r.html"
    out.write_text("previous report")

    def boom(files, *saved_topologies):
        raise RuntimeError("renderer crashed")

    monkeypatch.setattr(html_mod, "render", boom)
    with pytest.raises(RuntimeError):
        from ipclab_report.cli import cmd_report, parser
        cmd_report(parser().parse_args(["report", res, "-o", str(out)]))
    assert out.read_text() == "previous report"
    assert sorted(os.listdir(tmp_path)) == ["r.html", "r.json"]


def test_output_directory_missing_is_usage_error(tmp_path, capsys):
    res = fixtures.write(tmp_path / "r.json", fixtures.make_result(suites=["anchors"], samples=10))
    assert main(["report", res, "-o", str(tmp_path / "no" / "r.html")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_output_that_is_a_link_is_usage_error_and_its_target_untouched(tmp_path, capsys):
    res = fixtures.write(tmp_path / "r.json", fixtures.make_result(suites=["anchors"], samples=10))
    target = tmp_path / "target"
    target.write_text("keep")
    (tmp_path / "r.html").symlink_to(target)
    assert main(["report", res, "-o", str(tmp_path / "r.html")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert target.read_text() == "keep" and (tmp_path / "r.html").is_symlink()


def test_write_atomic_crash_during_rename_leaves_old_file(tmp_path, monkeypatch):
    from ipclab_report import util

    target = tmp_path / "out.md"
    target.write_text("old")

    def crash(src, dst):
        raise OSError("disk on fire")

    monkeypatch.setattr(util.os, "replace", crash)
    with pytest.raises(OSError):
        util.write_atomic(str(target), "new " * 1000)
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["out.md"]


class _Rec:
    """What slice_records reads of a summary record: its mechanism and its parameters."""

    def __init__(self, mechanism, **params):
        self.mechanism, self.params = mechanism, params

    def dim(self, d):
        return self.mechanism if d == "mechanism" else self.params.get(d)


def test_slice_keeps_mechanisms_with_parameters_of_their_own():
    from ipclab_report.plots import slice_records
    recs = [_Rec("pipe", size=s) for s in (64, 8192)]
    recs += [_Rec("shm_spsc", size=s, wait=w, queue_depth=256) for s in (64, 8192) for w in ("spin", "adaptive")]
    recs += [_Rec("posix_mq", size=s, queue_depth=10) for s in (64, 8192)]
    sl, fixed = slice_records(recs, keep=("mechanism",))
    # One point per mechanism: the ring's `wait` and each queue's own depth do not drop the others.
    assert sorted(r.mechanism for r in sl) == ["pipe", "posix_mq", "shm_spsc"]
    assert {r.dim("size") for r in sl} == {64}
    assert fixed["size"] == 64 and fixed["wait"] == "spin"
    assert fixed["queue_depth"] == "256/10 (by mechanism)"
    # Without mechanism as a kept dimension, a partial parameter is fixed once for all records.
    sl, fixed = slice_records(recs, keep=("size",))
    assert fixed["mechanism"] == "shm_spsc" and {r.mechanism for r in sl} == {"shm_spsc"}


def test_tables_show_system_calls_per_op(results):
    from ipclab_report import registry
    from ipclab_report.load import load, summaries
    from ipclab_report.tables import row

    rf = load(results[0])
    cols = registry.of([rf]).columns("messaging")
    pipes = [s for s in summaries(rf) if s.ok and s.mechanism == "pipe"]
    assert pipes
    for s in pipes:
        assert row(s, cols)["sys/op"] == f"{s.kernel_per_op():.2f}"
        assert 4 <= s.kernel_per_op() < 4.01


def test_flagged_runs_get_their_time_series(report_html):
    text = report_html.read_text()
    m = re.search(rf'<section id="{anchor("messaging")}" class="suite">(.*?)</section>', text, re.S)
    assert "Time series of flagged runs" in m.group(1)
    # Only the messaging fixtures carry series, and only shm_spsc_futex cross-CPU is flagged.
    assert text.count("Time series of flagged runs") == 1
