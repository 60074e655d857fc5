"""Kernel counters per op end to end (the record's `kernel`, docs/methodology.md "Kernel counters"):
system calls per operation of transports whose count is known from their design.

  - a pipe round trip is a write and a read on each side: 4 system calls, whatever the placement;
  - a shared-memory ring with spinning sides never enters the kernel once set up: ~0;
  - without --kernel-counters no record has them.

The system call count needs tracefs mounted (the tracepoint's id is read there). Where it is not
and this test runs as root, ipclab runs in a mount namespace of its own with tracefs mounted in it,
which nothing else sees; otherwise the tests skip with the record's own reason.

Run by ctest (messaging.kernel_counters) with the binary in IPCLAB_BIN; by hand:
    IPCLAB_BIN=build/release/ipclab python3 -m pytest -q tests/messaging/test_kernel_counters.py
"""
import csv
import json
import os
import shutil
import subprocess
import tempfile

import pytest

BINARY = os.environ.get("IPCLAB_BIN", "")
SYS_ENTER_ID = "/sys/kernel/tracing/events/raw_syscalls/sys_enter/id"

pytestmark = pytest.mark.skipif(not BINARY, reason="IPCLAB_BIN is not set (ctest sets it)")


def command(args):
    if os.path.exists(SYS_ENTER_ID) or os.geteuid() != 0 or not shutil.which("unshare"):
        return [BINARY, *args]
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount -t tracefs nodev /sys/kernel/tracing && exec "$@"', "sh", BINARY, *args]


def run(args, repetitions=1, counters=True):
    with tempfile.TemporaryDirectory() as d:
        out, table = os.path.join(d, "r.json"), os.path.join(d, "r.csv")
        p = subprocess.run(command(["run", *args, "--duration", "0.3", "--warmup", "0.05",
                                    "--repetitions", str(repetitions), "--json", out, "--csv", table]
                                   + (["--kernel-counters"] if counters else [])),
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        doc = json.load(open(out))
        records = doc["benchmarks"]
        assert doc["context"]["kernel_counters"] is counters
        rows = list(csv.DictReader(open(table)))
    assert records and all(r["status"] == "ok" for r in records), records
    if not counters:
        return records, rows, p.stdout
    kernel = records[0]["kernel"]
    if "syscalls" in kernel.get("unavailable", {}):
        pytest.skip(f'system calls not counted here: {kernel["unavailable"]["syscalls"]}')
    return records, rows, p.stdout


def console_cell(console, column):
    """The cell under `column` in the console table's first row. The figures are right-aligned under
    their headers, so the cell is the row's last word up to where the header's name ends: the
    status after it may hold several words ("ok, non-steady, bimodal")."""
    header, _, row = [line for line in console.splitlines() if line.strip()][:3]
    end = header.index(column) + len(column)
    return row[:end].split()[-1]


def test_a_pipe_round_trip_is_four_system_calls():
    records, rows, console = run(["messaging/pipe", "-p", "pattern=roundtrip", "-p", "size=64",
                                  "-p", "placement=same"], repetitions=2)
    for r in records:
        k = r["kernel"]
        assert "coordinator excluded" in k["scope"] or r["run_type"] == "aggregate"
        assert abs(k["per_op"]["syscalls"] - 4.0) <= 0.1, (r["run_type"], k)
        if r["run_type"] == "iteration":
            assert k["totals"]["syscalls"] / r["ops"] == pytest.approx(k["per_op"]["syscalls"])
        # Both sides on one CPU block in turn: each round trip puts each side to sleep once or more.
        assert k["per_op"]["context_switches"] >= 1.0, k
    # The CSV's column and the console's sys/op are the record's figure.
    for row, r in zip(rows, records):
        assert float(row["syscalls_per_op"]) == pytest.approx(r["kernel"]["per_op"]["syscalls"], rel=1e-5)
    assert "sys/op" in console


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2,
                    reason="needs 2 CPUs for the two spinning sides; this process may use "
                           f"{len(os.sched_getaffinity(0))}")
def test_a_spinning_shared_memory_ring_makes_no_system_calls():
    records, _, _ = run(["messaging/shm_spsc", "-p", "wait=spin", "-p", "placement=cross", "-p", "size=64"])
    k = records[0]["kernel"]
    assert k["per_op"]["syscalls"] < 0.05, k


def test_none_without_the_option():
    records, rows, console = run(["messaging/pipe", "-p", "pattern=roundtrip", "-p", "size=64",
                                  "-p", "placement=same"], counters=False)
    assert "kernel" not in records[0]
    assert rows[0]["syscalls_per_op"] == ""
    assert "sys/op" not in console, "no column of - where the counters were not asked for"
