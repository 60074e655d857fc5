"""iceoryx: its iceperf (iceoryx_examples/iceperf at the installed version's tag) against
libs/iceoryx. Built as published: it links iceoryx_binding_c for its C-API variant, which
Debian's iceoryx packages do not ship, so that library is built first from the same tag (static,
against the installed iceoryx_posh), then iceperf against both; its RouDi is the example's own
(iceperf-roudi). iceoryx 2.0 gives every RouDi the same machine-wide names, and iceperf's leader
unlinks fixed names as it starts, so the three programs run in a mount and IPC namespace of their
own (unshare; root, or a user namespace) on empty /tmp and /dev/shm (agree/libs.py's ICEPERF_SH).
Matched: round trips only, the follower spinning on its subscriber — ipclab runs -p wait=spin,
and only across two CPUs; sizes 4K and 64K (iceperf's run from 1 kB). iceperf prints half a round
trip with two significant digits; it is doubled. Not matched: iceperf's messages carry a 12-byte
header and nothing else is written or read (docs/libs.md)."""

from __future__ import annotations

import glob
import os
import re
import subprocess

from .common import run_checked
from .libs import ICEPERF_SH, LibTool, SIZES, header_version, namespace_argv


class Iceoryx(LibTool):
    name = "iceoryx"
    library = "iceoryx"
    repo = "https://github.com/eclipse-iceoryx/iceoryx"
    checkout = "iceoryx"
    files = ["iceoryx_binding_c/CMakeLists.txt", "iceoryx_examples/iceperf/CMakeLists.txt",
             "iceoryx_examples/iceperf/roudi_main_static_config.cpp"]
    install = "libiceoryx-posh-dev"
    needs = {**LibTool.needs, "cmake": "cmake", "unshare": "util-linux", "sh": "dash"}
    method = "iceperf's leader and follower (C++ API, spinning) against libs/iceoryx with wait=spin, across two CPUs"

    def installed(self):
        headers = sorted(glob.glob("/usr/include/iceoryx/v*/iceoryx_versions.hpp"))
        return header_version(headers[-1], "#define ICEORYX_VERSION_{}") if headers else None

    def missing(self, cfg):
        why = super().missing(cfg)
        if why is None:
            self.namespace = namespace_argv()  # makes a namespace and leaves it at once: nothing to remove
            if self.namespace is None:
                why = ("iceperf needs a mount and IPC namespace of its own (unshare --mount --ipc), which this "
                       "user cannot make: run as root or allow user namespaces")
        return why

    def not_run(self, pattern, size, placement):
        return pattern != "roundtrip" or placement == "same" or SIZES[size] % 1024 != 0

    def ipclab_args(self, pattern):
        return ["-p", "wait=spin"]

    def build(self, root, work):
        """iceoryx_binding_c as a static library, so that iceperf needs nothing from the work folder
        at run time (its namespace hides that folder behind an empty /tmp); then the example,
        finding both through CMake as its CMakeLists.txt asks."""
        base = os.path.join(work, "iceoryx")
        prefix, jobs = os.path.join(base, "prefix"), str(max(1, len(os.sched_getaffinity(0))))
        for what, source, build, configure, target in (
                ("iceoryx_binding_c", "iceoryx_binding_c", "binding_c",
                 ["-DBUILD_SHARED_LIBS=OFF", f"-DCMAKE_INSTALL_PREFIX={prefix}"], ["--target", "install"]),
                ("iceperf", "iceoryx_examples/iceperf", "iceperf", [f"-DCMAKE_PREFIX_PATH={prefix}"], [])):
            folder = os.path.join(base, build)
            run_checked(["cmake", "-S", os.path.join(root, source), "-B", folder, "-DCMAKE_BUILD_TYPE=Release",
                         *configure], f"configuring iceoryx's {what}")
            run_checked(["cmake", "--build", folder, "-j", jobs, *target], f"building iceoryx's {what}")
        folder = os.path.join(base, "iceperf")
        return {n: [os.path.join(folder, n)] for n in ("iceperf-roudi", "iceperf-bench-leader", "iceperf-bench-follower")}

    def run_once(self, pattern, size, cpus, count, cfg):
        """One run of iceperf: µs per round trip at `size` bytes, from the row of the table it
        prints for every size (each `count` round trips)."""
        folder = os.path.dirname(self.tools["iceperf-roudi"][0])
        p = self.procs.start([*self.namespace, "sh", "-c", ICEPERF_SH, "iceperf", str(cpus[0]), str(cpus[1]),
                              f"{cpus[0]},{cpus[1]}", str(count)], cwd=folder)
        out = self.procs.finish(p, 60 + 13 * count * 1e-3)  # 13 sizes; a millisecond a round trip is far past
        m = re.search(rf"^\|\s*{size // 1024}\s*\|\s*([0-9.e+]+)\s*\|", out, re.M)
        if not m:
            raise RuntimeError(f"iceperf-bench-leader printed no row for {size // 1024} kB: {out[-600:]!r}")
        return 2 * float(m.group(1))  # half a round trip, as iceperf prints it
