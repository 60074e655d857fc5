"""perf bench: `messaging/pipe` ping-pong against `perf bench sched pipe`, and `anchors/memcpy`
against `perf bench mem memcpy`.

pipe: 4-byte messages, two processes, µs per round trip (perf's usecs/op is one round trip: each
side writes one message and reads one). On one CPU both pinned there; across two, perf forks its
second process itself, and that child is moved to the second CPU with `taskset -p` right after it
appears (its first milliseconds run on the first CPU). perf runs as many round trips as ipclab's
run of the same round made in --seconds.

memcpy: warm (the same two buffers every time), pinned to the first CPU, at 64 KiB, 1 MiB, 16 MiB
and 64 MiB; GiB/s on both sides (perf's GB/sec divides by 1024^3, as ipclab's figure here), perf
with `-f default` and loops for about --seconds at 10 GiB/s.
"""

from __future__ import annotations

import re
import subprocess
import time

from .common import Point, Tool, ipclab_records, run_checked

SIZES = ("64K", "1M", "16M", "64M")
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
PIPE_BAND = 0.05  # docs/methodology.md, "Cross-checks against other tools"
MEMCPY_BAND = 0.10


class Perf(Tool):
    name = "perf"
    method = ("pipe: 4-byte round trips between two processes, µs per round trip on both sides; memcpy: "
              "warm copies on one CPU, GiB/s on both sides")

    def missing(self, cfg):
        try:
            r = subprocess.run(["perf", "version"], capture_output=True, text=True, timeout=30)
        except OSError:
            r = None
        if r is None or r.returncode != 0:
            return ("perf is not on PATH, or does not run for this kernel: apt install linux-perf "
                    "(scripts/setup.sh), or put a perf binary built from the kernel's tools/perf on PATH")
        return None

    def version(self):
        return subprocess.run(["perf", "version"], capture_output=True, text=True).stdout.strip()

    def points(self, cfg):
        pts = [Point(f"pipe {p}", "µs", "time per round trip", "usecs/op (round trip)", PIPE_BAND,
                     {"kind": "pipe", "placement": p}) for p in (("same", "cross") if len(cfg.cpus) > 1 else ("same",))]
        pts += [Point(f"memcpy {s}", "GiB/s", "bytes/s of warm copies", "GB/sec (GiB/s)", MEMCPY_BAND,
                      {"kind": "memcpy", "size": s}) for s in SIZES]
        return pts

    def run_ipclab(self, point, cfg):
        if point.spec["kind"] == "pipe":
            p = point.spec["placement"]
            [rec] = ipclab_records(cfg, ["messaging/pipe", "-p", "pattern=roundtrip", "-p", "size=4", "-p",
                                         "mode=processes", "-p", f"placement={p}",
                                         "--cpus", ",".join(map(str, cfg.cpus))])
            return rec["time_per_op_ns"] / 1000, ""
        [rec] = ipclab_records(cfg, ["anchors/memcpy", "-p", f"size={point.spec['size']}", "-p", "cache=warm",
                                     "-p", "op=copy", "-p", "placement=same", "--cpus", str(cfg.cpus[0])])
        return rec["rates"]["bytes_per_s"] / (1 << 30), ""

    def run_tool(self, point, cfg, ipclab_figure):
        if point.spec["kind"] == "pipe":
            loops = max(1000, int(cfg.seconds * 1e6 / ipclab_figure)) if ipclab_figure else 100000
            return self._pipe(loops, cfg.cpus, point.spec["placement"] == "cross")
        size = point.spec["size"]
        loops = max(10, int(cfg.seconds * 10 * (1 << 30) / (int(size[:-1]) * UNITS[size[-1]])))
        out = run_checked(["taskset", "-c", str(cfg.cpus[0]), "perf", "bench", "mem", "memcpy", "-s", size + "B",
                           "-l", str(loops), "-f", "default"], "perf bench mem memcpy")
        m = re.search(r"([\d.]+)\s+([KMG]?)B/sec", out)
        if not m:
            raise RuntimeError(f"perf bench mem memcpy printed no GB/sec: {out[-300:]!r}")
        return float(m.group(1)) * {"": 1, **UNITS}[m.group(2)] / (1 << 30)

    @staticmethod
    def _pipe(loops, cpus, cross):
        proc = subprocess.Popen(["taskset", "-c", str(cpus[0]), "perf", "bench", "sched", "pipe", "-l", str(loops)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            if cross:
                for _ in range(200):
                    kids = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True,
                                          text=True).stdout.split()
                    if kids:
                        subprocess.run(["taskset", "-pc", str(cpus[1]), kids[0]], capture_output=True)
                        break
                    time.sleep(0.001)
            out, _ = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            raise RuntimeError("perf bench sched pipe ran past 300 s") from None
        finally:  # on every way out (a signal's SystemExit included): no perf left behind
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        m = re.search(r"([\d.]+)\s+usecs/op", out)
        if not m:
            raise RuntimeError(f"perf bench sched pipe printed no usecs/op: {out[-300:]!r}")
        return float(m.group(1))
