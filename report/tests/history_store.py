"""The synthetic results stores of `ipclab history`'s tests: seeded series of runs, written with the
committed schema (src/core/store/schema.sql) into SQLite or PostgreSQL by the same statements."""

from __future__ import annotations

import hashlib
import os
import random
import sqlite3
import uuid

from ipclab_report import history

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA = os.path.join(REPO, "src", "core", "store", "schema.sql")
BENCH = "messaging/pipe/size:64/pattern:roundtrip/placement:same"
MACHINE = "0123456789abcdef"
HOST = "lab1"


def sha(k):
    """Commit k's (made-up) hash."""
    return hashlib.sha1(f"commit {k}".encode()).hexdigest()


def run_spec(level, noise, seed, n=12, step_at=None, step=1.0, reps=5, **over):
    """Runs of one series: `n` runs around `level` ns with relative `noise` between runs (uniform),
    the level times `step` from run `step_at` on (1-based), each run `reps` repetitions close to
    its own level. Commit 1 before the step, commit 2 from it on, unless over['sha'](i) says otherwise."""
    rng = random.Random(seed)
    out = []
    for i in range(1, n + 1):
        level_i = level * (step if step_at and i >= step_at else 1.0) * (1 + rng.uniform(-noise, noise))
        spec = {"date": f"2026-11-{i:02d}T10:00:00Z", "sha": sha(1 if not step_at or i < step_at else 2),
                "kernel": "6.1.0-18-amd64", "version": "0.9.0",
                "values": [level_i * (1 + rng.uniform(-0.002, 0.002)) for _ in range(reps)]}
        for key, fn in over.items():
            spec[key] = fn(i)
        out.append(spec)
    return out


def make_store(path, runs, version="1", conn=None, **kw):
    """An SQLite store at `path` (made with schema.sql when new) holding `runs` (add_runs)."""
    conn = conn or sqlite3.connect(path)
    if not conn.execute("SELECT name FROM sqlite_master WHERE name = 'runs'").fetchone():
        create_schema(conn, version)
    return add_runs(conn, runs, **kw)


def create_schema(conn, version="1"):
    """The store's tables in `conn` (sqlite3 or psycopg), of schema `version`."""
    with open(SCHEMA, encoding="utf-8") as f:
        script = f.read()
    if isinstance(conn, sqlite3.Connection):
        conn.executescript(script)
    else:
        conn.execute(script)   # psycopg runs several statements when given no parameters
    history.query(conn, "INSERT INTO ipclab_store VALUES ('schema_version', ?)", (version,))


def add_runs(conn, runs, name=BENCH, machine=MACHINE, hostname=HOST, flags="-O2", metric="time/op"):
    """`runs` (run_spec) of benchmark `name` added to the store of `conn`, sqlite3 or psycopg: the
    same statements, history.query's placeholders."""
    q = history.query
    q(conn, "INSERT INTO machines VALUES (?, 'machine-id', 'AMD EPYC 7B13', 2, 1, 1, ?, "
      "'2026-11-01T00:00:00Z') ON CONFLICT DO NOTHING", (machine, hostname))
    for spec in runs:
        rid = str(uuid.UUID(bytes=hashlib.sha256(f"{name}{machine}{flags}{spec['date']}".encode()).digest()[:16]))
        q(conn, "INSERT INTO runs VALUES (?, 'run', ?, ?, ?, ?, ?, 'Release', ?, 'gcc 12.2.0', ?, ?, "
          "'ipclab run', 0.1, '', '{}')",
          (rid, spec["date"], spec["date"], machine, spec["version"], spec["sha"], flags, spec["kernel"],
           hostname))
        suite, mech = name.split("/")[:2]
        rows = [("iteration", k, spec.get("status", "ok"), v) for k, v in enumerate(spec["values"])]
        if spec.get("aggregate") is not None:
            rows.append(("aggregate", 0, "ok", spec["aggregate"]))
        for seq, (rtype, rep, status, v) in enumerate(rows):
            q(conn, "INSERT INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '{}')",
              (rid, seq, name, suite, mech, rtype, rep, status, metric, v, int(metric == "capacity")))
    conn.commit()
    return conn
