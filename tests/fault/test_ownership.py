"""What ipclab creates is its own, and it touches nothing else: planted names and links are left
alone, folders someone else prepared are refused, every object survives no signal once the next
run has swept, runs in other PID namespaces keep their objects, and parallel CSV appends lose no
row."""
import fcntl
import os
import random
import shutil
import signal
import subprocess
import time

import pytest

from conftest import BINARY, ipc_objects

UID = os.geteuid()
QUICK = ["--duration", "0.05", "--warmup", "0", "--repetitions", "1"]


def usage_error(p):
    lines = [line for line in p.stderr.splitlines() if not line.startswith("warning: ")]
    assert p.returncode == 2, p.stderr
    assert len(lines) == 1 and lines[0].startswith("ipclab: "), p.stderr
    assert "/" not in p.stdout, f"a benchmark ran: {p.stdout}"
    return lines[0]


def state(lab):
    return lab.tmpdir / f"ipclab-{UID}"


def dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def wait_until_dead(lab, timeout=10.0):
    """Waits until every run folder's lease is free (a killed run's forked workers, which hold
    it too, are gone): the condition under which the next run may sweep it."""
    deadline = time.monotonic() + timeout
    for folder in state(lab).glob("run.*"):
        try:
            fd = os.open(folder / "journal", os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    assert time.monotonic() < deadline, f"{folder} stayed locked"
                    time.sleep(0.05)
        finally:
            os.close(fd)


def test_names_like_ours_outside_the_state_folder_are_never_touched(lab, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("keep")
    dead = dead_pid()
    planted = {
        lab.tmpdir / f"ipclab.{dead}": None,  # a link to the victim, named like an old run folder
        lab.tmpdir / f"ipclab.{dead + 1}.json": "a user's file",
        lab.tmpdir / "ipclab.2024-notes.txt": "notes",
    }
    (lab.tmpdir / f"ipclab.{dead}").symlink_to(victim)
    for path, text in planted.items():
        if text is not None:
            path.write_text(text)
    shm = f"/dev/shm/ipclab.{dead}.0.pingpong"  # an old-style name of a dead pid
    with open(shm, "w") as f:
        f.write("x")
    try:
        p = lab.run("run", "harness/null", "messaging/fifo", "pingpong/process", *QUICK)
        assert p.returncode == 0, p.stderr
        assert "removed" not in p.stderr
        assert os.path.exists(shm)
    finally:
        if os.path.exists(shm):
            os.unlink(shm)
    assert sorted(os.listdir(victim)) == ["precious"] and (victim / "precious").read_text() == "keep"
    for path, text in planted.items():
        assert path.is_symlink() if text is None else path.read_text() == text


@pytest.mark.parametrize("kind", ["symlink", "open to others", "another user's", "a file"])
def test_a_state_folder_someone_else_prepared_is_refused(lab, tmp_path, kind):
    st = state(lab)
    victim = tmp_path / "victim"
    victim.mkdir()
    if kind == "symlink":
        st.symlink_to(victim)
    elif kind == "open to others":
        st.mkdir()
        os.chmod(st, 0o777)
    elif kind == "another user's":
        if UID != 0:
            pytest.skip("needs root to make a folder another user's")
        st.mkdir(mode=0o700)
        os.chown(st, 65534, 65534)
    else:
        st.write_text("")
    line = usage_error(lab.run("run", "messaging/fifo", *QUICK))
    assert "TMPDIR" in line
    assert list(victim.iterdir()) == []


@pytest.mark.parametrize("option", ["--json", "--csv", "--markdown"])
def test_a_result_path_that_is_a_link_is_refused_before_the_run(lab, tmp_path, option):
    target = tmp_path / "target"
    target.write_text("keep")
    link = lab.work / "r.out"
    link.symlink_to(target)
    usage_error(lab.run("run", "harness/null", *QUICK, option, link))
    assert target.read_text() == "keep"


def test_a_planted_link_in_the_out_folder_is_refused_before_the_run(lab, tmp_path):
    target = tmp_path / "target"
    target.write_text("keep")
    out = lab.work / "out"
    out.mkdir()
    (out / "results.csv").symlink_to(target)
    usage_error(lab.run("run", "harness/null", *QUICK, "--out", out))
    assert target.read_text() == "keep"
    assert sorted(os.listdir(out)) == ["results.csv"]


@pytest.mark.parametrize("kind", ["symlink", "another user's"])
def test_a_planted_test_file_is_neither_followed_nor_replaced(lab, tmp_path, kind):
    data = lab.work / "data"
    data.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep")
    planted = data / f"ipclab-fileio-v1-{1 << 20}.dat"  # the name of a 1 MiB test file
    if kind == "symlink":
        planted.symlink_to(victim)
    else:
        if UID != 0:
            pytest.skip("needs root to make a file another user's")
        planted.write_bytes(b"\0" * (1 << 20))
        os.chown(planted, 65534, 65534)
    p = lab.run("run", "fileio/psync", "-p", f"dir={data}", "-p", "file_size=1M", "-p", "qd=1", *QUICK)
    assert p.returncode == 1, p.stderr
    assert "is not a test file of yours" in p.stderr, p.stderr
    assert victim.read_text() == "keep"
    assert planted.is_symlink() if kind == "symlink" else planted.stat().st_uid == 65534
    assert sorted(f.name for f in data.iterdir()) == [planted.name], "a temporary was left behind"


def test_relative_result_paths_are_written(lab):
    (lab.work / "sub").mkdir()
    p = lab.run("run", "harness/null", *QUICK, "--json", "./r.json", "--markdown", "sub/../r.md",
                "--csv", "sub/./r.csv")
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(lab.work)) == ["r.json", "r.md", "sub"]
    assert os.listdir(lab.work / "sub") == ["r.csv"]


def test_modes_are_explicit_whatever_the_umask(lab):
    data = lab.work / "data"
    data.mkdir()
    out = lab.work / "out"
    p = lab.run("run", "messaging/fifo", "fileio/psync", "-p", f"dir={data}", "-p", "file_size=1M",
                "-p", "qd=1", *QUICK, "--out", out, preexec_fn=lambda: os.umask(0))
    assert p.returncode == 0, p.stderr
    assert os.stat(out).st_mode & 0o7777 == 0o700
    for name in ("results.json", "results.csv", "results.md"):
        assert os.stat(out / name).st_mode & 0o7777 == 0o644, name
    files = list(data.iterdir())
    assert len(files) == 1 and files[0].name.endswith(".dat"), files
    assert os.stat(files[0]).st_mode & 0o7777 == 0o600
    assert os.stat(state(lab)).st_mode & 0o7777 == 0o700


def test_a_live_runs_folder_journal_and_fifos_are_private(lab):
    p = lab.start("run", "messaging/fifo", "-p", "pattern=roundtrip", "--duration", "2", "--warmup", "0",
                  "--repetitions", "1", preexec_fn=lambda: os.umask(0))
    try:
        deadline = time.monotonic() + 10
        fifos = []
        while not fifos and time.monotonic() < deadline:
            fifos = [f for f in state(lab).glob("run.*/*.fifo")]
            time.sleep(0.02)
        assert fifos, "the run never made its FIFOs"
        folder = fifos[0].parent
        assert os.stat(folder).st_mode & 0o7777 == 0o700
        assert os.stat(folder / "journal").st_mode & 0o7777 == 0o600
        assert all(os.stat(f).st_mode & 0o7777 == 0o600 for f in fifos)
        journal = (folder / "journal").read_text()
        assert all(f"+path {f.name}\n" in journal for f in fifos), journal
    finally:
        out, err = p.communicate(timeout=60)
    assert p.returncode == 0, err


# What each suite that creates objects runs while it is signalled (short windows, so that the
# random moments fall in set-up, the window, the drain and the clean-up).
SIGNALLED = {
    "messaging": ["messaging/fifo", "messaging/posix_mq", "messaging/sysv_mq",
                  "-p", "pattern=roundtrip,throughput", "-p", "mode=threads,processes"],
    "pingpong": ["pingpong/process", "pingpong/thread", "-p", "wait=adaptive_sem,sem"],
    "fileio": ["fileio/psync", "-p", "pattern=seq", "-p", "qd=1"],
    "results": ["harness/null"],
}


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM], ids=["KILL", "INT", "TERM"])
@pytest.mark.parametrize("suite", sorted(SIGNALLED))
def test_no_object_survives_a_signal_once_the_next_run_has_swept(lab, suite, sig):
    rng = random.Random(f"{suite}/{sig}")  # seeded: the same moments on every run
    data = lab.work / "data"
    data.mkdir()
    for i in range(3):
        extra = []
        if suite == "fileio":  # a new file each time, so that the kill can fall in its creation
            extra = ["-p", f"dir={data}", "-p", f"file_size={32 + i}M"]
        if suite == "results":
            extra = ["--json", lab.work / "r.json", "--csv", lab.work / "r.csv", "--markdown", lab.work / "r.md"]
        p = lab.start("run", *SIGNALLED[suite], *extra, "--duration", "0.1", "--warmup", "0.02",
                      "--repetitions", "1")
        time.sleep(rng.uniform(0.01, 0.8))
        p.send_signal(sig)  # to ipclab alone: its workers and guests must die with it
        p.communicate(timeout=60)
        if sig != signal.SIGKILL:  # a handled signal cleans up at once
            assert list(state(lab).glob("run.*")) == [], "a run folder outlived SIGINT/SIGTERM"
    wait_until_dead(lab)
    p = lab.run("run", "harness/null", *QUICK)
    assert p.returncode == 0, p.stderr
    assert lab.leftovers() == [f"ipclab-{UID}"], lab.leftovers()
    assert not [f for f in data.iterdir() if f.name.endswith(".tmp")]
    assert not [f for f in lab.work.iterdir() if f.name.endswith(".tmp")]


def test_runs_in_other_pid_namespaces_keep_their_objects(lab):
    ns = ["unshare", "--pid", "--fork", "--mount-proc"]
    if UID != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare(1) to make PID namespaces")
    probe = subprocess.run([*ns, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"PID namespaces not permitted here: {probe.stderr.strip()}")
    before = ipc_objects()
    a = subprocess.Popen([*ns, BINARY, "run", "pingpong/process", "-p", "wait=sem", "--duration", "4",
                          "--warmup", "0", "--repetitions", "1"], cwd=lab.work, env=lab.env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 10
        live = set()
        while len(live) < 3 and time.monotonic() < deadline:  # the segment and two semaphores
            live = ipc_objects() - before
            time.sleep(0.02)
        assert len(live) >= 3, f"run A never made its objects: {live}"
        # A run in another PID namespace sees no pid of run A's, sharing /tmp and /dev/shm.
        b = subprocess.run([*ns, BINARY, "run", "harness/null", *QUICK], cwd=lab.work, env=lab.env(),
                           capture_output=True, text=True, timeout=60)
        assert b.returncode == 0, b.stderr
        assert "removed" not in b.stderr, b.stderr
        assert live <= ipc_objects(), f"run B removed {sorted(live - ipc_objects())} of live run A"
    finally:
        out, err = a.communicate(timeout=60)
    assert a.returncode == 0, err
    assert " ok" in out


def test_parallel_csv_appends_lose_no_row(lab):
    csv = lab.work / "all.csv"
    runs = 8
    procs = [lab.start("run", "harness/null", "--duration", "0.05", "--warmup", "0", "--repetitions", "3",
                       "--csv", csv) for _ in range(runs)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        # Eight runs on a small machine may starve one of its window (a failed record): its rows
        # are written all the same, and the rows are what this test counts.
        assert p.returncode in (0, 1) and "wrote " in err, err
    lines = csv.read_text().splitlines()
    header = lines[0]
    assert header.startswith("name,")
    assert lines.count(header) == 1
    assert len(lines) == 1 + runs * 4, f"{len(lines) - 1} rows of {runs * 4}"  # 3 repetitions + aggregate
    assert all(line.count(",") == header.count(",") for line in lines)
