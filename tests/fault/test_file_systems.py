"""No run is lost to a file system or to a neighbour run (issue 50).

File systems: a result written where renameat2's RENAME_NOREPLACE is missing (NFS, 9p, most FUSE
file systems answer it with EINVAL) is put in place by link(2) + unlink(2), or, where hard links
are missing too, by an exclusive reservation renamed over; the run says once which way it used and
loses nothing: --json, --out's three files, and the journal a crash leaves. The stand-in is a
passthrough FUSE file system (tests/fault/fuse_passthrough.py, fusepy over libfuse 2, which has no
rename flags), mounted by the test and unmounted on every way out. The same runs on ext4 and tmpfs.

Neighbours: a result file (--json, --markdown, --out's) is one run's at a time: a second run naming
it, by whatever path, is refused before it runs anything (exit 2, naming the run that holds it), and
the first run's results are whole. --csv stays shared: runs append whole rows side by side.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ipc_objects

UID = os.geteuid()
QUICK = ["--duration", "0.05", "--warmup", "0", "--repetitions", "2", "-p", "size=64"]
HERE = Path(__file__).resolve().parent
NOTE = "'s file system has no RENAME_NOREPLACE; new files there are put in place with "


def fs_type(path):
    return subprocess.run(["stat", "-f", "-c", "%T", str(path)], capture_output=True, text=True).stdout.strip()


def fusepy_python():
    """An interpreter that imports fusepy (Debian's python3-fusepy is /usr/bin/python3's), or None."""
    for py in dict.fromkeys([sys.executable, "/usr/bin/python3", shutil.which("python3")]):
        if py and os.access(py, os.X_OK) and subprocess.run(
                [py, "-c", "import importlib.util as u, sys; sys.exit(not (u.find_spec('fusepy') or u.find_spec('fuse')))"],
                capture_output=True).returncode == 0:
            return py
    return None


@pytest.fixture(params=["link", "no-link"])
def fuse_dir(request, tmp_path):
    """A folder on the passthrough FUSE file system: with hard links (the link(2) way), or without
    (the reservation). Unmounted, and its process ended, on every way out."""
    py = fusepy_python()
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse: this kernel or container has no FUSE")
    if py is None:
        pytest.skip("fusepy is missing (Debian: python3-fusepy; scripts/setup.sh installs it)")
    if UID != 0 and not shutil.which("fusermount"):
        pytest.skip("not root and no fusermount: cannot mount a FUSE file system here")
    backing, mnt = tmp_path / "backing", tmp_path / "mnt"
    backing.mkdir()
    mnt.mkdir()
    args = [py, str(HERE / "fuse_passthrough.py"), str(backing), str(mnt)]
    if request.param == "no-link":
        args.append("--no-link")
    fs = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not os.path.ismount(mnt):
            if fs.poll() is not None:
                pytest.skip(f"the FUSE file system did not mount: {fs.stderr.read().strip()[-300:]}")
            assert time.monotonic() < deadline, "the FUSE file system did not mount within 30 s"
            time.sleep(0.05)
        assert fs_type(mnt).startswith("fuse"), fs_type(mnt)
        yield mnt, request.param
    finally:
        if os.path.ismount(mnt):
            subprocess.run(["umount", str(mnt)] if UID == 0 else ["fusermount", "-u", str(mnt)],
                           capture_output=True)
        try:
            fs.wait(timeout=10)
        except subprocess.TimeoutExpired:
            fs.kill()
            fs.wait()


def notes(p):
    return [line for line in p.stderr.splitlines() if NOTE in line]


def assert_whole_result(path, mechanisms, reps=2):
    doc = json.loads(Path(path).read_text())
    its = [b for b in doc["benchmarks"] if b["run_type"] == "iteration"]
    assert sorted({b["suite"] + "/" + b["mechanism"] for b in its}) == sorted(mechanisms)
    assert len(its) == reps * len(mechanisms) and all(b["status"] == "ok" for b in its), its


def state_left(lab):
    state = lab.tmpdir / f"ipclab-{UID}"
    return sorted(p.name for p in state.iterdir()) if state.exists() else []


def test_results_survive_a_file_system_without_rename_noreplace(lab, fuse_dir):
    mnt, kind = fuse_dir
    way = "link(2) and unlink(2)" if kind == "link" else "an O_EXCL reservation and rename(2)"
    p = lab.run("run", "messaging/pipe", *QUICK, "--json", mnt / "r.json", "--markdown", mnt / "r.md")
    assert p.returncode == 0, p.stderr
    # Said once, naming the way: the journal's commit is the first (and only) no-replace rename.
    [note] = notes(p)
    assert note.startswith(f"ipclab: {mnt}") and note.endswith(way), note
    assert_whole_result(mnt / "r.json", ["messaging/pipe"])
    assert "messaging/pipe" in (mnt / "r.md").read_text()
    p = lab.run("run", "messaging/pipe", *QUICK, "--out", mnt / "out")
    assert p.returncode == 0, p.stderr
    assert len(notes(p)) == 1, p.stderr
    assert sorted(x.name for x in (mnt / "out").iterdir()) == ["results.csv", "results.json", "results.md"]
    assert_whole_result(mnt / "out" / "results.json", ["messaging/pipe"])
    # Nothing else there: no temporary, no journal, no reservation; nothing in TMPDIR either.
    # The results store beside --out's folder, written on this file system too.
    assert sorted(x.name for x in mnt.iterdir()) == ["ipclab.sqlite", "out", "r.json", "r.md"]
    assert state_left(lab) == []


def test_a_crash_keeps_its_journal_on_a_file_system_without_rename_noreplace(lab, fuse_dir):
    mnt, _ = fuse_dir
    before = ipc_objects()
    # The crash handler commits the journal's temporary itself (its first record is the failed one).
    p = lab.run("run", "messaging/pipe", "-p", "mode=threads", "-p", "size=64", "-p", "pattern=throughput",
                "--duration", "0.2", "--warmup", "0", "--repetitions", "1", "--out", mnt / "out",
                env={"IPCLAB_FAULT": "crash:pipe:producer:abort"})
    assert p.returncode == -signal.SIGABRT, (p.returncode, p.stderr)
    [journal] = sorted((mnt / "out").glob("results.journal.*.jsonl"))
    lines = journal.read_text().splitlines()
    assert json.loads(lines[0])["ipclab_journal"] == 1
    [record] = [json.loads(line) for line in lines[1:]]
    assert record["status"] == "failed" and "SIGABRT" in record["error"]
    assert sorted(x.name for x in (mnt / "out").iterdir()) == [journal.name]
    assert ipc_objects() - before == set()
    assert state_left(lab) == []


@pytest.mark.parametrize("where", ["ext4", "tmpfs"])
def test_results_are_written_whole_on_ext4_and_tmpfs(lab, where, tmp_path):
    if where == "tmpfs":
        shm = Path("/dev/shm")
        if fs_type(shm) != "tmpfs" or not os.access(shm, os.W_OK):
            pytest.skip("/dev/shm is not a writable tmpfs here")
        folder = Path(subprocess.run(["mktemp", "-d", "/dev/shm/ipclab-fs-test.XXXXXX"], capture_output=True,
                                     text=True, check=True).stdout.strip())
    else:
        folder = tmp_path / "results"
        folder.mkdir()
        if fs_type(folder) != "ext2/ext3":  # stat -f names ext4 so
            pytest.skip(f"{folder} is on {fs_type(folder)}, not ext4")
    try:
        p = lab.run("run", "messaging/pipe", *QUICK, "--out", folder / "out")
        assert p.returncode == 0, p.stderr
        assert notes(p) == [], p.stderr  # one step here: nothing to say
        assert_whole_result(folder / "out" / "results.json", ["messaging/pipe"])
        assert sorted(x.name for x in (folder / "out").iterdir()) == ["results.csv", "results.json", "results.md"]
    finally:
        if where == "tmpfs":
            shutil.rmtree(folder)


# ---- neighbour runs --------------------------------------------------------------------------------

LONG = ["--duration", "0.5", "--warmup", "0", "--repetitions", "3", "-p", "size=64"]


def start_holder(lab, *target):
    """A run that holds `target` for a few seconds; returns it once its lock is taken (its journal's
    temporary exists: open() takes the lock first)."""
    holder = lab.start("run", "messaging/pipe", *LONG, *target)
    deadline = time.monotonic() + 30
    folder = lab.work / target[1] if target[0] == "--out" else (lab.work / target[1]).parent
    while not list(folder.glob(".*.ipclab.*.tmp")):
        assert holder.poll() is None, holder.communicate()
        assert time.monotonic() < deadline, "the first run took no lock within 30 s"
        time.sleep(0.02)
    return holder


@pytest.mark.parametrize("second", [
    pytest.param(["--out", "cout"], id="same-out"),
    pytest.param(["--json", "cout/results.json"], id="json-into-its-out"),
    pytest.param(["--markdown", "./x/../cout/results.md"], id="markdown-by-another-path"),
])
def test_a_second_run_on_the_same_result_file_is_refused_and_the_first_keeps_its_results(lab, second):
    holder = start_holder(lab, "--out", "cout")
    try:
        (lab.work / "x").mkdir()
        p = lab.run("run", "messaging/unix_stream", "--duration", "0.05", "--repetitions", "1", *second)
        err = [line for line in p.stderr.splitlines() if not line.startswith("warning: ")]
        assert p.returncode == 2, p.stderr
        assert len(err) == 1 and "is being written by ipclab run " in err[0], err
        assert f"ipclab run {holder.pid}." in err[0] and "another path" in err[0], err
    finally:
        out, errs = holder.communicate(timeout=120)
    assert holder.returncode == 0, errs
    assert_whole_result(lab.work / "cout" / "results.json", ["messaging/pipe"], reps=3)
    csv = (lab.work / "cout" / "results.csv").read_text().splitlines()
    assert len(csv) == 1 + 3 + 1, csv  # the header, three repetitions and their median
    assert sorted(x.name for x in (lab.work / "cout").iterdir()) == ["results.csv", "results.json", "results.md"]
    assert state_left(lab) == []
    # Its lock went with it: the same file is free for the next run.
    p = lab.run("run", "messaging/unix_stream", "--duration", "0.05", "--repetitions", "1", "--out", "cout")
    assert p.returncode == 0, p.stderr
    assert_whole_result(lab.work / "cout" / "results.json", ["messaging/unix_stream"], reps=1)


def test_runs_side_by_side_append_whole_rows_to_one_csv(lab):
    first = lab.start("run", "messaging/pipe", *LONG, "--csv", "shared.csv")
    second = lab.run("run", "messaging/unix_stream", *LONG, "--csv", "shared.csv")
    first.communicate(timeout=120)
    assert first.returncode == 0 and second.returncode == 0, second.stderr
    rows = (lab.work / "shared.csv").read_text().splitlines()
    header = rows[0].split(",")
    assert rows.count(rows[0]) == 1 and len(rows) == 1 + 2 * 4, rows
    assert all(len(r.split(",")) >= len(header) for r in rows[1:]), rows
    assert sorted({r.split(",")[header.index("mechanism")] for r in rows[1:]}) == ["pipe", "unix_stream"]


# ---- where ipclab runs from ------------------------------------------------------------------------

def test_a_build_tree_ipclab_ignores_an_exported_bundle_variable(lab):
    # IPCLAB_BUNDLE is the bundle launcher's word to the process it starts; exported into a shell
    # (here: pointing at a folder that even looks like a bundle) it must not make a build tree's
    # ipclab record itself as a bundle, nor read its files from there.
    fake = lab.root / "fake-bundle"
    (fake / "libexec").mkdir(parents=True)
    (fake / "libexec" / "ipclab").symlink_to(os.environ["IPCLAB_BIN"])
    p = lab.run("run", "harness/null", "--duration", "0.05", "--warmup", "0", "--repetitions", "1",
                "--json", "r.json", env={"IPCLAB_BUNDLE": str(fake)})
    assert p.returncode == 0, p.stderr
    assert json.loads((lab.work / "r.json").read_text())["context"]["started_from"] == "build tree"


def test_an_example_server_whose_interpreter_is_missing_is_skipped_with_the_reason(lab):
    server = lab.root / "server.py"
    server.write_text("#!/usr/bin/env ipclab-no-such-python3\nprint(0)\n")
    server.chmod(0o755)
    p = lab.run("run", "echo/peer", "-p", f"server={server}", "-p", "connections=1", "--duration", "0.05",
                "--warmup", "0", "--repetitions", "1", "--json", "r.json")
    assert p.returncode == 0, p.stderr
    [rec] = [b for b in json.loads((lab.work / "r.json").read_text())["benchmarks"] if b["run_type"] == "iteration"]
    assert rec["status"] == "skipped", rec
    assert "its interpreter ipclab-no-such-python3 is not on PATH" in rec["error"], rec["error"]


def test_a_path_parameter_may_hold_spaces_equals_and_percent(lab):
    # A bundle unpacked in "…/plain space,a=b%c/" has its example server there: its own default
    # must run (tests/bundle: ',' too, which -p would take for a list), and its name carries the
    # path escaped so that names still split on '/' and ':'.
    folder = lab.root / "plain space a=b%c"
    folder.mkdir()
    server = folder / "echo_server.py"
    shutil.copy(HERE.parent / "echo" / "echo_server.py", server)
    server.chmod(0o755)
    p = lab.run("run", "echo/peer", "-p", f"server={server}", "-p", "connections=1", "--duration", "0.05",
                "--warmup", "0", "--repetitions", "1", "--json", "r.json")
    assert p.returncode == 0, p.stderr
    [rec] = [b for b in json.loads((lab.work / "r.json").read_text())["benchmarks"] if b["run_type"] == "iteration"]
    assert rec["status"] == "ok" and rec["params"]["server"] == str(server), rec
    assert "server:" + str(server).replace("%", "%25").replace("/", "%2F").replace(" ", "%20") in rec["name"], \
        rec["name"]
