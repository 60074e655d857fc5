"""The `ipclab` fixture shared by the end-to-end tests of several suites (tests/<suite>/test_*.py,
run by ctest with the binary in IPCLAB_BIN), imported by each (not a conftest.py: pytest reads one
above a test's folder only when its rootdir lies above it too). tests/fault has its own `lab`
sandbox besides."""
import json
import os
import subprocess

import pytest

BINARY = os.environ.get("IPCLAB_BIN", "")


@pytest.fixture
def ipclab(tmp_path):
    """`ipclab(*args)` runs `ipclab run args --repetitions 1` with a private TMPDIR and returns
    (exit code, stderr, the iteration records)."""
    if not BINARY or not os.access(BINARY, os.X_OK):
        pytest.skip("IPCLAB_BIN does not name the ipclab binary")
    (tmp_path / "tmp").mkdir(mode=0o700)

    def go(*args):
        out = tmp_path / "r.json"
        env = dict(os.environ, TMPDIR=str(tmp_path / "tmp"), XDG_STATE_HOME=str(tmp_path / "state"))
        r = subprocess.run([BINARY, "run", *args, "--repetitions", "1", "--json", str(out)],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        if not out.exists():
            return r.returncode, r.stderr, []
        return r.returncode, r.stderr, [b for b in json.loads(out.read_text())["benchmarks"]
                                        if b.get("run_type", "iteration") == "iteration"]

    return go


@pytest.fixture
def ipclab_command(tmp_path):
    """`ipclab_command(*args, columns=None)` runs `ipclab args` as given, with a private TMPDIR and
    cost model, $COLUMNS set to `columns` (or unset), and returns the CompletedProcess (text)."""
    if not BINARY or not os.access(BINARY, os.X_OK):
        pytest.skip("IPCLAB_BIN does not name the ipclab binary")
    (tmp_path / "tmp").mkdir(mode=0o700)

    def go(*args, columns=None, timeout=120):
        env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
        env.update(TMPDIR=str(tmp_path / "tmp"), XDG_STATE_HOME=str(tmp_path / "state"))
        if columns is not None:
            env["COLUMNS"] = str(columns)
        return subprocess.run([BINARY, *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=timeout)

    return go
