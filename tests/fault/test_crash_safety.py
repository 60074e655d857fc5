"""No signal takes results with it (issue 33): a full /dev/shm is an error, not SIGBUS; a write over
`ulimit -f` is an error, not SIGXFSZ; a crash in the middle of a benchmark (a library's abort(), a
SIGSEGV) leaves the records the run finished, and a failed record naming the signal, in the run's
results journal, which `ipclab report` and `compare` read; and nothing is left behind."""
import json
import os
import resource
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import BINARY, ipc_objects

UID = os.geteuid()
QUICK = ["--duration", "0.05", "--warmup", "0", "--repetitions", "1"]
CRASHING = ["--duration", "0.2", "--warmup", "0", "--repetitions", "1"]  # a window to crash in


def stderr_lines(p):
    """stderr less warnings and the progress lines a run prints when stderr is not a terminal."""
    return [line for line in p.stderr.splitlines() if not line.startswith(("warning: ", "progress: "))]


def file_size_limit(limit):
    """preexec_fn: RLIMIT_FSIZE of `limit` bytes (what `ulimit -f` sets) for the child alone."""
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def journals(folder):
    return sorted(Path(folder).glob("*.journal.*.jsonl"))


def read_journal(path):
    lines = path.read_text().splitlines()
    head = json.loads(lines[0])
    assert head["ipclab_journal"] == 1 and head["schema_version"] == 1 and "context" in head
    return [json.loads(line) for line in lines[1:]]


def state_left(lab):
    """What the runs left in the state folder (the folder itself stays)."""
    state = lab.tmpdir / f"ipclab-{UID}"
    return sorted(p.name for p in state.iterdir()) if state.exists() else []


def mount_namespace_or_skip():
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True)
    if UID != 0 or probe.returncode != 0:
        pytest.skip("needs root and a mount namespace of its own "
                    f"(unshare -m: {probe.stderr.strip() or 'not root'})")


# ---- a full /dev/shm -------------------------------------------------------------------------

def test_a_full_dev_shm_fails_pingpong_with_enospc_not_sigbus(lab):
    # A /dev/shm of 256 KiB, filled to the last page, in a mount namespace of this test's own.
    # pingpong's region (POSIX shm) gets its storage before it is mapped: ENOSPC, a failed record,
    # exit 1 — not a SIGBUS at the first write to the region. The messaging rings are anonymous
    # shared mappings, which do not live in /dev/shm: the same run measures them.
    mount_namespace_or_skip()
    out = lab.work / "r.json"
    script = ('mount -t tmpfs -o size=256k tmpfs /dev/shm && '
              '(dd if=/dev/zero of=/dev/shm/fill bs=4k 2>/dev/null; true) && '
              f'"$0" run pingpong/process messaging/shm_spsc -p size=64 {" ".join(QUICK)} --json {out}; '
              'echo "rc=$?"; echo "left in /dev/shm: [$(ls -A /dev/shm | grep -v "^fill$")]"')
    r = subprocess.run(["unshare", "-m", "sh", "-c", script, BINARY], capture_output=True, text=True,
                       timeout=120, env=lab.env(), cwd=lab.work)
    tail = r.stdout.strip().splitlines()
    assert tail[-2] == "rc=1", r.stdout + r.stderr  # 135 would be SIGBUS
    assert tail[-1] == "left in /dev/shm: []", r.stdout
    records = [b for b in json.loads(out.read_text())["benchmarks"] if b["run_type"] == "iteration"]
    ping = [b for b in records if b["suite"] == "pingpong"]
    assert ping and all(b["status"] == "failed" for b in ping)
    for b in ping:
        assert "ENOSPC" in b["error"] and "/dev/shm/ipclab." in b["error"] and "df -h /dev/shm" in b["error"], b
    ring = [b for b in records if b["name"].startswith("messaging/shm_spsc")]
    assert ring and all(b["status"] == "ok" for b in ring), ring
    assert any(line.startswith("FAILED pingpong/process") and "ENOSPC" in line for line in r.stderr.splitlines())
    assert journals(lab.work) == []  # the run wrote its result file: its journal is gone
    assert state_left(lab) == []


# ---- ulimit -f ------------------------------------------------------------------------------

def test_a_fileio_test_file_over_the_file_size_limit_is_a_failed_record_not_sigxfsz(lab):
    folder = lab.work / "files"
    folder.mkdir()
    out = lab.work / "r.json"
    p = lab.run("run", "fileio/psync", "-p", f"dir={folder}", "-p", "file_size=2M", *QUICK, "--json", out,
                preexec_fn=file_size_limit(1 << 20))
    assert p.returncode == 1, (p.returncode, p.stderr)  # -25 would be SIGXFSZ
    records = [b for b in json.loads(out.read_text())["benchmarks"] if b["run_type"] == "iteration"]
    assert records and all(b["status"] == "failed" for b in records)
    for b in records:
        assert "File too large" in b["error"] and "ulimit -f" in b["error"], b
    assert list(folder.iterdir()) == []  # no part-written test file, under any name
    assert state_left(lab) == []


def test_a_result_json_over_the_file_size_limit_is_an_error_and_the_journal_keeps_the_records(lab):
    # The journal (compact lines) is smaller than the JSON (indented): a limit between the two lets
    # the journal be written and stops the JSON.
    first = lab.run("run", "harness/null", *QUICK, "--json", lab.work / "whole.json")
    assert first.returncode == 0, first.stderr
    doc = json.loads((lab.work / "whole.json").read_text())
    journal_size = len(json.dumps({"ipclab_journal": 1, "schema_version": 1, "context": doc["context"]},
                                  separators=(",", ":"), ensure_ascii=False)) + sum(
        len(json.dumps(b, separators=(",", ":"), ensure_ascii=False)) + 1 for b in doc["benchmarks"])
    json_size = (lab.work / "whole.json").stat().st_size
    assert json_size > journal_size + 400
    limit = (journal_size + json_size) // 2
    out = lab.work / "r.json"
    p = lab.run("run", "harness/null", *QUICK, "--json", out, preexec_fn=file_size_limit(limit))
    assert p.returncode == 1, (p.returncode, p.stderr)
    [line] = stderr_lines(p)
    assert line.startswith(f"ipclab: --json {out}: not written: File too large: over the file size limit "
                           "(ulimit -f)"), line
    [journal] = journals(lab.work)
    assert f"kept in {journal}" in line, line
    assert not out.exists()
    assert sorted(p.name for p in lab.work.iterdir()) == sorted(["whole.json", journal.name])  # no temporary
    records = read_journal(journal)
    assert [b["name"] for b in records] == [b["name"] for b in doc["benchmarks"]]
    assert all(b["status"] == "ok" for b in records)
    rep = lab.run("report", journal, "--markdown", lab.work / "r.md")
    assert rep.returncode == 0, rep.stderr
    assert "null" in (lab.work / "r.md").read_text()
    assert state_left(lab) == []


def test_csv_rows_over_the_file_size_limit_are_not_appended_in_part(lab):
    csv = lab.work / "r.csv"
    first = lab.run("run", "harness/null", *QUICK, "--csv", csv)
    assert first.returncode == 0, first.stderr
    header, row = csv.read_text().splitlines()[:2]
    limit = 64 << 10
    body = header + "\n"
    while len(body) + len(row) + 1 < limit - 50:
        body += row + "\n"
    body += "x" * (limit - 50 - len(body) - 1) + "\n"  # rows differ in length: pad to the byte
    assert len(body) == limit - 50 and len(row) > 50
    csv.write_text(body)  # 50 bytes short of the limit: the next row crosses it
    p = lab.run("run", "harness/null", *QUICK, "--csv", csv, preexec_fn=file_size_limit(limit))
    assert p.returncode == 1, (p.returncode, p.stderr)
    [line] = stderr_lines(p)
    assert line.startswith(f"ipclab: --csv {csv}: rows not appended: File too large"), line
    assert csv.read_text() == body  # no partial row
    [journal] = journals(lab.work)
    assert len(read_journal(journal)) == 1
    assert state_left(lab) == []


# ---- a crash in the middle of a benchmark ---------------------------------------------------

def plan_names(lab, *args):
    p = lab.run("run", *args, "--plan")
    assert p.returncode == 0, p.stderr
    return [json.loads(line)["name"] for line in p.stdout.splitlines()]


@pytest.mark.parametrize("how, sig", [("abort", signal.SIGABRT), ("segv", signal.SIGSEGV)])
def test_a_crash_midway_keeps_the_finished_records_and_a_failed_one_naming_the_signal(lab, how, sig):
    # messaging/fifo (a FIFO in the run folder) finishes; messaging/posix_mq (a queue in
    # /dev/mqueue) crashes in the middle of its window, its consumer a thread of ipclab.
    args = ["messaging/fifo", "messaging/posix_mq", "-p", "mode=threads", "-p", "size=64",
            "-p", "pattern=throughput"]
    names = plan_names(lab, *args)
    before = ipc_objects()
    assert len(names) == 2 and names[1].startswith("messaging/posix_mq"), names
    out = lab.work / "r.json"
    p = lab.run(*["run", *args, *CRASHING, "--json", out],
                env={"IPCLAB_FAULT": f"crash:messaging/posix_mq:consumer:{how}"})
    assert p.returncode == -sig, (p.returncode, p.stderr)
    [journal] = journals(lab.work)
    [line] = [line for line in stderr_lines(p) if line.startswith("ipclab: ")]
    assert line.startswith(f"ipclab: {names[1]} (repetition 0) crashed: signal {int(sig)} (SIG"), line
    assert line.endswith(f"in {journal}"), line
    assert not out.exists()
    records = read_journal(journal)
    assert [b["name"] for b in records] == names
    assert records[0]["status"] == "ok"
    assert records[1]["status"] == "failed" and records[1]["repetition"] == 0
    assert f"signal {int(sig)} ({sig.name}" in records[1]["error"], records[1]
    assert records[1]["extra"]["crash"] == {"signal": int(sig), "name": sig.name}
    # Swept at once by the handler: no queue, no FIFO, no run folder, no temporary.
    assert ipc_objects() - before == set()
    assert state_left(lab) == []
    assert sorted(x.name for x in lab.work.iterdir()) == [journal.name]
    # report and compare read the journal as the result file it would have been.
    rep = lab.run("report", journal, "--markdown", lab.work / "r.md")
    assert rep.returncode == 0, rep.stderr
    text = (lab.work / "r.md").read_text()
    assert "fifo" in text and "posix_mq" in text
    cmp = lab.run("compare", journal, journal)
    assert cmp.returncode in (0, 1), cmp.stderr
    assert "fifo" in cmp.stdout and "posix_mq" in cmp.stdout


def test_a_crash_in_the_first_repetition_keeps_its_failed_record(lab):
    p = lab.run("run", "messaging/pipe", "-p", "mode=threads", "-p", "size=64", "-p", "pattern=throughput",
                *CRASHING, "--out", lab.work / "out",
                env={"IPCLAB_FAULT": "crash:pipe:producer:abort"})
    assert p.returncode == -signal.SIGABRT, (p.returncode, p.stderr)
    [journal] = journals(lab.work / "out")
    assert journal.name.startswith("results.journal.")
    [record] = read_journal(journal)
    assert record["status"] == "failed" and "SIGABRT" in record["error"]
    assert sorted(x.name for x in (lab.work / "out").iterdir()) == [journal.name]
    assert state_left(lab) == []


def test_a_forked_side_that_crashes_fails_its_record_and_the_run_goes_on(lab):
    out = lab.work / "r.json"
    p = lab.run("run", "messaging/pipe", "messaging/unix_stream", "-p", "mode=processes", "-p", "size=64",
                "-p", "pattern=throughput", *CRASHING, "--json", out,
                env={"IPCLAB_FAULT": "crash:pipe:consumer:segv"})
    assert p.returncode == 1, (p.returncode, p.stderr)
    records = {b["name"].split("/")[1]: b for b in json.loads(out.read_text())["benchmarks"]}
    assert records["pipe"]["status"] == "failed" and "signal 11" in records["pipe"]["error"], records["pipe"]
    assert records["unix_stream"]["status"] == "ok"
    assert "crashed" not in p.stderr  # the child died, not ipclab
    assert journals(lab.work) == []
    assert state_left(lab) == []


def test_a_journal_cut_short_is_read_without_its_last_line(lab, capfd):
    out = lab.work / "whole.json"
    assert lab.run("run", "harness/null", "--duration", "0.05", "--warmup", "0", "--repetitions", "2",
                   "--json", out).returncode == 0
    doc = json.loads(out.read_text())
    head = {"ipclab_journal": 1, "schema_version": 1, "context": doc["context"]}
    lines = [json.dumps(head)] + [json.dumps(b) for b in doc["benchmarks"]]
    journal = lab.work / "r.journal.1.x.jsonl"
    journal.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2])
    rep = lab.run("report", journal, "--markdown", lab.work / "r.md")
    assert rep.returncode == 0, rep.stderr
    assert f"note: {journal}: its last line is cut short" in rep.stderr
    cmp = lab.run("compare", out, journal)
    assert cmp.returncode in (0, 1), cmp.stderr
    assert "null" in cmp.stdout
