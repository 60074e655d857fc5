"""`ipclab history --store postgresql://…`: the store read from a real PostgreSQL server, private to
these tests (tests/store/postgres.py), filled with the same synthetic series and the same
statements as the SQLite tests, and read into the same output; a server that cannot be reached,
a database that is no store and a newer schema are one line, exit 2."""

from __future__ import annotations

import json
import os
import sys

import pytest

from ipclab_report import history
from ipclab_report.cli import main

from history_store import BENCH, HOST, REPO, add_runs, create_schema, make_store, run_spec, sha

sys.path.insert(0, os.path.join(REPO, "tests", "store"))

from postgres import private_postgres  # noqa: E402

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed: pip install 'psycopg[binary]'")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One private server for this module's tests; each test makes its own database in it."""
    with private_postgres(tmp_path_factory.mktemp("pg")) as pg:
        print(f"PostgreSQL under test: {pg.version}")
        yield pg


@pytest.fixture
def database(server, request):
    """(URL, connection) of a new empty database named after the test."""
    name = "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name.lower())[:55]
    url = server.create_database(name)
    with psycopg.connect(url) as conn:
        yield url, conn


@pytest.fixture
def host(monkeypatch):
    """This host is lab1, the machine of the synthetic runs."""
    monkeypatch.setattr(history.socket, "gethostname", lambda: HOST)


def store(conn, *series, version="1"):
    """The store's schema in `conn` and each (runs, options) of `series` added (history_store)."""
    create_schema(conn, version)
    for runs, kw in series:
        add_runs(conn, runs, **kw)
    conn.commit()


def output_of(store_arg, capsys, *args):
    assert main(["history", *args, "--store", store_arg]) == 0
    return capsys.readouterr().out


def test_a_step_is_found_at_run_7_as_in_sqlite(database, host, capsys, tmp_path):
    url, conn = database
    runs = run_spec(412, 0.01, seed=1, step_at=7, step=1.10)
    store(conn, (runs, {}))
    out = output_of(url, capsys, BENCH)
    assert out.startswith(f"1 series from {url}: ")
    line = next(x for x in out.splitlines() if x.startswith("change at"))
    assert line.startswith(f"change at 2026-11-07 10:00 ({sha(2)[:12]}, 6.1.0-18-amd64): ")
    assert f"between commit {sha(1)[:12]} and {sha(2)[:12]}" in line
    marked = [x for x in out.splitlines() if "◆" in x]
    assert len(marked) == 1 and marked[0].split()[0] == "7"
    # the same runs in SQLite: the same output, but for the store named in its first line
    lite = tmp_path / "same.sqlite"
    make_store(lite, runs).close()
    assert output_of(str(lite), capsys, BENCH).split("\n", 1)[1] == out.split("\n", 1)[1]
    doc = tmp_path / "h.json"
    assert main(["history", BENCH, "--store", url, "--json", str(doc)]) == 0
    (s,) = json.loads(doc.read_text())["series"]
    assert [c["index"] for c in s["changes"]] == [6] and len(s["runs"]) == 12


def test_an_aa_series_is_quiet_read_with_the_postgres_scheme(database, host, capsys):
    url, conn = database
    store(conn, (run_spec(412, 0.03, seed=5), {}))
    out = output_of(url.replace("postgresql://", "postgres://", 1), capsys, BENCH)
    assert "change at" not in out and "◆" not in out
    assert "no change point in 12 runs" in out


def test_the_listing_is_in_sqlites_order_whatever_the_databases_collation(server, capsys, tmp_path):
    """A database that sorts text by ICU's en-US (as a shared server may: case and punctuation
    weigh less) lists the benchmarks as the SQLite store of the same runs does."""
    names = ["messaging/pipe/size:64", "messaging/pipe/Size:8", "messaging/pipe_b/x", "messaging/pipeA/x"]
    url = server.create_database("icu", "--template=template0", "--locale-provider=icu", "--icu-locale=en-US")
    lite = tmp_path / "same.sqlite"
    with psycopg.connect(url) as conn:
        store(conn, *[(run_spec(10, 0.01, seed=k, n=2 + k), {"name": n}) for k, n in enumerate(names)])
        for k, n in enumerate(names):
            make_store(lite, run_spec(10, 0.01, seed=k, n=2 + k), name=n).close()
        by_db = [r[0] for r in conn.execute("SELECT name FROM results GROUP BY name ORDER BY name")]
    assert by_db != sorted(names)   # the database's own order differs: the test can tell
    out = output_of(url, capsys)
    assert out == output_of(str(lite), capsys)
    assert [x.split()[0] for x in out.splitlines()[2:6]] == sorted(names)


def test_the_store_is_read_in_a_read_only_transaction(database):
    url, conn = database
    store(conn, (run_spec(412, 0.01, seed=1, n=3), {}))
    reader = history.open_store(url)
    try:
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            reader.execute("DELETE FROM results")
    finally:
        reader.close()
    assert conn.execute("SELECT COUNT(*) FROM results").fetchone() == (15,)


def refused(args, capsys):
    assert main(["history", *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith("ipclab history: --store ")
    return err


@pytest.mark.parametrize("form", ["query", "user part"])
def test_an_unreachable_server_is_one_line_naming_the_url_without_its_password(tmp_path, capsys, form):
    empty = tmp_path / "nosock"
    empty.mkdir()
    url = f"postgresql:///ipclab?host={empty}&port=5999&user=lab&password=hunter2" if form == "query" else \
        f"postgresql://lab:hunter2@/ipclab?host={empty}&port=5999"
    shown = url.replace("hunter2", "***")
    out = tmp_path / "h.json"
    err = refused([BENCH, "--store", url, "--json", str(out)], capsys)
    assert err.startswith(f"ipclab history: --store {shown}: cannot connect (")
    assert "hunter2" not in err and "--store" in err.split("cannot connect", 1)[1]
    assert os.listdir(empty) == [] and not out.exists()


def test_a_database_without_the_stores_tables_is_one_line(database, capsys):
    url, _ = database
    err = refused([BENCH, "--store", url], capsys)
    assert "is not an ipclab store (" in err and "ipclab_store" in err


def test_a_newer_schema_is_one_line_naming_its_version(database, capsys):
    url, conn = database
    store(conn, (run_spec(412, 0.01, seed=1, n=2), {}), version="2")
    err = refused([BENCH, "--store", url], capsys)
    assert "has schema version 2, newer than the 1 this ipclab reads" in err
