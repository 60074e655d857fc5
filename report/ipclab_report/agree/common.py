"""The interface every reference tool of `ipclab agree` implements, and what they share: one
ipclab run, one checked subprocess, a free loopback port.

A tool module names its points (what is measured, in which unit, what each side's figure is and
the band the two should agree within), says what it lacks on this machine (one line naming how to
provide it), prepares itself (a build from a published tag, where it needs one), and runs one round
of each side for a point: one figure each, in the point's unit. The pairing, the ratio and its
interval are agree/pairing.py's; the tables agree/table.py's.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field


@dataclass
class Point:
    """One comparison: `label` tells it apart within its tool; `ipclab_is` and `tool_is` say what
    each side's figure is (e.g. "p50 one way, raw", "p50 of half a round trip"), in `unit`; the two
    agree when the paired ratio ipclab / tool lies within 1 +- `band`."""

    label: str
    unit: str
    ipclab_is: str
    tool_is: str
    band: float
    spec: dict = field(default_factory=dict)  # the tool module's own settings for this point


@dataclass
class Config:
    """What every tool is run with (agree/cli.py checks it before anything runs)."""

    ipclab: str
    rounds: int
    seconds: float
    cpus: list
    src: str | None = None
    file_size: str = "1G"
    engine_params: list = field(default_factory=list)
    work: str = ""


class Tool:
    """A reference tool. Subclasses set `name`, `method` (a sentence: how the two sides are made
    to do the same work) and implement the methods below."""

    name = ""
    method = ""

    def missing(self, cfg: Config) -> str | None:
        """Why the tool cannot run here, one line naming how to provide it; None when it can."""
        raise NotImplementedError

    def points(self, cfg: Config) -> list:
        raise NotImplementedError

    def prepare(self, cfg: Config) -> None:
        """Builds or finds what the rounds need (in cfg.work); RuntimeError when that fails."""

    def version(self) -> str:
        return ""

    def tool_seconds(self, cfg: Config) -> float:
        """About how long the tool's run of a round measures (it follows ipclab's unless a tool
        cannot)."""
        return cfg.seconds

    def run_ipclab(self, point: Point, cfg: Config) -> tuple:
        """One ipclab run of `point`: (its figure, a note for the table or "")."""
        raise NotImplementedError

    def run_tool(self, point: Point, cfg: Config, ipclab_figure: float) -> float:
        """One run of the tool on `point`, right after ipclab's (whose figure may size it)."""
        raise NotImplementedError

    def finish(self, cfg: Config) -> None:
        """Takes down what prepare() started (daemons, namespaces); called on every way out once
        prepare() has been called."""


def program_missing(program: str, remedy: str) -> str | None:
    """None when `program` is on PATH, else the line that says so and how to provide it."""
    return None if shutil.which(program) else f"{program} is not on PATH: {remedy}"


def run_checked(argv, what: str, timeout: float = 600, **kw) -> str:
    """stdout of `argv`; RuntimeError naming `what` and the end of its output when it fails. Stopped
    by a signal or a timeout here, the program gets SIGTERM first, so that an ipclab removes what
    it made (its signal clean-up), and SIGKILL only when it has not ended 10 s later."""
    try:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    except OSError as e:  # not there, not executable, or being rebuilt
        raise RuntimeError(f"{what}: cannot start {argv[0]}: {e.strerror}") from None
    try:
        out, err = p.communicate(timeout=timeout)
    except BaseException as e:
        p.terminate()
        try:
            p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
        if isinstance(e, subprocess.TimeoutExpired):
            raise RuntimeError(f"{what} ran past {timeout:g} s") from None
        raise
    if p.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {p.returncode}): {(out + err).strip()[-400:]}")
    return out


def ipclab_records(cfg: Config, argv: list, env: dict | None = None, prefix: tuple = ()) -> list:
    """The iteration records of one `ipclab run` (argv: its selection and options; one
    repetition, cfg.seconds long after a short warm-up, JSON to a temporary file); `prefix` runs
    it through another command (e.g. `ip netns exec NS`)."""
    with tempfile.TemporaryDirectory(dir=cfg.work or None) as d:
        out = os.path.join(d, "r.json")
        warmup = min(0.4, max(0.05, cfg.seconds / 4))
        run_checked([*prefix, cfg.ipclab, "run", *argv, "--duration", str(cfg.seconds), "--warmup", str(warmup),
                     "--repetitions", "1", "--json", out], "ipclab run " + " ".join(argv),
                    timeout=120 + 10 * cfg.seconds, env=env)
        with open(out) as f:
            recs = [r for r in json.load(f)["benchmarks"] if r.get("run_type") == "iteration"]
    for r in recs:
        if r.get("status") != "ok" and not (r.get("extra") or {}).get("rate"):
            raise RuntimeError(f"ipclab {r.get('name')}: {r.get('status')}: {r.get('error')}")
    return recs


def free_port() -> int:
    """A loopback port the kernel picks; the tool binds it right after (nothing else races)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
