"""`ipclab agree [TOOL...]`: ipclab beside the reference tools on the same work, in paired rounds
(ipclab's run, then the tool's right after it), each figure as the tool defines it; per point both
figures, the paired ratio with its 95% interval, and whether it lies within the point's band.
One module per tool (agree/fio.py, sockperf.py, perf.py, libs.py, remote.py), behind
agree/common.py's Tool.
User guide: docs/agreement.md."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import signal
import sys
import tempfile
import time

from ..util import HelpFormatter, UsageError, check_distinct, check_target, parse_duration, write_atomic
from . import table
from .common import Config
from .fio import Fio
from .iceoryx import Iceoryx
from .nng import Nng
from .zmq import Zmq
from .pairing import agreement
from .perf import Perf
from .remote import Remote
from .sockperf import Sockperf

TOOLS = {t.name: t for t in (Fio(), Sockperf(), Perf(), Zmq(), Nng(), Iceoryx(), Remote())}

EPILOG = f"""\
Tools: {', '.join(TOOLS)}; `all` or none: every one, those missing here skipped with the reason.
Examples:
  ipclab agree sockperf --markdown sockperf.md
  ipclab agree perf --point pipe --rounds 5
  ipclab agree fio --point 'rand qd=32' --file-size 256M --json fio.json
  ipclab agree zmq nng --src /tmp/libsrc      (libzmq/ and nng/ checkouts at the installed tags)
  ipclab agree remote --seconds 2             (root: two network namespaces, sshd in the far one)
Exit: 0 (points outside their band included: the table says which), 1 a run failed, 2 usage error.
Methods, bands and how to provide a missing tool offline: docs/agreement.md."""


class Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{message}; see `ipclab agree --help`")


def parser():
    p = Parser(prog="ipclab agree", formatter_class=HelpFormatter, epilog=EPILOG,
               description="Run ipclab and each reference tool alternately on the same work and print how "
                           "far their figures agree, point by point.")
    p.add_argument("tools", nargs="*", metavar="TOOL", help=f"among {', '.join(TOOLS)}, or all (default)")
    p.add_argument("--rounds", type=int, default=3, metavar="N", help="paired rounds per point, 1 to 100 (3)")
    p.add_argument("--seconds", default="1", metavar="TIME",
                   help="about how long each side measures per round, 0.05 to 60 s (1; sockperf counts "
                        "whole seconds, at least 1)")
    p.add_argument("--cpus", metavar="A[,B]",
                   help="the CPU every one-CPU point runs on, and the second one for cross points "
                        "(default: the first two this process may use)")
    p.add_argument("--point", action="append", default=[], metavar="TEXT",
                   help="only the points whose name holds TEXT (repeatable)")
    p.add_argument("--ipclab", metavar="BINARY", help="the ipclab binary (default: the one that ran this)")
    p.add_argument("--src", metavar="DIR", help="zmq, nng, iceoryx: a folder holding libzmq/, nng/ and iceoryx/ "
                                                "at the installed versions' tags (default: git clone them)")
    p.add_argument("--file-size", default="1G", metavar="SIZE", help="fio: the test file's size (1G)")
    p.add_argument("--engine-param", action="append", default=[], metavar="NAME=VALUE",
                   help="fio: an engine parameter for ipclab's side only, e.g. batch=0 (repeatable)")
    p.add_argument("--json", metavar="FILE", help="write every round's figures and the table here")
    p.add_argument("--markdown", metavar="FILE", help="write the table as Markdown here")
    return p


def _config(a) -> Config:
    """The checked options; UsageError (one line, exit 2) before anything runs."""
    if not 1 <= a.rounds <= 100:
        raise UsageError(f"--rounds {a.rounds}: give 1 to 100, e.g. --rounds 3")
    seconds = parse_duration(a.seconds)
    if seconds is None or not 0.05 <= seconds <= 60:
        raise UsageError(f"--seconds {a.seconds!r}: give 0.05 to 60 seconds, e.g. --seconds 1")
    binary = a.ipclab or os.environ.get("IPCLAB_BIN") or shutil.which("ipclab") or ""
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        raise UsageError(f"--ipclab {binary or '(none)'}: no ipclab binary there; build it (make build) or name it")
    allowed = sorted(os.sched_getaffinity(0))
    if a.cpus:
        try:
            cpus = [int(c) for c in a.cpus.split(",")]
        except ValueError:
            cpus = []
        if not 1 <= len(cpus) <= 2 or len(set(cpus)) != len(cpus) or not set(cpus) <= set(allowed):
            raise UsageError(f"--cpus {a.cpus}: give one or two different CPUs this process may use, of {allowed}")
    else:
        cpus = allowed[:2]
    if a.src and not os.path.isdir(a.src):
        raise UsageError(f"--src {a.src}: no such folder; give one holding libzmq/, nng/ and iceoryx/ checkouts")
    for assignment in a.engine_param:
        if not re.fullmatch(r"[a-z_]+=[^,]+", assignment):
            raise UsageError(f"--engine-param {assignment!r} is not NAME=VALUE with one value, e.g. --engine-param batch=0")
    for option in ("json", "markdown"):
        if getattr(a, option):
            check_target(f"--{option}", getattr(a, option))
    check_distinct([(f"--{o}", getattr(a, o)) for o in ("json", "markdown") if getattr(a, o)])
    return Config(ipclab=os.path.abspath(binary), rounds=a.rounds, seconds=seconds, cpus=cpus, src=a.src,
                  file_size=a.file_size, engine_params=a.engine_param)


def _selection(a, cfg):
    """[(tool, its points)], the points filtered by --point, and the tools left without a point
    (skipped, with that reason); UsageError on an unknown tool or a
    --point no point of the selected tools holds."""
    names = a.tools or ["all"]
    unknown = [n for n in names if n not in TOOLS and n != "all"]
    if unknown:
        raise UsageError(f"unknown tool {unknown[0]!r}: name among {', '.join(TOOLS)}, or all")
    chosen = list(TOOLS) if "all" in names else list(dict.fromkeys(names))
    picked, unmatched = [], []
    for name in chosen:
        pts = [p for p in TOOLS[name].points(cfg) if not a.point or any(t in p.label for t in a.point)]
        (picked if pts else unmatched).append((TOOLS[name], pts))
    if not picked:
        raise UsageError(f"--point {a.point[0]!r} names no point of {', '.join(chosen)}; see the point column "
                         "of `ipclab agree` for their names")
    return picked, [{"tool": t.name, "reason": "none of its points holds --point " + ", ".join(a.point)}
                    for t, _ in unmatched]


def _unready(tool, cfg) -> str | None:
    """Why `tool` cannot run here (missing, or its preparation failed: one line); None once prepared."""
    why = tool.missing(cfg)
    if why is None:
        try:
            tool.prepare(cfg)
        except RuntimeError as e:
            why = str(e).replace("\n", " ")
    return why


def _measure(tool, points, cfg, doc):
    """Every round of every point of one tool, into doc["tools"]."""
    entry = {"tool": tool.name, "version": tool.version(), "method": tool.method,
             "tool_seconds": tool.tool_seconds(cfg), "points": []}
    doc["tools"].append(entry)
    for point in points:
        rec = {"point": point.label, "unit": point.unit, "ipclab_is": point.ipclab_is, "tool_is": point.tool_is,
               "band": point.band, "ipclab": [], "tool": [], "notes": ""}
        try:
            for _ in range(cfg.rounds):  # paired: ipclab, then the tool right after it
                figure, note = tool.run_ipclab(point, cfg)
                rec["ipclab"].append(figure)
                rec["tool"].append(tool.run_tool(point, cfg, figure))
                rec["notes"] = note or rec["notes"]
        except RuntimeError as e:
            rec["error"] = str(e).replace("\n", " ")
        rec.update(agreement(rec["ipclab"], rec["tool"], point.band, f"{tool.name} {point.label}"))
        entry["points"].append(rec)
        print(f"agree: {tool.name} {point.label}: tool {rec['tool']}, ipclab {rec['ipclab']}", file=sys.stderr,
              flush=True)


def cmd_agree(argv) -> int:
    a = parser().parse_args(argv)
    cfg = _config(a)
    picked, unmatched = _selection(a, cfg)
    doc = {"command": "ipclab agree " + shlex.join(argv), "when": time.strftime("%Y-%m-%d %H:%M:%S %z"),
           "ipclab": cfg.ipclab, "engine_params": cfg.engine_params, "rounds": cfg.rounds, "seconds": cfg.seconds, "cpus": cfg.cpus,
           "load": [os.getloadavg()[0], None], "tools": [], "skipped": unmatched}
    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)  # through the with below: the tools' processes killed, the folder removed

    for s in (signal.SIGTERM, signal.SIGHUP):  # Ctrl-C: KeyboardInterrupt, the same way out
        signal.signal(s, on_signal)
    with tempfile.TemporaryDirectory(prefix="ipclab-agree.") as work:
        cfg.work = work
        for tool, points in picked:
            try:
                why = _unready(tool, cfg)
                if why:
                    doc["skipped"].append({"tool": tool.name, "reason": why})
                    print(f"agree: {tool.name}: skipped: {why}", file=sys.stderr, flush=True)
                    continue
                _measure(tool, points, cfg, doc)
            finally:
                tool.finish(cfg)
    doc["load"][1] = os.getloadavg()[0]
    if a.json:
        import json

        write_atomic(a.json, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    if a.markdown:
        write_atomic(a.markdown, table.markdown(doc))
    sys.stdout.write(table.console(doc))
    failed = any(p.get("error") for t in doc["tools"] for p in t["points"])
    return 1 if failed else 0
