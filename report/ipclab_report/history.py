"""`history BENCH...`: each benchmark's runs in the results store (docs/store.md, "History and
change points") as one series per machine and build, and where each series changed.

A run's value is the median of its ok repetitions (its iterations), with a percentile-bootstrap
95% interval of that median; a run that stored only its aggregate gives the aggregate's value
and no interval. Runs are one series only on one machine (machine_id) with one build
(build_type and build_flags), as the store's schema says.

Change points are found by PELT (Killick, Fearnhead and Eckley 2012, "Optimal detection of
changepoints with a linear computational cost") from the `ruptures` library, on the per-run
values in log space, where a step is a ratio: the same for a time and a rate.
Why ruptures and not `signal-processing-algorithms` (MongoDB's E-divisive means, as Apache Otava
uses it): that package is published as an sdist only and pins numpy < 2 (and pulls gevent and
structlog), so it cannot be installed beside the numpy 2 that matplotlib and scipy use here;
ruptures is maintained, ships wheels and needs only numpy and scipy.

The detector, so that it finds a step and keeps quiet on noise, with nothing tuned to a machine:
  1. noise: sigma = 1.4826 x median |successive difference| / sqrt 2, the series' own run-to-run
     noise (a step is one large difference among many, which the median ignores); taken as
     MIN_STEP / 1.96 at least, so that a series of equal values does not make every hair a change.
  2. PELT with the l2 cost (a change of the mean), segments of MIN_SEGMENT runs at least, and
     the BIC penalty 2 sigma^2 ln n of a new mean in Gaussian noise of that sigma.
  3. each change point PELT gives is kept only when the step (the ratio of the medians of the
     segments either side) is at least the noise band (1.96 sigma: how far one run moves on its
     own) and MIN_STEP, and when a permutation test of the two segments together (the largest
     standardised difference of means over every split, against PERMUTATIONS shuffles, seeded)
     gives p < ALPHA: the significance test E-divisive uses, which also pays for the choice of
     where to split. The weakest point that fails is dropped and the rest judged again.
"""

from __future__ import annotations

import json
import math
import os
import re
import socket
import sqlite3
import stat
import urllib.parse
from dataclasses import dataclass, field

from .stats import bootstrap_median_ci, median
from .util import UsageError, brief, fmt_si, fmt_time_ns, is_number, open_regular, text_table

DEFAULT_STORE = os.path.join("results", "ipclab.sqlite")
SCHEMA_VERSION = 1            # the store's schema this reads (src/core/store/schema.sql)
SQLITE_MAGIC = b"SQLite format 3\0"
MIN_SEGMENT = 2               # runs on each side of a change: one odd run is no change
MIN_STEP = math.log(1.02)     # steps under 2% are not reported, however steady the series
ALPHA = 0.05
PERMUTATIONS = 999
SEED = 0
COMMIT_CHARS = 12
METHOD = ("Change points: PELT (ruptures) on the logs of the runs' medians, kept only where each side holds "
          f"{MIN_SEGMENT} runs or more, the step is beyond the series' own run-to-run noise (1.96 sigma) and 2%, "
          f"and a permutation test ({PERMUTATIONS} shuffles, seeded) gives p < {ALPHA:g}.")
STORE_FIX = "name the store `ipclab run` writes with --store PATH (default results/ipclab.sqlite) or --store postgresql://…"


@dataclass
class Run:
    """One run of one benchmark: where and what it ran, and its value."""

    run_id: str
    date: str
    git_sha: str
    kernel: str
    version: str
    compiler: str
    value: float | None = None
    ci: tuple | None = None
    n: int = 0                 # ok repetitions behind the value (0: the aggregate's alone)
    status: str = "ok"         # ok, or failed / skipped when no record of the run has a value
    change: "Change | None" = None


# What a change point names when it differs between the two runs either side of it.
CHANGED_FIELDS = (("commit", "git_sha"), ("kernel", "kernel"), ("version", "version"), ("compiler", "compiler"))


@dataclass
class Change:
    """A change point: the series' level moves from `before` to `after` from run `index` on."""

    index: int                 # into Series.runs: the first run of the new level
    prev: int                  # into Series.runs: the last run with a value before it
    before: float
    after: float
    p: float
    changed: list              # (what, old, new) of CHANGED_FIELDS that differ between the two runs

    @property
    def pct(self) -> float:
        return (self.after / self.before - 1) * 100


@dataclass
class Series:
    name: str
    metric: str
    higher_better: bool
    machine: dict
    build_type: str
    build_flags: str
    runs: list = field(default_factory=list)
    changes: list = field(default_factory=list)
    sigma: float | None = None   # run-to-run noise, as ln ratio (None: too few runs to judge)

    @property
    def valued(self):
        """The runs with a positive value: those a ratio, and so a change point, can be told of."""
        return [r for r in self.runs if r.value is not None and r.value > 0]


# --- the store ----------------------------------------------------------------------------------

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
PG_CONNECT_SECONDS = 10


def is_postgres(store: str) -> bool:
    """Whether --store names a PostgreSQL database (a libpq URL) rather than an SQLite file."""
    return store.startswith(POSTGRES_SCHEMES)


def store_name(store: str) -> str:
    """The store as output names it: a URL with its password, in the user part or the query, as ***."""
    if not is_postgres(store):
        return store
    shown = re.sub(r"^([a-z]+://[^:@/?]*:)[^@/?]*@", r"\1***@", store)   # user:password@host
    return re.sub(r"([?&]password=)[^&]*", r"\1***", shown)


def query(conn, sql: str, args=()):
    """`sql` run on either store, its rows: the one place the two drivers differ (placeholders:
    sqlite3 takes ?, psycopg %s; the statements themselves are the same)."""
    if not isinstance(conn, sqlite3.Connection):
        sql = sql.replace("?", "%s")
    return conn.execute(sql, args) if args else conn.execute(sql)


def open_store(path: str):
    """The store `path` names, read-only: an SQLite file, or a PostgreSQL database for a
    postgresql:// (postgres://) URL. A store that cannot be read, is not an ipclab store or has a
    schema newer than this reads is a one-line UsageError, found before any other work."""
    shown = f"--store {brief(store_name(path))}"
    conn, errors = _open_postgres(path, shown) if is_postgres(path) else _open_sqlite(path, shown)
    try:
        try:
            version = query(conn, "SELECT value FROM ipclab_store WHERE key = 'schema_version'").fetchone()
        except errors as e:
            raise UsageError(f"{shown} is not an ipclab store ({first_line(e)}); {STORE_FIX}") from None
        if version is None or not str(version[0]).isdigit():
            raise UsageError(f"{shown} is not an ipclab store (no schema_version); {STORE_FIX}")
        if int(version[0]) > SCHEMA_VERSION:
            raise UsageError(f"{shown} has schema version {int(version[0])}, newer than the {SCHEMA_VERSION} "
                             "this ipclab reads; use the ipclab that wrote it, or a newer one")
    except BaseException:
        conn.close()
        raise
    return conn


def first_line(e: Exception) -> str:
    """A driver's error on one line (psycopg's run over several: the query, a hint)."""
    return brief(next((x.strip() for x in str(e).splitlines() if x.strip()), type(e).__name__))


def _open_sqlite(path: str, shown: str):
    """(connection, the errors a query of it raises): the SQLite file at `path`, opened read-only
    (never written, not even its journal); a missing file, a link or anything but a regular SQLite
    file is refused."""
    try:
        fd, st = open_regular(path, "--store", STORE_FIX, follow=False)
    except FileNotFoundError:
        raise UsageError(f"{shown}: no store there; run `ipclab run` to make one, or name the store "
                         "with --store PATH") from None
    with os.fdopen(fd, "rb") as f:
        head = f.read(len(SQLITE_MAGIC))
    if head != SQLITE_MAGIC:
        raise UsageError(f"{shown} is not an SQLite file; {STORE_FIX}")
    uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=10)
    except sqlite3.Error as e:
        raise UsageError(f"{shown}: cannot open it ({e}); check the path and its permissions") from None
    try:
        after = os.lstat(path)
    except OSError:
        after = None
    if after is None or not stat.S_ISREG(after.st_mode) or (after.st_dev, after.st_ino) != (st.st_dev, st.st_ino):
        conn.close()
        raise UsageError(f"{shown} changed while it was opened; run again")  # refuse what was not checked
    return conn, sqlite3.DatabaseError


def _open_postgres(url: str, shown: str):
    """(connection, the errors a query of it raises): the PostgreSQL database of libpq URL `url`,
    read in one read-only transaction (BEGIN READ ONLY, repeatable read: one snapshot)."""
    try:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        raise UsageError(f"{shown}: reading PostgreSQL needs psycopg: pip install 'psycopg[binary]' "
                         "(report/pyproject.toml lists it)") from None
    try:
        params = conninfo_to_dict(url)
    except psycopg.Error as e:
        raise UsageError(f"{shown} is not a PostgreSQL URL ({first_line(e)}); "
                         "e.g. --store postgresql://USER@HOST/DBNAME") from None
    extra = {} if "connect_timeout" in params else {"connect_timeout": PG_CONNECT_SECONDS}
    try:
        conn = psycopg.connect(url, **extra)
    except psycopg.Error as e:
        raise UsageError(f"{shown}: cannot connect ({first_line(e)}); start the server or fix the URL "
                         "in --store") from None
    conn.read_only = True
    conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    return conn, psycopg.Error


# The runs a series is made of: `ipclab run`'s and the result files imported. advise's and ab's
# measurements are stored too, but their windows are their own (advise's fitted to its budget, ab's
# short slices): the harness compares a run with neither, and neither is a point of a series.
SERIES_KINDS = "('run', 'import')"


def benchmark_counts(conn) -> list:
    """(name, runs) of every benchmark in the store, by name (sorted here, by code point, as SQLite
    sorts text: a PostgreSQL database's collation may sort otherwise)."""
    return sorted(query(conn, "SELECT x.name, COUNT(DISTINCT x.run_id) FROM results x JOIN runs r ON r.id = x.run_id"
                              f" WHERE r.kind IN {SERIES_KINDS} GROUP BY x.name").fetchall())


def matching(counts, prefixes) -> list:
    """The names of `counts` that start with any of `prefixes` (a prefix match: `messaging/pipe`
    is every benchmark whose name starts with it); one that matches nothing is a UsageError."""
    names = [n for n, _ in counts]
    for p in prefixes:
        if not any(n.startswith(p) for n in names):
            raise UsageError(f"no benchmark in the store starts with {brief(p)!r}; `ipclab history` without "
                             f"arguments lists the {len(names)} it holds")
    return [n for n in names if any(n.startswith(p) for p in prefixes)]


def _run_value(rows):
    """(value, ci, n, status) of one run's rows (run_type, status, value) of one benchmark."""
    values = [v for t, s, v in rows if t == "iteration" and s == "ok" and is_number(v)]
    if values:
        ci = bootstrap_median_ci(values, SEED) if len(values) > 1 else None
        return median(values), ci, len(values), "ok"
    agg = [v for t, s, v in rows if t == "aggregate" and s == "ok" and is_number(v)]
    if agg:
        return agg[0], None, 0, "ok"
    states = {s for _, s, _ in rows}
    return None, None, 0, "failed" if "failed" in states else (states - {"ok"} or {"no value"}).pop()


def load_series(conn, names) -> list:
    """Every series (machine x build) of each benchmark of `names`, its runs by date."""
    machines = {row[0]: dict(zip(("id", "cpu_model", "logical_cpus", "hostname"), row))
                for row in query(conn, "SELECT id, cpu_model, logical_cpus, hostname FROM machines")}
    out = []
    for name in names:
        grouped = {}   # (metric, machine, build type, flags) -> {run id: (run columns, [rows])}
        rows = query(conn, "SELECT r.id, r.date, r.git_sha, r.kernel, r.version, r.compiler, r.machine_id,"
                     " r.build_type, r.build_flags, x.metric, x.higher_better, x.run_type, x.status, x.value, x.seq"
                     " FROM results x JOIN runs r ON r.id = x.run_id WHERE x.name = ?"
                     f" AND r.kind IN {SERIES_KINDS}", (name,)).fetchall()
        # by date, run and place, sorted here as SQLite sorts text (a database's collation may not)
        for row in sorted(rows, key=lambda r: (r[1], r[0], r[14])):
            key = (row[9], bool(row[10]), row[6], row[7], row[8])
            runs = grouped.setdefault(key, {})
            runs.setdefault(row[0], (row[:6], []))[1].append(row[11:14])
        for (metric, higher, machine, btype, flags), runs in grouped.items():
            s = Series(name, metric, higher, machines.get(machine, {"id": machine}), btype, flags)
            for columns, rows in runs.values():
                value, ci, n, status = _run_value(rows)
                s.runs.append(Run(*columns, value=value, ci=ci, n=n, status=status))
            out.append(s)
    return out


def select(series, machine=None, all_flags=False):
    """(series shown, a line saying whose). Default: this host's machines if it has series, else
    every machine's; of each benchmark and machine, the build of its newest run unless `all_flags`."""
    if machine is not None:
        shown = [s for s in series if s.machine["id"] == machine]
        if not shown:
            known = sorted({f"{s.machine['id']} ({s.machine.get('hostname', '?')})" for s in series})
            raise UsageError(f"--machine {brief(machine)}: no run of these benchmarks on it; their machines: "
                             f"{', '.join(known)}")
        whose = f"machine {machine}"
    else:
        host = socket.gethostname()
        shown = [s for s in series if s.machine.get("hostname") == host]
        whose = f"this host's ({host}); --machine ID for another" if shown else \
            f"every machine's (none is this host, {host})"
        shown = shown or series
    if not all_flags:
        newest = {}
        for s in shown:
            key = (s.name, s.metric, s.machine["id"])
            if key not in newest or s.runs[-1].date > newest[key].runs[-1].date:
                newest[key] = s
        hidden = len(shown) - len(newest)
        shown = [s for s in shown if newest[(s.name, s.metric, s.machine["id"])] is s]
        whose += f"; the build of each newest run ({hidden} other build series: --all-flags)" if hidden else ""
    return sorted(shown, key=lambda s: (s.name, s.metric, s.machine["id"], s.build_type, s.build_flags)), whose


# --- change points ------------------------------------------------------------------------------

def noise_sigma(logs) -> float:
    """The run-to-run noise of a series in log space, robust to its steps (see above)."""
    import numpy as np

    return 1.4826 * float(np.median(np.abs(np.diff(np.asarray(logs, dtype=float))))) / math.sqrt(2)


def _largest_split(x):
    """Per row of `x`: the largest |mean left - mean right| x sqrt(nl nr / n) over every split
    leaving MIN_SEGMENT values a side (the l2 cost a split saves, as a standard score)."""
    import numpy as np

    n = x.shape[1]
    c = np.cumsum(x, axis=1)
    t = np.arange(MIN_SEGMENT, n - MIN_SEGMENT + 1)
    left, right = c[:, t - 1] / t, (c[:, -1:] - c[:, t - 1]) / (n - t)
    return np.max(np.abs(left - right) * np.sqrt(t * (n - t) / n), axis=1)


def split_p(logs) -> float:
    """Permutation p of "the values hold a step somewhere", seeded: the same values, the same p."""
    import numpy as np

    x = np.asarray(logs, dtype=float)
    seen = _largest_split(x[None, :])[0]
    shuffled = np.random.default_rng(SEED).permuted(np.tile(x, (PERMUTATIONS, 1)), axis=1)
    return float((1 + np.sum(_largest_split(shuffled) >= seen * (1 - 1e-9))) / (PERMUTATIONS + 1))


def change_points(values):
    """(starts, sigma): the indices of `values` (positive, in order) where a new level starts,
    with each step's p, and the series' noise; ([], None) under 2 x MIN_SEGMENT values."""
    import numpy as np
    import ruptures

    if len(values) < 2 * MIN_SEGMENT:
        return [], None
    logs = np.log(np.asarray(values, dtype=float))
    sigma = noise_sigma(logs)
    band = max(1.96 * sigma, MIN_STEP)
    floored = band / 1.96   # equal values would make every hair a change
    starts = ruptures.Pelt(model="l2", min_size=MIN_SEGMENT, jump=1).fit(logs.reshape(-1, 1)) \
        .predict(pen=2 * floored ** 2 * math.log(len(logs)))[:-1]
    tested = {}   # (first, end) -> p: a segment pair left as it was is not shuffled again
    while True:
        edges = [0, *starts, len(logs)]
        judged = []
        for a, b, c in zip(edges, edges[1:], edges[2:]):
            if (a, c) not in tested:
                tested[(a, c)] = split_p(logs[a:c])
            judged.append((tested[(a, c)], abs(math.log(median(values[b:c]) / median(values[a:b])))))
        weak = [i for i, (p, step) in enumerate(judged) if p >= ALPHA or step < band]
        if not weak:
            return [(s, p) for s, (p, _) in zip(starts, judged)], sigma
        del starts[max(weak, key=lambda i: (judged[i][0], -judged[i][1]))]


def detect(s: Series) -> Series:
    """Fills s.changes, s.sigma and each changed run's mark."""
    runs = s.valued
    values = [r.value for r in runs]
    starts, s.sigma = change_points(values)
    edges = [0, *(i for i, _ in starts), len(runs)]
    for k, (i, p) in enumerate(starts):
        old, new = runs[i - 1], runs[i]
        changed = [(what, getattr(old, key), getattr(new, key)) for what, key in CHANGED_FIELDS
                   if getattr(old, key) != getattr(new, key)]
        c = Change(s.runs.index(new), s.runs.index(old), median(values[edges[k]:i]),
                   median(values[i:edges[k + 2]]), p, changed)
        new.change = c
        s.changes.append(c)
    return s


# --- output -------------------------------------------------------------------------------------

def unit(metric: str) -> str:
    return "/s" if metric == "capacity" else "ns"


def fmt_value(metric: str, v) -> str:
    """A run's figure in its metric's unit: a time for time/op and p99, a rate for capacity."""
    return fmt_si(v, "/s") if metric == "capacity" else fmt_time_ns(v)


def short_date(date: str) -> str:
    """'2026-11-29T08:49:58Z' -> '2026-11-29 08:49'."""
    return date.replace("T", " ")[:16]


def run_label(r: Run) -> str:
    return f"{r.git_sha[:COMMIT_CHARS]}, {r.kernel}"


def change_text(s: Series, c: Change) -> str:
    r, before = s.runs[c.index], s.runs[c.prev]
    what = "; ".join(f"{w} {o[:COMMIT_CHARS] if w == 'commit' else o} and {n[:COMMIT_CHARS] if w == 'commit' else n}"
                     for w, o, n in c.changed) or \
        f"two runs of the same commit, kernel, version and compiler ({run_label(before)}): nothing recorded changed"
    return (f"change at {short_date(r.date)} ({run_label(r)}): {fmt_value(s.metric, c.before)} → "
            f"{fmt_value(s.metric, c.after)} ({c.pct:+.1f}%, p={c.p:.3g}), between {what}")


def what(s: Series) -> str:
    """What a series' figure is: 'time/op, median of each run's repetitions (ns)'."""
    return f"{s.metric}, median of each run's repetitions ({unit(s.metric)})"


def where(s: Series) -> str:
    """Whose series it is: the machine and the build."""
    m = s.machine
    return (f"machine {m['id']} ({m.get('cpu_model', '?')}, host {m.get('hostname', '?')}), "
            f"build {s.build_type} {s.build_flags or '(no extra flags)'}")


def run_rows(s: Series):
    """(head, rows) of a series' table: one row per run, its change point marked."""
    head = ["#", "date", "commit", "kernel", s.metric, "95% CI", "n", "change"]
    body = []
    for i, r in enumerate(s.runs, 1):
        ci = f"{fmt_value(s.metric, r.ci[0])} – {fmt_value(s.metric, r.ci[1])}" if r.ci else "—"
        value = fmt_value(s.metric, r.value) if r.value is not None else r.status
        mark = f"◆ {r.change.pct:+.1f}%" if r.change else ""
        body.append([str(i), short_date(r.date), r.git_sha[:COMMIT_CHARS], r.kernel, value, ci,
                     str(r.n) if r.n else "agg" if r.value is not None else "—", mark])
    return head, body


def noise_text(s: Series) -> str:
    """The series' noise, and what a run's interval is not."""
    if s.sigma is None:
        return f"too few runs to look for change points ({len(s.valued)} with a value; needs {2 * MIN_SEGMENT})"
    band = max(1.96 * s.sigma, MIN_STEP)
    return (f"run-to-run noise ±{s.sigma * 100:.1f}% (a run's 95% CI spans its own repetitions only); "
            f"steps under ±{(math.exp(band) - 1) * 100:.1f}% or with p ≥ {ALPHA:g} are not reported")


def series_text(s: Series) -> str:
    head, body = run_rows(s)
    out = [f"{s.name} — {what(s)}", where(s), *text_table(head, body, right={0, 4, 5, 6}), noise_text(s)]
    out += [change_text(s, c) for c in s.changes] or \
        ([f"no change point in {len(s.valued)} runs"] if s.sigma is not None else [])
    return "\n".join(out)


def listing(counts) -> str:
    if not counts:
        return "the store holds no benchmark yet; `ipclab run` adds its runs"
    body = [[name, str(n)] for name, n in counts]
    return "\n".join(text_table(["benchmark", "runs"], body, right={1}) +
                     [f"{len(counts)} benchmark{'s' if len(counts) > 1 else ''}; `ipclab history BENCH` shows "
                      "one's series (BENCH: a name or its prefix)"])


def to_json(store: str, series) -> dict:
    def run(r: Run):
        return {"run_id": r.run_id, "date": r.date, "git_sha": r.git_sha, "kernel": r.kernel, "version": r.version,
                "compiler": r.compiler, "value": r.value, "ci95": list(r.ci) if r.ci else None, "n": r.n,
                "status": r.status, "change_point": r.change is not None}

    return {
        "store": store, "store_schema_version": SCHEMA_VERSION,
        "method": {"detector": "PELT (ruptures), l2 cost on ln(value)", "min_segment": MIN_SEGMENT,
                   "min_step_pct": round((math.exp(MIN_STEP) - 1) * 100, 6), "alpha": ALPHA, "permutations": PERMUTATIONS,
                   "seed": SEED},
        "series": [{"name": s.name, "metric": s.metric, "unit": unit(s.metric), "higher_better": s.higher_better,
                    "machine": s.machine, "build_type": s.build_type, "build_flags": s.build_flags,
                    "noise_pct": s.sigma * 100 if s.sigma is not None else None,
                    "runs": [run(r) for r in s.runs],
                    "changes": [{"index": c.index, "run_id": s.runs[c.index].run_id, "date": s.runs[c.index].date,
                                 "before": c.before, "after": c.after, "change_pct": c.pct, "p": c.p,
                                 "changed": {w: [o, n] for w, o, n in c.changed}, "text": change_text(s, c)}
                                for c in s.changes]} for s in series]}


def json_text(store: str, series) -> str:
    return json.dumps(to_json(store, series), indent=1, ensure_ascii=False) + "\n"
