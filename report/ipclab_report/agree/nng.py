"""nng: nng's perf tool (src/tools/perf/perf.c, one program for every mode, built with pair1)
against libs/nng. Round trip: buffers=0 (the latency tool leaves nng's default queues), one
nng_msg sent back and forth; throughput: buffers=128 (the tool sets NNG_OPT_SENDBUF/RECVBUF to
128), an nng_msg_alloc and nng_sendmsg per message. Common ground: agree/libs.py."""

from __future__ import annotations

import os

from .common import run_checked
from .libs import PerfPair, header_version

HEADER = "/usr/include/nng/nng.h"


class Nng(PerfPair):
    name = "nng"
    library = "nng"
    repo = "https://github.com/nanomsg/nng"
    checkout = "nng"
    files = ["src/tools/perf/perf.c"]
    install = "libnng-dev"
    method = "nng's perf program (pair1 round trips and throughput) against libs/nng set up as it is, processes, ipc://"

    def installed(self):  # Debian ships no nng.pc: the header's version
        return header_version(HEADER, "#define NNG_{}_VERSION")

    def ipclab_args(self, pattern):
        return ["-p", "message=msg", "-p", "buffers=" + ("0" if pattern == "roundtrip" else "128")]

    def build(self, root, work):
        exe = os.path.join(work, "nng-perf")
        run_checked(["cc", "-O2", "-DNNG_HAVE_PAIR1", "-o", exe, os.path.join(root, "src/tools/perf/perf.c"),
                     "-lnng", "-lpthread"], "building nng's perf")
        return {name: [exe, "-m", name] for name in ("local_lat", "remote_lat", "local_thr", "remote_thr")}
