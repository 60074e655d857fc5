"""`ipclab history`: series of runs read from a results store made with the committed schema
(src/core/store/schema.sql) and synthetic, seeded runs; change points found and named."""

from __future__ import annotations

import json
import os
import re
import sqlite3

import pytest

from ipclab_report import history
from ipclab_report.cli import main
from ipclab_report.stats import median

from history_store import BENCH, HOST, MACHINE, make_store, run_spec, sha

@pytest.fixture
def host(monkeypatch):
    """This host is lab1, the machine of the synthetic runs."""
    monkeypatch.setattr(history.socket, "gethostname", lambda: HOST)


@pytest.fixture
def step_store(tmp_path):
    """Twelve runs: six at ~412 ns (±1% between runs), then six 10% slower; commit 1 -> 2 at run 7."""
    path = tmp_path / "ipclab.sqlite"
    make_store(path, run_spec(412, 0.01, seed=1, step_at=7, step=1.10)).close()
    return path


def history_of(path, *bench, **kw):
    conn = history.open_store(str(path))
    series = history.load_series(conn, history.matching(history.benchmark_counts(conn), bench or [BENCH]))
    conn.close()
    shown, _ = history.select(series, kw.get("machine"), kw.get("all_flags", False))
    return [history.detect(s) for s in shown]


def test_a_step_of_ten_percent_is_one_change_point_at_its_run_naming_both_commits(step_store, host, capsys):
    (s,) = history_of(step_store)
    assert [c.index for c in s.changes] == [6]   # run 7
    (c,) = s.changes
    assert c.pct == pytest.approx(10, abs=2)
    assert c.p < 0.05
    assert c.changed == [("commit", sha(1), sha(2))]
    assert main(["history", BENCH, "--store", str(step_store)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("change at"))
    assert line.startswith(f"change at 2026-11-07 10:00 ({sha(2)[:12]}, 6.1.0-18-amd64): ")
    assert f"between commit {sha(1)[:12]} and {sha(2)[:12]}" in line
    assert "ns → " in line and "(+" in line
    marked = [x for x in out.splitlines() if "◆" in x]
    assert len(marked) == 1 and marked[0].split()[0] == "7"
    assert "median of each run's repetitions (ns)" in out


def test_an_aa_series_with_three_percent_noise_has_no_change_point(tmp_path, host, capsys):
    path = tmp_path / "aa.sqlite"
    make_store(path, run_spec(412, 0.03, seed=5)).close()
    (s,) = history_of(path)
    assert s.changes == [] and s.sigma is not None
    assert main(["history", BENCH, "--store", str(path)]) == 0
    out = capsys.readouterr().out
    assert "change at" not in out and "◆" not in out
    assert "no change point in 12 runs" in out
    assert "run-to-run noise ±" in out and "steps under ±" in out


def test_over_a_hundred_seeded_series_noise_stays_quiet_and_a_step_is_found():
    """The detector's operating characteristics on 12 runs: of 100 A/A series with ±2.5% noise
    between runs, at most 5 show a change point (the permutation test's alpha); of 100 series
    with a +10% step at run 7 and ±1% noise, at least 95 find exactly that one."""
    def changes(runs):
        return [i for i, _ in history.change_points([median(r["values"]) for r in runs])[0]]

    quiet = sum(changes(run_spec(412, 0.025, seed=1000 + k)) == [] for k in range(100))
    found = sum(changes(run_spec(412, 0.01, seed=2000 + k, step_at=7, step=1.10)) == [6] for k in range(100))
    assert quiet >= 95 and found >= 95


def test_a_kernel_change_between_runs_is_named(tmp_path, host, capsys):
    path = tmp_path / "k.sqlite"
    kernel = lambda i: "6.1.0-18-amd64" if i < 6 else "6.12.9-amd64"  # noqa: E731
    make_store(path, run_spec(412, 0.01, seed=3, step_at=6, step=0.85, kernel=kernel, sha=lambda i: sha(1))).close()
    (s,) = history_of(path)
    (c,) = s.changes
    assert c.index == 5 and c.changed == [("kernel", "6.1.0-18-amd64", "6.12.9-amd64")]
    assert c.pct == pytest.approx(-15, abs=2)
    assert main(["history", BENCH, "--store", str(path)]) == 0
    assert "between kernel 6.1.0-18-amd64 and 6.12.9-amd64" in capsys.readouterr().out


def test_a_step_with_nothing_recorded_changed_says_so(tmp_path, host):
    path = tmp_path / "same.sqlite"
    make_store(path, run_spec(412, 0.01, seed=3, step_at=7, step=1.2, sha=lambda i: sha(1))).close()
    (s,) = history_of(path)
    assert "nothing recorded changed" in history.change_text(s, s.changes[0])


def test_a_run_value_is_the_median_of_its_ok_repetitions_or_its_aggregate(tmp_path, host):
    path = tmp_path / "v.sqlite"
    runs = run_spec(100, 0.0, seed=0, n=4)
    runs[0]["values"] = [100, 130, 110]
    runs[1]["values"], runs[1]["aggregate"] = [], 120.0
    runs[2]["values"] = [100]
    runs[3]["status"] = "failed"
    make_store(path, runs).close()
    r = history_of(path)[0].runs
    assert (r[0].value, r[0].n) == (110, 3) and r[0].ci[0] <= 110 <= r[0].ci[1]
    assert (r[1].value, r[1].n, r[1].ci) == (120.0, 0, None)
    assert (r[2].value, r[2].ci) == (100, None)
    assert (r[3].value, r[3].status) == (None, "failed")


def test_series_are_per_machine_and_build_this_host_first(tmp_path, host):
    path = tmp_path / "m.sqlite"
    conn = make_store(path, run_spec(412, 0.01, seed=1))
    make_store(path, run_spec(500, 0.01, seed=2), machine="fedcba9876543210", hostname="lab2", conn=conn)
    make_store(path, run_spec(300, 0.01, seed=3, n=3, date=lambda i: f"2026-11-2{i}T10:00:00Z"),
               flags="-O3 -march=native", conn=conn).close()
    # this host (lab1), the build of its newest run (-O3, the 21st to 23rd)
    shown = history_of(path)
    assert [(s.machine["id"], s.build_flags) for s in shown] == [(MACHINE, "-O3 -march=native")]
    assert len(shown[0].runs) == 3 and shown[0].sigma is None   # too few runs to judge
    shown = history_of(path, all_flags=True)
    assert sorted(s.build_flags for s in shown) == ["-O2", "-O3 -march=native"]
    assert [s.machine["hostname"] for s in history_of(path, machine="fedcba9876543210")] == ["lab2"]


def test_no_bench_lists_the_benchmarks_with_their_run_counts(step_store, capsys):
    make_store(step_store, run_spec(10, 0.01, seed=1, n=3), name="runtime/spawn/n:1").close()
    assert main(["history", "--store", str(step_store)]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [x.split() for x in out[2:4]]
    assert rows == [[BENCH, "12"], ["runtime/spawn/n:1", "3"]]


def test_a_prefix_matches_every_benchmark_that_starts_with_it(step_store, host, capsys):
    make_store(step_store, run_spec(10, 0.01, seed=1), name="messaging/pipe/size:4096").close()
    make_store(step_store, run_spec(10, 0.01, seed=1), name="messaging/fifo/size:64").close()
    assert main(["history", "messaging/pipe", "--store", str(step_store)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("2 series from ")
    assert BENCH in out and "messaging/pipe/size:4096" in out and "fifo" not in out


def test_capacity_is_shown_per_second(tmp_path, host, capsys):
    path = tmp_path / "c.sqlite"
    make_store(path, run_spec(2e5, 0.01, seed=1, step_at=7, step=0.8), metric="capacity").close()
    assert main(["history", BENCH, "--store", str(path)]) == 0
    out = capsys.readouterr().out
    assert "capacity, median of each run's repetitions (/s)" in out
    assert " k/s → 1" in out and "k/s (-" in out.split("change at")[1]


def test_json_holds_each_series_runs_and_change_points(step_store, host, tmp_path):
    out = tmp_path / "h.json"
    assert main(["history", BENCH, "--store", str(step_store), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["store"] == str(step_store) and doc["method"]["alpha"] == 0.05
    (s,) = doc["series"]
    assert (s["name"], s["metric"], s["unit"], s["build_flags"]) == (BENCH, "time/op", "ns", "-O2")
    assert s["machine"]["id"] == MACHINE and s["machine"]["hostname"] == HOST
    assert len(s["runs"]) == 12 and [r["change_point"] for r in s["runs"]].index(True) == 6
    r = s["runs"][0]
    assert set(r) >= {"run_id", "date", "git_sha", "kernel", "version", "value", "ci95", "n", "status"}
    assert r["ci95"][0] <= r["value"] <= r["ci95"][1] and r["n"] == 5
    (c,) = s["changes"]
    assert c["index"] == 6 and c["date"] == "2026-11-07T10:00:00Z"
    assert c["changed"] == {"commit": [sha(1), sha(2)]} and 8 < c["change_pct"] < 12
    assert c["text"].startswith("change at 2026-11-07 10:00")


def test_html_draws_a_trend_per_series_with_its_change_points(step_store, host, tmp_path, draw):
    page = tmp_path / "h.html"
    rc, drawn = draw(lambda: main(["history", BENCH, "--store", str(step_store), "--html", str(page)]))
    assert rc == 0
    ((title, (ax,)),) = drawn.items()
    assert BENCH in title
    assert "ns" in ax["ylabel"] and ax["errorbars"] == 1
    assert ax["xticklabels"][0] == sha(1)[:7] and ax["xticklabels"][6] == sha(2)[:7]
    vlines = [xs for label, xs, ys in ax["lines"] if label == "change point"]
    assert vlines == [[5.5, 5.5]]
    text = page.read_text()
    m = re.search(r'<section id="s1">(.*?)</section>', text, re.S)
    assert m and 'href="#s1"' in text   # a section per series, in the table of contents
    body = m.group(1)
    assert '<img src="data:image/svg+xml;base64,' in body and "bootstrap 95% interval" in body
    assert f"machine {MACHINE} (AMD EPYC 7B13, host lab1), build Release -O2" in body
    assert "<li>change at 2026-11-07 10:00" in body and body.count("<tr>") == 13
    assert not re.search(r'(src|href)\s*=\s*"(https?:)?//', text) and "<link" not in text   # self-contained


def test_report_history_draws_the_same_page(step_store, host, tmp_path):
    """`ipclab report --history BENCH -o F`: the page of `history BENCH --html F`, and report's own
    inputs refused beside it."""
    page, same = tmp_path / "r.html", tmp_path / "h.html"
    assert main(["report", "--history", BENCH, "--store", str(step_store), "-o", str(page)]) == 0
    assert main(["history", BENCH, "--store", str(step_store), "--html", str(same)]) == 0
    strip = lambda t: re.sub(r"Generated [^<]*", "", t)  # noqa: E731
    assert strip(page.read_text()) == strip(same.read_text())
    assert main(["report", "--history", BENCH, "--store", str(step_store), "--markdown", str(tmp_path / "m.md")]) == 2
    assert not (tmp_path / "m.md").exists()


def store_bytes(path):
    return path.read_bytes() if path.exists() else None


@pytest.mark.parametrize("case", ["missing", "newer", "not sqlite", "link", "not a store"])
def test_bad_stores_are_one_line_exit_2_and_left_as_they_were(tmp_path, capsys, case, step_store):
    path = tmp_path / "bad.sqlite"
    if case == "newer":
        make_store(path, run_spec(412, 0.01, seed=1, n=2), version="2").close()
    elif case == "not sqlite":
        path.write_bytes(b"runs,are,not,here\n" * 10)
    elif case == "link":
        path.symlink_to(step_store)
    elif case == "not a store":
        sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.commit()
    before, listing = store_bytes(path), sorted(os.listdir(tmp_path))
    json_out = tmp_path / "out.json"
    assert main(["history", BENCH, "--store", str(path), "--json", str(json_out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("ipclab history: --store ")
    assert store_bytes(path) == before and sorted(os.listdir(tmp_path)) == listing
    expect = {"missing": "no store there", "newer": "schema version 2, newer than the 1",
              "not sqlite": "is not an SQLite file", "link": "symbolic link", "not a store": "is not an ipclab store"}
    assert expect[case] in err


def test_an_unknown_benchmark_names_the_listing(step_store, capsys):
    assert main(["history", "messaging/nope", "--store", str(step_store)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'messaging/nope'" in err
    assert "`ipclab history` without arguments lists the 1 it holds" in err


def test_an_unknown_machine_names_the_known_ones(step_store, capsys):
    assert main(["history", BENCH, "--store", str(step_store), "--machine", "feed"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{MACHINE} ({HOST})" in err


def test_the_store_is_opened_read_only(step_store, host, monkeypatch):
    conn = history.open_store(str(step_store))
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        conn.execute("DELETE FROM runs")
    conn.close()


def test_advise_and_ab_runs_are_no_points_of_a_series(step_store, host, capsys):
    """advise's and ab's measurements are kept in the store, but their windows are their own: the
    series, its listing and its change points are the runs' and the imports' alone."""
    with sqlite3.connect(step_store) as conn:
        ids = [r for (r,) in conn.execute("SELECT id FROM runs ORDER BY date")]
        conn.execute("UPDATE runs SET kind = 'advise' WHERE id = ?", (ids[8],))
        conn.execute("UPDATE runs SET kind = 'ab' WHERE id = ?", (ids[9],))
    assert main(["history", "--store", str(step_store)]) == 0
    assert f"{BENCH}" in capsys.readouterr().out
    assert main(["history", BENCH, "--store", str(step_store), "--json", str(step_store.with_suffix(".json"))]) == 0
    (s,) = json.loads(step_store.with_suffix(".json").read_text())["series"]
    assert len(s["runs"]) == 10 and {r["run_id"] for r in s["runs"]}.isdisjoint({ids[8], ids[9]})
    assert [c["index"] for c in s["changes"]] == [6]
