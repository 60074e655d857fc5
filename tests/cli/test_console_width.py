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


def test_stderr_wraps_on_a_terminal_and_stays_one_line_in_a_log(lab, tmp_path):
    # A short window's warning, once per repetition: on a terminal of 60 columns, wrapped to it
    # with its later lines indented; into a pipe (a log, a tool reading by prefix), one line.
    import fcntl
    import struct
    import subprocess
    import termios
    from ipclab_fixture import BINARY
    args = [BINARY, "run", "messaging/pipe", "-p", "pattern=roundtrip", "-p", "placement=same", "--duration",
            "5ms", "--warmup", "0", "--repetitions", "1", "--json", str(tmp_path / "r.json")]
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env.update(TMPDIR=str(tmp_path / "tmp"), XDG_STATE_HOME=str(tmp_path / "state"))
    piped = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)
    assert piped.returncode == 0, piped.stderr
    [line] = [l for l in piped.stderr.splitlines() if l.startswith("warning: messaging/pipe")]
    assert len(line) > 60 and "--duration" in line, line
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 60, 0, 0))
    p = subprocess.Popen(args, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert p.wait(timeout=60) == 0
    # The progress line rewritten in place ends with \r\033[K; what is left are whole lines.
    text = re.sub(r"\r\x1b\[K", "\n", out.decode()).replace("\r\n", "\n")
    lines = [l for l in text.splitlines() if l.strip()]
    start = next(i for i, l in enumerate(lines) if l.startswith("warning: messaging/pipe"))
    block = [lines[start]] + [l for l in lines[start + 1:start + 12] if l.startswith("    ")]
    assert len(block) > 1 and all(len(l) <= 60 for l in block), block
    # The point as the tables name it, then the same words as the log's line.
    joined = " ".join(l.strip() for l in block)
    assert joined.startswith("warning: messaging/pipe (repetition 0): "), joined
    # (each run measured its own window: its length is masked)
    def words(text):
        return re.sub(r"lasted [0-9.]+ ms", "lasted _ ms", text.split(" (repetition 0): ", 1)[1])
    assert words(joined) == words(line), (block, line)
