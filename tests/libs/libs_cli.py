"""What the libs suite's CLI tests share: the binary under test (IPCLAB_BIN), the short run's
options, and one way to run it."""
import json
import os
import subprocess

BINARY = os.environ.get("IPCLAB_BIN", "")
SHORT = ["--duration", "0.1", "--warmup", "0.02", "--repetitions", "1", "-p", "placement=unpinned"]


def ipclab(*args, env=None):
    e = dict(os.environ)
    e.pop("IPCLAB_FAULT", None)
    e.update(env or {})
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=300, env=e)


def run_records(tmp_path, *args):
    """Runs `ipclab run *args` (the short run) with TMPDIR in tmp_path, which must succeed; returns
    the result document and its iteration records."""
    out = tmp_path / "r.json"
    r = ipclab("run", *args, *SHORT, "--json", str(out), env={"TMPDIR": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    return doc, [b for b in doc["benchmarks"] if b["run_type"] == "iteration"]
