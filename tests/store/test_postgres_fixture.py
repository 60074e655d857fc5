"""The private PostgreSQL of tests/store/postgres.py: it serves psycopg on its own socket only, and
leaves neither its folder nor a process behind, whether the test passes or fails."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from postgres import private_postgres  # noqa: E402

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed: pip install 'psycopg[binary]'")


def processes_of(pid):
    """The postmaster `pid` and its children (checkpointer, walwriter, backends…)."""
    out = {pid}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                out.add(int(entry))
    return out


def alive(pids):
    return [p for p in pids if os.path.exists(f"/proc/{p}")]


def test_a_private_server_serves_psycopg_then_is_gone(tmp_path):
    with private_postgres(tmp_path) as pg:
        print(pg.version)
        assert pg.version.startswith("postgres (PostgreSQL) ")
        assert pg.url == f"postgresql:///ipclab?host={pg.socket_dir}&port={pg.port}&user=postgres"
        with psycopg.connect(pg.url) as conn:
            conn.execute("CREATE TABLE t (x INTEGER)")
            conn.execute("INSERT INTO t VALUES (1), (2)")
        with psycopg.connect(pg.url) as conn:
            assert conn.execute("SELECT sum(x) FROM t").fetchone() == (3,)
            assert conn.execute("SELECT current_database()").fetchone() == ("ipclab",)
            # a socket only: no TCP address is listened on
            assert conn.execute("SHOW listen_addresses").fetchone() == ("",)
        assert sorted(os.listdir(pg.socket_dir)) == [f".s.PGSQL.{pg.port}", f".s.PGSQL.{pg.port}.lock"]
        pids = processes_of(pg.pid)
        assert len(pids) > 1 and set(alive(pids)) == pids
    assert not os.path.exists(pg.root)
    assert alive(pids) == []
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(pg.url, connect_timeout=5)


def test_a_failing_test_still_stops_it_and_removes_its_folder(tmp_path):
    with pytest.raises(ZeroDivisionError):
        with private_postgres(tmp_path) as pg:
            pids = processes_of(pg.pid)
            1 / 0
    assert not os.path.exists(pg.root)
    assert alive(pids) == []


def test_it_runs_as_an_unprivileged_user(tmp_path):
    with private_postgres(tmp_path) as pg:
        with psycopg.connect(pg.url) as conn:
            data = conn.execute("SHOW data_directory").fetchone()[0]
        assert os.stat(data).st_uid != 0 and os.stat(f"/proc/{pg.pid}").st_uid != 0
        assert os.path.commonpath([data, pg.root]) == pg.root
