"""fio: the fileio engines against fio on the same file, block size, pattern, queue depth and
direct flag — ipcrt (fixed_direct: registered file and buffers) with fio io_uring
`--registerfiles --fixedbufs` (fixed=1), liburing with fio io_uring (fixed=0), libaio with fio
libaio; one read per submitting system call on both (batch=1, fio's iodepth_batch_submit=1); IO
buffers on 4 KiB pages as the page allocator hands them out on both (hugepages=0, fio's
--iomem=malloc): the engines' default of huge-page buffers makes each read one physical segment,
which fio's buffers are not, and sequential 64 KiB reads went 1.3-2x fio's for that alone
(docs/fileio.md, "Buffers").

fio runs through ipclab's fileio/fio_io_uring and fileio/fio_libaio, which start fio itself on
ipclab's test file and fold fio's own JSON figures into the record (src/mechanisms/fileio/fio.cpp):
the tool's figure is fio's "iops", the engine's ipclab's reads per second, both at the point's
queue depth. The engines verify every block they read; fio reads without checking.
--engine-param NAME=VALUE sets an engine parameter for the engines' runs only (batch=0,
hugepages=1, verify=sample: docs/fileio.md's variants).
"""

from __future__ import annotations

import os
import shutil

from .common import Point, Tool, ipclab_records, run_checked

PAIRS = (("ipcrt", "fio_io_uring", "1"), ("liburing", "fio_io_uring", "0"), ("libaio", "fio_libaio", None))
PATTERNS = ("rand", "seq")
DEPTHS = ("1", "32", "128")
BAND = 0.15


class Fio(Tool):
    name = "fio"
    method = ("reads of one test file (rand: 4 KiB shuffled; seq: 64 KiB), O_DIRECT, at the point's queue "
              "depth, into buffers on 4 KiB pages on both sides (the engines' hugepages=0, fio's --iomem=malloc); "
              "IOPS on both sides, fio's own figure from its JSON")

    def missing(self, cfg):
        env = os.environ.get("IPCLAB_FIO")
        if env:
            return None if os.access(env, os.X_OK) else f"IPCLAB_FIO={env} is not an executable: name a fio binary"
        if shutil.which("fio"):
            return None
        return "fio is not on PATH: apt install fio (scripts/setup.sh), or set IPCLAB_FIO to a fio binary"

    def version(self):
        return run_checked([os.environ.get("IPCLAB_FIO") or "fio", "--version"], "fio --version").strip()

    def points(self, cfg):
        out = []
        for engine, ref, fixed in PAIRS:
            for pattern in PATTERNS:
                for qd in DEPTHS:
                    label = f"{engine} {pattern} qd={qd}"
                    tool_is = f"{ref} IOPS" + (f" (fixed={fixed})" if fixed else "")
                    out.append(Point(label, "IOPS", f"{engine} IOPS", tool_is, BAND,
                                     {"engine": engine, "ref": ref, "fixed": fixed, "pattern": pattern, "qd": qd}))
        return out

    def _iops(self, mechanism, point, cfg, extra):
        s = point.spec
        [rec] = ipclab_records(cfg, [f"fileio/{mechanism}", "-p", f"pattern={s['pattern']}", "-p", f"qd={s['qd']}",
                                     "-p", f"file_size={cfg.file_size}", *extra, "--cpus", str(cfg.cpus[0])])
        return rec["rates"]["iops"]

    def run_ipclab(self, point, cfg):
        params = {"batch": "1", "hugepages": "0",
                  **({"variant": "fixed_direct"} if point.spec["engine"] == "ipcrt" else {})}
        params.update(a.split("=", 1) for a in cfg.engine_params)
        extra = [x for name, value in params.items() for x in ("-p", f"{name}={value}")]
        return self._iops(point.spec["engine"], point, cfg, extra), ""

    def run_tool(self, point, cfg, ipclab_figure):
        fixed = point.spec["fixed"]
        return self._iops(point.spec["ref"], point, cfg, ["-p", f"fixed={fixed}"] if fixed else [])
