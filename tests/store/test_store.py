"""The results store (issue 54, docs/store.md): every run goes into it, the next run says what moved
since the last comparable one, and a store that cannot be used never costs a run — refused up
front when it cannot be a store, skipped with one line when it is busy."""
import json
import os
import signal
import sqlite3
import stat
import subprocess
import threading
import time

import pytest

BINARY = os.environ.get("IPCLAB_BIN", "")
# A steady point: a pipe round trip on one CPU, several repetitions so that the U test can speak.
PIPE = ["messaging/pipe", "-p", "pattern=roundtrip", "-p", "placement=same", "--cpus", "0",
        "--duration", "0.1", "--warmup", "0.02"]


@pytest.fixture
def lab(tmp_path):
    if not BINARY or not os.access(BINARY, os.X_OK):
        pytest.skip("IPCLAB_BIN does not name the ipclab binary")
    (tmp_path / "tmp").mkdir(mode=0o700)
    env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"), XDG_STATE_HOME=str(tmp_path / "state"))
    env.pop("IPCLAB_NO_STORE", None)
    counter = iter(range(1000))

    def go(*args, extra_env=None, verb="run", out=True, reps=3, wait=True):
        cmd = [BINARY, verb, *args]
        folder = None
        if verb == "run":
            cmd += ["--repetitions", str(reps)]
            if out:
                folder = tmp_path / f"r{next(counter)}"
                cmd += ["--out", str(folder)]
        e = dict(env, **(extra_env or {}))
        if not wait:
            return subprocess.Popen(cmd, cwd=tmp_path, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True), folder
        r = subprocess.run(cmd, cwd=tmp_path, env=e, capture_output=True, text=True, timeout=300)
        r.folder = folder
        return r

    go.path = tmp_path
    go.store = tmp_path / "ipclab.sqlite"
    return go


def rows(store, sql, *args):
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
        return db.execute(sql, args).fetchall()


def summary(folder):
    recs = json.loads((folder / "results.json").read_text())["benchmarks"]
    return next(r for r in recs if r["run_type"] == "aggregate")


def test_every_run_is_stored_and_the_next_compares_with_it(lab):
    first = lab(*PIPE)
    assert first.returncode == 0, first.stderr
    assert f"stored in {lab.store}" in first.stderr
    # The store beside the result folder: the run, its machine and every record (3 repetitions, 1 median).
    (run_id, kind, sha, flags), = rows(lab.store, "SELECT id, kind, git_sha, build_flags FROM runs")
    assert kind == "run" and flags and sha
    ctx = json.loads((first.folder / "results.json").read_text())["context"]
    assert flags == ctx["build_flags"] and sha == ctx["git_sha"]
    # The commit the binary was built from (its --version), not the source tree's HEAD of today.
    built = subprocess.run([BINARY, "--version"], capture_output=True, text=True).stdout
    assert f"commit      {sha}\n" in built, (sha, built)
    assert rows(lab.store, "SELECT run_type, count(*) FROM results GROUP BY run_type ORDER BY 1") == [
        ("aggregate", 1), ("iteration", 3)]
    (machine, cpus), = rows(lab.store, "SELECT id, logical_cpus FROM machines")
    assert cpus == ctx["cpu"]["logical_cpus"] and len(machine) == 16
    assert rows(lab.store, "SELECT value FROM ipclab_store WHERE key = 'schema_version'") == [("1",)]
    assert "since" not in summary(first.folder)["extra"]  # nothing earlier to compare with

    second = lab(*PIPE)
    assert second.returncode == 0, second.stderr
    since = summary(second.folder)["extra"]["since"]
    assert since["base"]["run_id"] == run_id and since["metric"] == "time/op" and since["n"] == 3
    assert since["verdict"] in {"no change", "slower", "faster", "slower?", "faster?"}
    assert since["ci"][0] <= since["ratio"] <= since["ci"][1]
    # Said at the end of the console and in summary.md, naming the run compared with.
    assert "Since the last comparable run in the store" in second.stdout
    assert "Since the last comparable run in the store" in (second.folder / "results.md").read_text()
    assert len(rows(lab.store, "SELECT id FROM runs")) == 2


def test_an_injected_slowdown_is_named_with_its_size(lab):
    base = lab(*PIPE, reps=5)
    assert base.returncode == 0, base.stderr
    ns = summary(base.folder)["time_per_op_ns"]
    # The slow fault hook adds this much per message on the receiving side: about 20 times the round
    # trip, far beyond what a loaded machine's own noise moves a run by (a CPU hog on the pipe's CPU
    # widened the band to ±256% of a +100% step: rightly "no change" then).
    slow = lab(*PIPE, reps=5, extra_env={"IPCLAB_FAULT": f"slow:pipe:{int(ns * 20)}"})
    assert slow.returncode == 0, slow.stderr
    since = summary(slow.folder)["extra"]["since"]
    assert since["verdict"] == "slower", since
    assert since["ratio"] > 5 and since["ci"][0] > 2, since
    assert "slower: time/op +" in slow.stdout, slow.stdout


def test_no_store_and_its_variable_store_nothing(lab):
    assert lab(*PIPE, "--no-store").returncode == 0
    assert lab(*PIPE, extra_env={"IPCLAB_NO_STORE": "1"}).returncode == 0
    assert not lab.store.exists()
    r = lab(*PIPE, "--no-store", "--store", str(lab.path / "x.sqlite"))
    assert r.returncode == 2 and "choose one" in r.stderr


def refused(lab, *args):
    """The run is refused in one line, exit 2, before it creates its result folder."""
    r = lab(*PIPE, *args)
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    assert not r.folder.exists()
    return lines[0]


def test_a_newer_schema_is_refused_naming_its_version(lab):
    assert lab(*PIPE).returncode == 0
    with sqlite3.connect(lab.store) as db:
        db.execute("UPDATE ipclab_store SET value = '7' WHERE key = 'schema_version'")
    line = refused(lab)
    assert "schema version 7" in line and "--no-store" in line


def test_a_damaged_or_foreign_file_is_refused_and_left_as_it_is(lab):
    lab.store.write_bytes(b"not a database at all\n" * 200)
    before = lab.store.read_bytes()
    line = refused(lab)
    assert str(lab.store) in line and "--store" in line
    assert lab.store.read_bytes() == before
    assert [p.name for p in lab.path.iterdir() if p.name.startswith("ipclab.sqlite")] == ["ipclab.sqlite"]
    other = lab.path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x)")
    before = other.read_bytes()
    assert "not an ipclab store" in refused(lab, "--store", str(other))
    assert other.read_bytes() == before


def test_links_fifos_and_missing_folders_are_refused_without_blocking(lab):
    target = lab.path / "real.sqlite"
    assert lab(*PIPE, "--store", str(target)).returncode == 0
    link = lab.path / "link.sqlite"
    link.symlink_to(target)
    assert "symbolic link" in refused(lab, "--store", str(link))
    fifo = lab.path / "fifo.sqlite"
    os.mkfifo(fifo)
    assert "not a regular file" in refused(lab, "--store", str(fifo))
    assert "no folder" in refused(lab, "--store", str(lab.path / "nowhere" / "s.sqlite"))
    assert "--store-wait" in refused(lab, "--store-wait", "forever")


def test_a_locked_store_is_waited_for_then_skipped_in_one_line(lab):
    assert lab(*PIPE).returncode == 0
    db = sqlite3.connect(lab.store, isolation_level=None)
    db.execute("BEGIN EXCLUSIVE")  # another writer holds it for the whole run
    try:
        r = lab(*PIPE, "--store-wait", "0.3")
    finally:
        db.execute("ROLLBACK")
        db.close()
    assert r.returncode == 0, r.stderr
    assert (r.folder / "results.json").exists()  # the run's files are written either way
    warnings = [l for l in r.stderr.splitlines() if "is locked by another writer" in l]
    assert len(warnings) in (1, 2) and all(l.startswith("warning: store") for l in warnings), r.stderr
    assert len(rows(lab.store, "SELECT id FROM runs")) == 1


def test_concurrent_writers_lose_nothing(lab):
    runs = [lab(*PIPE, wait=False) for _ in range(3)]
    for p, folder in runs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    assert len(rows(lab.store, "SELECT id FROM runs")) == 3
    assert rows(lab.store, "SELECT count(*) FROM results") == [(12,)]


def test_a_run_killed_before_its_end_leaves_the_store_as_it_was(lab):
    assert lab(*PIPE).returncode == 0
    before = rows(lab.store, "SELECT count(*) FROM results")
    p, folder = lab("messaging/pipe", "-p", "pattern=roundtrip", "--duration", "2", wait=False)
    time.sleep(1.5)
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=60)
    assert rows(lab.store, "SELECT count(*) FROM results") == before
    assert rows(lab.store, "PRAGMA integrity_check") == [("ok",)]


def test_import_takes_result_files_and_journals(lab):
    r = lab(*PIPE, "--no-store")
    assert r.returncode == 0
    results = r.folder / "results.json"
    journal = lab.path / "j.jsonl"
    doc = json.loads(results.read_text())
    journal.write_text("\n".join([json.dumps({"ipclab_journal": 1, "schema_version": 1, "context": doc["context"]})]
                                 + [json.dumps(b) for b in doc["benchmarks"]]) + "\n")
    store = lab.path / "imported.sqlite"
    imp = lab("import", str(journal), "--store", str(store), verb="store")
    assert imp.returncode == 0, imp.stderr
    assert rows(store, "SELECT kind, source FROM runs") == [("import", str(journal))]
    assert rows(store, "SELECT count(*) FROM results") == [(4,)]
    # The file holds the same run as the journal: not added again, said so.
    again = lab("import", str(results), "--store", str(store), verb="store")
    assert again.returncode == 0 and "already in" in again.stdout, again.stdout
    assert len(rows(store, "SELECT id FROM runs")) == 1
    other = lab.path / "other.sqlite"
    assert lab("import", str(results), "--store", str(other), verb="store").returncode == 0
    assert rows(other, "SELECT kind, source FROM runs") == [("import", str(results))]
    # Not a result file: one line, exit 2, nothing stored.
    junk = lab.path / "junk.json"
    junk.write_text("[1, 2]")
    bad = lab("import", str(junk), "--store", str(store), verb="store")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "junk.json" in bad.stderr
    assert len(rows(store, "SELECT id FROM runs")) == 1


def test_new_hardware_starts_a_new_series(lab):
    first = lab(*PIPE)
    assert first.returncode == 0
    (first_id,), = rows(lab.store, "SELECT id FROM runs")
    # The same results as if from a machine with other hardware, stored after it: 64 CPUs, 10x slower.
    doc = json.loads((first.folder / "results.json").read_text())
    doc["context"]["cpu"]["logical_cpus"] = 64
    doc["context"]["command_line"] += " --on-the-new-machine"  # another run, not this one imported again
    for b in doc["benchmarks"]:
        b["time_per_op_ns"] *= 10
    other = lab.path / "other.json"
    other.write_text(json.dumps(doc))
    assert lab("import", str(other), "--store", str(lab.store), verb="store").returncode == 0
    assert len(rows(lab.store, "SELECT id FROM machines")) == 2
    second = lab(*PIPE)
    since = summary(second.folder)["extra"]["since"]
    assert since["base"]["run_id"] == first_id, since  # this machine's run, not the other's
    assert since["history_runs"] == 1


def test_advise_adds_its_measurements_to_a_store_it_is_given(lab):
    store = lab.path / "advise.sqlite"
    r = lab("--only", "pipe", "--only", "unix_stream", "--placement", "same", "--budget", "10",
            "--store", str(store), verb="advise")
    assert r.returncode in (0, 1), r.stderr
    assert f"advise: stored in {store}" in r.stderr
    (kind, context), = rows(store, "SELECT kind, context FROM runs")
    assert kind == "advise" and "answer" in json.loads(context)["advise"]
    names = {n for (n,) in rows(store, "SELECT DISTINCT mechanism FROM results")}
    assert names == {"pipe", "unix_stream"}, names


def test_a_reduced_file_compares_by_the_repetitions_its_median_kept(lab):
    """A reduced file (`report --reduce`) keeps medians only; imported, it is compared by the times
    per op its median's spread kept, as `compare` reads it."""
    r = lab(*PIPE, "--no-store", reps=5)
    assert r.returncode == 0
    reduced = lab.path / "reduced.json"
    red = lab(str(r.folder / "results.json"), "--reduce", str(reduced), verb="report")
    assert red.returncode == 0, red.stderr
    imp = lab("import", str(reduced), "--store", str(lab.store), verb="store")
    assert imp.returncode == 0, imp.stderr
    assert rows(lab.store, "SELECT run_type FROM results") == [("aggregate",)]
    after = lab(*PIPE, reps=5)
    since = summary(after.folder)["extra"]["since"]
    assert since["base"]["n"] == 5 and since["n"] == 5, since


def test_ab_keeps_each_sides_slices_apart_from_the_series(lab):
    store = lab.path / "ab.sqlite"
    r = lab(BINARY, BINARY, "messaging/pipe", "-p", "pattern=roundtrip", "-p", "placement=same", "--cpus", "0",
            "--pairs", "2", "--duration", "0.05", "--warmup", "0.01", "--store", str(store), verb="ab")
    assert r.returncode in (0, 1), r.stderr
    assert "side A: 2 slices stored" in r.stderr and "side B: 2 slices stored" in r.stderr, r.stderr
    kinds = rows(store, "SELECT kind, json_extract(context, '$.ab.side') FROM runs ORDER BY 2")
    assert kinds == [("ab", "A"), ("ab", "B")]
    # A run compares with no ab slice: nothing earlier that counts.
    after = lab(*PIPE, "--store", str(store))
    assert after.returncode == 0 and "since" not in summary(after.folder)["extra"]
    bad = lab("import", "-", "--kind", "other", "--store", str(store), verb="store")
    assert bad.returncode == 2 and "--kind" in bad.stderr


def test_import_can_say_what_moved_before_it_adds(lab):
    first = lab(*PIPE)
    assert first.returncode == 0
    second = lab(*PIPE, "--no-store")
    imp = lab("import", "--compare", str(second.folder / "results.json"), "--store", str(lab.store), verb="store")
    assert imp.returncode == 0, imp.stderr
    assert "Since the last comparable run in the store" in imp.stdout, imp.stdout
    # Within its band (counted) or beyond it (named): said either way.
    assert "1 of 1 benchmark: no change" in imp.stdout or "messaging/pipe" in imp.stdout, imp.stdout
    assert len(rows(lab.store, "SELECT id FROM runs")) == 2
