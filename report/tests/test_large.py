"""Large inputs: a report is linear in the records, a --preset full-sized result renders well
within a minute, an input over the limits is refused in one line before it is parsed, and running
out of memory is one line, not a traceback."""

import copy
import json
import os
import subprocess
import sys
import time

import pytest

import fixtures
from ipclab_report import compare, load as load_mod
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


def _journal(path, doc):
    head = {"ipclab_journal": 1, "schema_version": 1, "context": doc["context"]}
    with open(path, "w") as f:
        f.write(json.dumps(head) + "\n" + "".join(json.dumps(b) + "\n" for b in doc["benchmarks"]))
    return str(path)


def test_an_input_over_the_limits_is_refused_in_one_line_before_it_is_parsed(tmp_path, base_doc, monkeypatch,
                                                                               capsys):
    """More records than MAX_RECORDS (counted before parsing by their "name" keys, a journal by its
    lines) or more bytes than MAX_BYTES: exit 2, one line naming the fix. The limits are lowered
    here; at their real values a million-record result (745 MB) is refused in about a second."""
    res = fixtures.write(tmp_path / "r.json", base_doc)
    journal = _journal(tmp_path / "r.jsonl", base_doc)
    n = len(base_doc["benchmarks"])
    cases = [("MAX_RECORDS", n - 1, "NAME_SLACK", 10**9, res),   # counted once parsed
             ("MAX_RECORDS", n - 1, "NAME_SLACK", 0, res),       # counted before: never parsed
             ("MAX_RECORDS", n - 1, "NAME_SLACK", 0, journal),
             ("MAX_BYTES", os.path.getsize(res) - 1, "NAME_SLACK", 0, res),
             ("MAX_BYTES", os.path.getsize(journal) - 1, "NAME_SLACK", 0, journal)]
    for limit, value, other, other_value, path in cases:
        with monkeypatch.context() as m:
            m.setattr(load_mod, limit, value)
            m.setattr(load_mod, other, other_value)
            if other_value == 0:  # refused before its records are parsed: not one is made
                m.setattr(load_mod, "Record", None)
            assert main(["report", path, "--markdown", str(tmp_path / "s.md")]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        want = f"more than {value:,} benchmark records" if limit == "MAX_RECORDS" else "the report reads"
        assert want in err and "split the run into a result file per suite" in err, (limit, err)
        assert not (tmp_path / "s.md").exists()


def test_running_out_of_memory_is_one_line_not_a_traceback(tmp_path, base_doc):
    """A MemoryError anywhere is one line and exit 1. Here for real: the report runs in a process
    whose address space is capped (RLIMIT_AS) at what it holds once imported plus 64 MiB, reading a
    20,000-record result that takes over 200 MB once parsed."""
    res = fixtures.write(tmp_path / "big.json", replicated(base_doc, 20_000))
    child = """
import resource, sys
from ipclab_report import cli, html, load, markdown, plots, suites  # imported before the cap
size = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, (size + (64 << 20), resource.RLIM_INFINITY))
sys.exit(cli.main(sys.argv[1:]))
"""
    p = subprocess.run([sys.executable, "-c", child, "report", res, "-o", str(tmp_path / "r.html"),
                        "--markdown", str(tmp_path / "r.md")], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
    assert p.returncode == 1, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert p.stderr.startswith("ipclab: out of memory") and "split the run" in p.stderr
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "r.md").exists()
