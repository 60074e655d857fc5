"""`ipclab run --store postgresql://…` (issue 54): a shared store on a real PostgreSQL server the
test starts and stops itself (tests/store/postgres.py): runs of several writers at once all kept,
each compared with the last comparable one, none half-written by a writer that dies, and a server
that cannot be reached skipped in one line with the run's files written and its own exit status."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from postgres import postgres_server  # noqa: E402,F401  (the fixture)
from test_store import PIPE, lab, summary  # noqa: E402,F401

psycopg = pytest.importorskip("psycopg")


def count(url, sql):
    with psycopg.connect(url) as db:
        return db.execute(sql).fetchone()[0]


def test_two_writers_at_once_lose_nothing_and_compare_across_the_store(lab, postgres_server):
    url = postgres_server.url
    print(postgres_server.version)
    first = lab(*PIPE, "--store", url)
    assert first.returncode == 0, first.stderr
    assert "stored in postgresql://" in first.stderr and not lab.store.exists()
    # Two writers at once, each its own transaction: both kept whole.
    both = [lab(*PIPE, "--store", url, wait=False) for _ in range(2)]
    for p, folder in both:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        since = summary(folder)["extra"]["since"]
        assert since["base"]["run_id"]  # compared with an earlier run in the store
    assert count(url, "SELECT count(*) FROM runs") == 3
    assert count(url, "SELECT count(*) FROM results") == 12
    assert count(url, "SELECT count(*) FROM machines") == 1
    assert count(url, "SELECT value FROM ipclab_store WHERE key = 'schema_version'") == "1"
    # history reads the same store.
    h = lab("messaging/pipe", "--store", url, verb="history")
    assert h.returncode == 0, h.stderr
    assert h.stdout.count(" µs ") >= 3 or h.stdout.count("µs") >= 3, h.stdout


def test_a_writer_that_dies_leaves_no_half_run(lab, postgres_server):
    url = postgres_server.url
    assert lab(*PIPE, "--store", url).returncode == 0
    p, folder = lab("messaging/pipe", "-p", "pattern=roundtrip", "--duration", "2", "--store", url, wait=False)
    time.sleep(1.5)
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=60)
    assert count(url, "SELECT count(*) FROM runs") == 1
    assert count(url, "SELECT count(*) FROM results") == 4
    assert count(url, "SELECT count(*) FROM results x WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.id = x.run_id)") == 0


def test_an_unreachable_server_is_skipped_in_one_line(lab, tmp_path):
    url = f"postgresql://ipc:secret@/ipclab?host={tmp_path}&port=1&connect_timeout=2"
    r = lab(*PIPE, "--store", url)
    assert r.returncode == 0, r.stderr
    assert (r.folder / "results.json").exists()
    lines = [l for l in r.stderr.splitlines() if "store" in l and "cannot reach" in l]
    assert len(lines) == 1 and lines[0].startswith("warning: store not used: cannot reach"), r.stderr
    assert "secret" not in r.stderr and "***" in lines[0]
    assert "stored in" not in r.stderr
