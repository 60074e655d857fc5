"""zmq: libzmq's perf/local_lat, remote_lat, local_thr and remote_thr against libs/zmq.
Round trip: socket=reqrep (local_lat binds a REP and sends each request back as it came,
remote_lat connects a REQ); throughput: socket=pushpull (local_thr binds a PULL, remote_thr
connects a PUSH); message=msg (a zmq_msg_t handed over, as the tools). Common ground: agree/libs.py."""

from __future__ import annotations

import os
import shutil
import subprocess

from .common import run_checked
from .libs import PerfPair


class Zmq(PerfPair):
    name = "zmq"
    library = "libzmq"
    repo = "https://github.com/zeromq/libzmq"
    checkout = "libzmq"
    files = ["perf/local_lat.cpp", "perf/remote_lat.cpp", "perf/local_thr.cpp", "perf/remote_thr.cpp"]
    install = "libzmq3-dev"
    method = ("libzmq's perf programs (REQ/REP round trips, PUSH/PULL throughput) against libs/zmq set up as "
              "they are, processes, ipc://")

    def installed(self):
        r = subprocess.run(["pkg-config", "--modversion", "libzmq"], capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else None

    def ipclab_args(self, pattern):
        return ["-p", "message=msg", "-p", "socket=" + ("reqrep" if pattern == "roundtrip" else "pushpull")]

    def build(self, root, work):
        """The perf sources include "../include/zmq.h": they are compiled in a copy of perf/ beside
        an include/ holding the installed header, so that header and library are the installed
        version's."""
        inc = run_checked(["pkg-config", "--variable=includedir", "libzmq"], "pkg-config libzmq").strip()
        base = os.path.join(work, "zmq")
        os.makedirs(os.path.join(base, "perf"))
        os.makedirs(os.path.join(base, "include"))
        for h in ("zmq.h", "zmq_utils.h"):
            if os.path.exists(os.path.join(inc, h)):
                os.symlink(os.path.join(inc, h), os.path.join(base, "include", h))
        flags = run_checked(["pkg-config", "--libs", "libzmq"], "pkg-config libzmq").split()
        tools = {}
        for name in ("local_lat", "remote_lat", "local_thr", "remote_thr"):
            src = os.path.join(base, "perf", name + ".cpp")
            shutil.copyfile(os.path.join(root, "perf", name + ".cpp"), src)
            exe = os.path.join(base, name)
            run_checked(["c++", "-O2", "-o", exe, src, *flags, "-lpthread"], f"building libzmq's {name}")
            tools[name] = [exe]
        return tools
