import json
import os
import statistics
import subprocess
import sys

import pytest

import fixtures
from ipclab_report.cli import main
from ipclab_report.load import Record, ResultFile, load, summaries


def test_unknown_fields_are_ignored(tmp_path):
    doc = fixtures.make_result(suites=["anchors"], samples=50)
    doc["future_top_level"] = {"x": 1}
    for b in doc["benchmarks"]:
        b["latency_ns"] = {"kind": "op", "new_stat": 3}
        b["cpu"]["new_counter"] = 7
    rf = load(fixtures.write(tmp_path / "r.json", doc))
    assert len(rf.records) == len(doc["benchmarks"])
    s = summaries(rf)
    assert [r.name for r in s] == ["anchors/null", "anchors/getpid", "anchors/clock_gettime", "anchors/futex_wake"]
    assert all(r.status == "ok" and r.time_per_op_ns > 0 for r in s)


def test_renamed_parameter_values_are_read_under_their_new_names(tmp_path):
    doc = fixtures.make_result(suites=["anchors"], samples=20)
    old = dict(doc["benchmarks"][0], name="messaging/pipe/pattern:pingpong/size:64/placement:cross",
               suite="messaging", mechanism="pipe", params={"pattern": "pingpong", "size": 64, "placement": "cross"})
    other = dict(old, name="fileio/psync/pattern:rand/qd:1", suite="fileio", mechanism="psync",
                 params={"pattern": "rand", "qd": 1})
    doc["benchmarks"] = [old, other]
    rf = load(fixtures.write(tmp_path / "r.json", doc))
    assert rf.records[0].name == "messaging/pipe/pattern:roundtrip/size:64/placement:cross"
    assert rf.records[0].params == {"pattern": "roundtrip", "size": 64, "placement": "cross"}
    assert rf.records[1].raw == other  # values never renamed are left as they are


def test_aggregates_computed_when_missing_match_the_harness(tmp_path):
    with_agg = load(fixtures.write(tmp_path / "a.json", fixtures.make_result(seed=5, samples=100)))
    without = load(fixtures.write(tmp_path / "b.json", fixtures.make_result(seed=5, samples=100, aggregates=False)))
    assert not without.aggregates and with_agg.aggregates
    a, b = summaries(with_agg), summaries(without)
    assert [r.name for r in a] == [r.name for r in b]
    for x, y in zip(a, b):
        assert x.status == y.status
        assert y.get("computed") is True
        if x.status != "ok":
            continue
        assert y.time_per_op_ns == pytest.approx(x.time_per_op_ns)
        assert y.rate("ops_per_s") == pytest.approx(x.rate("ops_per_s"))
        assert y.num("cpu", "per_op_ns") == pytest.approx(x.num("cpu", "per_op_ns"))
        assert y.latency("p99") == x.latency("p99")
        assert y.get("integrity") == x.get("integrity")
        assert y.get("spread", "values") == x.get("spread", "values")


def test_median_of_iterations():
    rf = ResultFile(path="x", context={})
    for rep, t in enumerate([30.0, 10.0, 20.0, 1000.0]):
        rf.records.append(Record(raw={"name": "s/m", "run_type": "iteration", "repetition": rep, "status": "ok",
                                      "time_per_op_ns": t, "ops": 10, "rates": {"ops_per_s": 1e9 / t},
                                      "latency_ns": {"p50": t}}, source=rf))
    (s,) = summaries(rf)
    assert s.time_per_op_ns == statistics.median([30, 10, 20, 1000]) == 25
    assert s.latency("p50") == 25  # the median of the repetitions' p50s, as every other column
    assert s.get("repetition") == 4


def test_failed_and_skipped_are_never_zero(tmp_path):
    rf = load(fixtures.write(tmp_path / "r.json", fixtures.make_result(suites=["servers", "messaging"], samples=50)))
    by = {r.name: r for r in summaries(rf)}
    skipped = by["servers/asio/clients:2000"]
    failed = by["messaging/udp/mode:throughput/size:8192/producers:1/consumers:1/placement:same"]
    assert skipped.status == "skipped" and "Asio" in skipped.error
    assert skipped.time_per_op_ns is None and skipped.rate("ops_per_s") is None
    assert failed.status == "failed" and "lost" in failed.error


def test_one_failed_repetition_fails_the_benchmark(tmp_path):
    doc = fixtures.make_result(suites=["anchors"], aggregates=False, samples=20)
    doc["benchmarks"][1].update(status="failed", error="checksum mismatch")
    (s, *_) = summaries(load(fixtures.write(tmp_path / "r.json", doc)))
    assert s.status == "failed" and s.error == "checksum mismatch"


def _bad_inputs(tmp_path):
    (tmp_path / "notjson.json").write_text("{ nope")
    (tmp_path / "v2.json").write_text(json.dumps({"schema_version": 2, "benchmarks": []}))
    (tmp_path / "noversion.json").write_text(json.dumps({"benchmarks": []}))
    (tmp_path / "array.json").write_text("[1, 2]")
    (tmp_path / "nobench.json").write_text(json.dumps({"schema_version": 1, "context": {}}))
    (tmp_path / "noname.json").write_text(json.dumps({"schema_version": 1, "benchmarks": [{"ops": 1}]}))
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00garbage")
    return ["missing.json", "notjson.json", "v2.json", "noversion.json", "array.json", "nobench.json",
            "noname.json", "binary.json", "."]


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    for name in _bad_inputs(tmp_path):
        out = tmp_path / "out.html"
        rc = main(["report", str(tmp_path / name), "-o", str(out)])
        cap = capsys.readouterr()
        assert rc == 2, name
        assert cap.out == ""
        lines = cap.err.strip().splitlines()
        assert len(lines) == 1, (name, cap.err)
        assert lines[0].startswith("ipclab report: ")
        assert not out.exists()
    for argv in (["report"], ["compare", "a.json"], ["compare", "a", "b", "--threshold", "x"], ["frobnicate"], []):
        rc = main(argv)
        cap = capsys.readouterr()
        assert rc == 2 and len(cap.err.strip().splitlines()) == 1, (argv, cap.err)


def test_wrong_schema_message_names_the_fix(tmp_path, capsys):
    (tmp_path / "v2.json").write_text(json.dumps({"schema_version": 2, "benchmarks": []}))
    assert main(["compare", str(tmp_path / "v2.json"), str(tmp_path / "v2.json")]) == 2
    err = capsys.readouterr().err
    assert "schema_version 2" in err and "understands 1" in err


def test_module_entry_point_exit_2(tmp_path):
    p = subprocess.run([sys.executable, "-m", "ipclab_report", "report", str(tmp_path / "nope.json"),
                        "-o", str(tmp_path / "r.html")], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and "no such file" in p.stderr


def test_kernel_counters_per_op_where_counted(tmp_path):
    doc = fixtures.make_result(suites=["anchors"], samples=20, aggregates=False)
    for b in doc["benchmarks"]:
        b.pop("kernel", None)  # counted below for one benchmark only
    name = doc["benchmarks"][0]["name"]
    iters = [b for b in doc["benchmarks"] if b["name"] == name]
    for b, sys_op in zip(iters, (4.0, 6.0, 5.0)):
        b["kernel"] = {"scope": "window", "totals": {"syscalls": sys_op * b["ops"]},
                       "per_op": {"syscalls": sys_op, "page_faults": 0.0}}
    rf = load(fixtures.write(tmp_path / "r.json", doc))
    by_name = {r.name: r for r in summaries(rf)}
    assert by_name[name].kernel_per_op() == 5.0  # the median of its repetitions
    assert by_name[name].kernel_per_op("page_faults") == 0.0
    assert rf.records[0].kernel_per_op() == 4.0
    other = next(r for r in summaries(rf) if r.name != name)
    assert other.kernel_per_op() is None  # not counted: no figure, nothing breaks


def test_brief_cuts_a_long_value_and_escapes_as_the_harness_does():
    from ipclab_report.util import brief, printable

    assert brief("harness/null") == "harness/null"
    assert brief("x" * 100_000) == "x" * 200 + "…(+99800 more)"
    assert printable("a\nb\x1b\x7f\u0085\u2028") == "a\\nb\\x1b\\x7f\\u{0085}\\u{2028}"
    assert printable(b"r\xff".decode("utf-8", "surrogateescape")) == "r\\xff"


def test_a_deeply_nested_file_is_a_usage_error(tmp_path, capsys):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert main(["compare", str(deep), str(deep)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nested too deeply" in err


def test_targets_are_checked_before_any_input_is_read(tmp_path, capsys):
    missing_input = str(tmp_path / "nope.json")
    assert main(["report", missing_input, "-o", "/nonexistent/r.html"]) == 2
    assert "folder /nonexistent does not exist" in capsys.readouterr().err
    assert main(["report", missing_input, "-o", str(tmp_path / "x"), "--markdown", str(tmp_path / "." / "x")]) == 2
    assert "name the same file" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def _journal(path, version, doc):
    head = {"ipclab_journal": version, "schema_version": 1, "context": doc["context"]}
    with open(path, "w") as f:
        f.write(json.dumps(head) + "\n" + "".join(json.dumps(b) + "\n" for b in doc["benchmarks"]))
    return str(path)


def test_a_journal_is_read_only_at_the_version_this_reader_knows(tmp_path, capsys):
    """A results journal's header names its format ("ipclab_journal": 1): a version this reader does
    not know, or one that is not a whole number, is refused in one line naming the fix, not read as
    if it were version 1."""
    doc = fixtures.make_result(suites=["anchors"], samples=10)
    good = _journal(tmp_path / "good.jsonl", 1, doc)
    assert len(load(good).records) == len(doc["benchmarks"])
    for version in (99, "1", 1.0, True, None, 0, [1]):
        bad = _journal(tmp_path / "bad.jsonl", version, doc)
        assert main(["report", bad, "--markdown", str(tmp_path / "s.md")]) == 2, version
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1, err
        assert f"journal of version {json.dumps(version)}" in err and "reads version 1" in err, err
        assert "read it with the ipclab that wrote it" in err
        assert not (tmp_path / "s.md").exists()


def test_odd_values_anywhere_give_a_report_or_one_line_never_a_traceback(tmp_path, capsys):
    """A real result (data/dev-result.json) with fields replaced at random by values of other types
    (null, a string, a list, an object, a huge or negative number), 200 times: --markdown and --pages give
    their files or one line and exit 2, never an exception (a CPU list given as a number did)."""
    import copy
    import random

    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "dev-result.json")) as f:
        base = json.load(f)

    def paths(o, pre=()):
        items = o.items() if isinstance(o, dict) else enumerate(o[:3]) if isinstance(o, list) else ()
        for k, v in items:
            if pre == ("context",) and k == "registry":
                continue
            yield pre + (k,)
            yield from paths(v, pre + (k,))

    every = list(paths(base))
    values = [None, "x", 1e308, -1, 0, [], {}, True, "<b>", [1, "a"], {"a": None}, 2**70]
    rng = random.Random(7)
    for i in range(200):
        doc = copy.deepcopy(base)
        for _ in range(rng.randint(1, 4)):
            path = rng.choice(every)
            cur = doc
            try:
                for k in path[:-1]:
                    cur = cur[k]
                cur[path[-1]] = copy.deepcopy(rng.choice(values))
            except (KeyError, IndexError, TypeError):
                pass
        res = fixtures.write(tmp_path / "odd.json", doc)
        rc = main(["report", res, "--markdown", str(tmp_path / f"s{i}.md"), "--pages", str(tmp_path / f"p{i}")])
        err = capsys.readouterr().err
        assert rc == 0 or (rc == 2 and len(err.strip().splitlines()) == 1), (i, rc, err)
