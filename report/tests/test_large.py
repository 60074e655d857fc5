"""Large inputs: a report is linear in the records, and a --preset full-sized result renders well
within a minute."""

import copy
import subprocess
import sys
import time

import pytest

import fixtures
from ipclab_report import compare
from ipclab_report.cli import main
from ipclab_report.load import Record


def replicated(doc, records):
    """`doc` with `records` benchmark records: its own, again and again, each round a point of its
    own (a parameter `copy` in its params and name), as a run over a larger grid would hold them."""
    out, k = [], 0
    while len(out) < records:
        for b in doc["benchmarks"]:
            c = copy.deepcopy(b)
            c["params"] = dict(c["params"], copy=k)
            c["name"] = f"{c['name']}/copy:{k}"
            out.append(c)
        k += 1
    return dict(doc, benchmarks=out[:records])


@pytest.fixture(scope="module")
def base_doc():
    return fixtures.make_result(samples=20)  # every suite, 3 repetitions and an aggregate each


def _counting(monkeypatch):
    """Counts the reads of Record.name: what every per-record look-up does."""
    calls = [0]
    plain = Record.name.fget

    def name(self):
        calls[0] += 1
        return plain(self)

    monkeypatch.setattr(Record, "name", property(name))
    return calls


def test_report_work_is_linear_in_the_records(tmp_path, base_doc, monkeypatch):
    """Twice the records, about twice the look-ups (it was four times: every plot and table scanned
    every record for each benchmark)."""
    calls = _counting(monkeypatch)
    counts = {}
    for n in (1500, 3000):
        res = fixtures.write(tmp_path / f"r{n}.json", replicated(base_doc, n))
        calls[0] = 0
        assert main(["report", res, "-o", str(tmp_path / f"r{n}.html"), "--markdown", str(tmp_path / f"r{n}.md"),
                     "--pages", str(tmp_path / f"pages{n}")]) == 0
        counts[n] = calls[0]
    assert counts[3000] < 2.5 * counts[1500], counts


def test_compare_work_is_linear_in_the_records(tmp_path, base_doc, monkeypatch):
    """The noise band of each benchmark is a look-up in a model built once, not a pass over every
    other benchmark: the values compare's medians see grow with the records, not their square."""
    seen = [0]
    plain = compare.median

    def median(values):
        values = list(values)
        seen[0] += len(values)
        return plain(values)

    monkeypatch.setattr(compare, "median", median)
    counts = {}
    for n in (1500, 3000):
        doc = replicated(base_doc, n)
        base = fixtures.write(tmp_path / f"b{n}.json", doc)
        new = fixtures.write(tmp_path / f"n{n}.json", replicated(fixtures.make_result(samples=20, seed=2), n))
        seen[0] = 0
        assert main(["compare", base, new]) in (0, 1)
        counts[n] = seen[0]
    assert counts[3000] < 2.5 * counts[1500], counts


def test_a_result_of_20k_records_renders_within_a_minute(tmp_path, base_doc):
    """20,000 records (a --preset full run holds 43,002): HTML, Markdown and pages as `ipclab report`
    runs them, in its own process. The bound is loose (a loaded CI machine): about 10 s here, where
    it took over a minute before the report was linear."""
    res = fixtures.write(tmp_path / "big.json", replicated(base_doc, 20_000))
    start = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "ipclab_report", "report", res, "-o", str(tmp_path / "big.html"),
                        "--markdown", str(tmp_path / "big.md")], capture_output=True, text=True, timeout=180)
    took = time.monotonic() - start
    assert p.returncode == 0, p.stderr
    assert took < 60, f"{took:.0f} s"
    assert (tmp_path / "big.md").read_text().count("\n| `") >= 20_000 // 4  # a row per benchmark

