"""The console fits the width (issue 52): every line of `ipclab run`'s table and of `ipclab env`
within $COLUMNS (the terminal's, else $COLUMNS, else 100), a row's status with its flags
and a skipped point's reason continuing on indented lines, nothing cut but a word longer than a
line; and each flag a row shows is named at the end with what to do about it."""
import os
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from ipclab_fixture import ipclab_command  # noqa: E402,F401  (the fixture: run ipclab in a sandbox)


@pytest.fixture
def lab(ipclab_command):
    return ipclab_command


def wider(text, width):
    return [f"[{len(l)}] {l}" for l in text.splitlines() if len(l) > width]


@pytest.mark.parametrize("columns", [80, 100])
def test_run_fits_the_width_with_flags_and_a_skip(lab, tmp_path, monkeypatch, columns):
    # fio named where there is none: its points are skipped, with a reason longer than any line;
    # pipe's 10 ms windows are shorter than any machine's window floor: flagged short_window.
    missing = tmp_path / ("no-such-folder-" * 6) / "fio"
    monkeypatch.setenv("IPCLAB_FIO", str(missing))
    r = lab("run", "fileio/fio_libaio", "messaging/pipe", "--preset", "quick", "--duration", "10ms", "--warmup",
            "0", "--repetitions", "1", columns=columns)
    assert r.returncode == 0, r.stderr
    assert not wider(r.stdout, columns), "\n".join(wider(r.stdout, columns))
    # The skip's reason whole: its lines joined again (a word cut at the width, by nothing).
    flat = re.sub(r"\s+", "", r.stdout)
    assert re.sub(r"\s+", "", f"skipped: fio not found at IPCLAB_FIO={missing}") in flat, r.stdout
    # The flag on its rows, and at the end what it means and what to do.
    assert "short window" in r.stdout, r.stdout
    end = r.stdout[r.stdout.index("What the flags in the status mean, and what to do:"):]
    joined = re.sub(r"\n {4}", " ", end)
    assert re.search(r"\n  short window: the measured window was shorter than .*: rerun with a longer --duration",
                     joined), end


@pytest.mark.parametrize("columns", [80, 100])
def test_env_fits_the_width(lab, columns):
    r = lab("env", columns=columns)
    assert r.returncode == 0, r.stderr
    assert not wider(r.stdout, columns), "\n".join(wider(r.stdout, columns))
    # The window floor's row, continued under its value; a condition or a warning as a row of its own.
    assert re.search(r"^Window floor .*\n {13}\S", r.stdout, re.M), r.stdout
    assert all(l.startswith(" " * 13) for l in r.stdout.splitlines() if l.startswith(" ")), r.stdout
