"""What zmq, nng and iceoryx share: the libraries' own benchmark programs — libzmq's perf tools
(local_lat/remote_lat, local_thr/remote_thr), nng's perf tool (src/tools/perf/perf.c), iceoryx's
iceperf — built from their published sources at the tag of the *installed* library version and
linked against that installed library, each run right after the ipclab benchmark set up as the
tool is, at 64 B, 4 KiB and 64 KiB, on one CPU and across two, round trips and throughput, the two
sides as processes, over the tool's transport (ipc://, a Unix socket).

Sources: with --src DIR, DIR/libzmq, DIR/nng and DIR/iceoryx are checkouts (or `git archive`
extractions) at the installed versions' tags (v4.3.4, v1.5.2, v2.0.3 on Debian bookworm); without
it they are `git clone --depth 1 --branch <tag>`d from GitHub into agree's temporary folder.
Every process started here is in a process group of its own (in this session: see
Processes.start), pinned with taskset, and killed on every way out.

Units, so that both columns mean the same thing:
  round trip:  µs per round trip, the mean over the run. libzmq's remote_lat, nng's perf and
               iceperf print "average latency" as elapsed / (2 x round trips), half a round trip:
               it is doubled here. ipclab's figure is its time per op (window / round trips).
  throughput:  messages per second received (local_thr's figure; ipclab's ops per second).
What is matched and what is not: docs/libs.md, "Against the libraries' own tools".
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import signal
import subprocess
import time

from .common import Point, Tool, ipclab_records, run_checked

SIZES = {"64": 64, "4K": 4096, "64K": 65536}
MIN_COUNT = {"roundtrip": 2000, "throughput": 20000}
BAND = 0.15
UNIT = {"roundtrip": "µs", "throughput": "msg/s"}


class Processes:
    def __init__(self):
        self.live = []

    def start(self, argv, **kw):
        # A process group of its own (killpg), in this script's session: a session of its own
        # would give each process its own scheduler autogroup (CONFIG_SCHED_AUTOGROUP), and two
        # autogroups take turns on one CPU as groups, which slows the tools' round trips there,
        # where ipclab's two sides are always in one session (docs/libs.md).
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             process_group=0, **kw)
        self.live.append(p)
        return p

    def finish(self, p, timeout):
        """Its output once it has exited; killed (and the run failed) past `timeout` seconds."""
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill(p)
            raise RuntimeError(f"{' '.join(p.args)} ran past {timeout:.0f} s")
        self.live.remove(p)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(p.args)} exited {p.returncode}: {(out + err).strip()[-400:]}")
        return out

    def kill(self, p):
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.communicate()
        if p in self.live:
            self.live.remove(p)

    def kill_all(self):
        for p in list(self.live):
            self.kill(p)



ICEPERF_SH = r"""
set -eu
roudi= follower=
trap 'for p in $follower $roudi; do kill -KILL "$p" 2> /dev/null || true; done' EXIT
mount -t tmpfs -o mode=1777 ipclab-agree /tmp
mount -t tmpfs -o mode=1777 ipclab-agree /dev/shm
taskset -c "$3" ./iceperf-roudi > roudi.log 2>&1 &
roudi=$!
tries=0
until grep -q "RouDi is ready for clients" roudi.log; do
  tries=$((tries + 1))
  if [ "$tries" -gt 1000 ] || ! kill -0 "$roudi" 2> /dev/null; then
    echo "iceperf-roudi did not start: $(tail -n 5 roudi.log)"; exit 1
  fi
  sleep 0.01
done
taskset -c "$2" ./iceperf-bench-follower > follower.log 2>&1 &
follower=$!
taskset -c "$1" ./iceperf-bench-leader -n "$4" -t iceoryx-cpp-api
wait "$follower"
follower=
kill -TERM "$roudi"
wait "$roudi" || true
roudi=
"""



def namespace_argv():
    """How this process makes a mount and IPC namespace of its own: as root, or in a user
    namespace mapping it to root; None when neither works here."""
    for extra in ([], ["--map-root-user"]):
        argv = ["unshare", *extra, "--mount", "--ipc", "--propagation", "private"]
        r = subprocess.run([*argv, "true"], capture_output=True)
        if r.returncode == 0:
            return argv
    return None



class Address:
    """Where a tool's server listens: a Unix socket in the work folder, or a free loopback port."""

    def __init__(self, endpoint, work):
        self.endpoint, self.work, self.n = endpoint, work, 0

    def fresh(self):
        self.n += 1
        if self.endpoint == "ipc":
            path = os.path.join(self.work, f"s{self.n}")
            return f"ipc://{path}", path, None
        with socket.socket() as s:  # the kernel picks; the tool binds it right after (loopback)
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        return f"tcp://127.0.0.1:{port}", None, port


def listening(path, port):
    if path:
        return os.path.exists(path)
    want = f":{port:04X} "
    with open("/proc/net/tcp") as f:
        return any(want in line and line.split()[3] == "0A" for line in f.readlines()[1:])



def header_version(path, define):
    """MAJOR.MINOR.PATCH from the #defines of a C header (`define` with {} where MAJOR, MINOR and
    PATCH go); None when the header or a part is missing."""
    try:
        text = open(path).read()
    except OSError:
        return None
    parts = [re.search(define.format(p) + r"\s+(\d+)", text) for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(m.group(1) for m in parts) if all(parts) else None


class LibTool(Tool):
    """One library's tool. Subclasses set repo, checkout (the folder under --src), files (what
    the build needs of the sources), library (its name in ipclab's context) and implement
    installed() (its version, or None), build() and run_once()."""

    repo = checkout = library = ""
    files: list = []
    needs = {"taskset": "util-linux", "cc": "gcc", "c++": "g++", "pkg-config": "pkg-config"}
    install = ""  # the Debian package that brings the library and its headers

    def __init__(self):
        self.found = None
        self.tools = {}
        self.procs = Processes()

    def tag(self):
        return f"v{self.found}"

    def version(self):
        return f"{self.library} {self.found}, tool built from {self.repo} at {self.tag()}"

    def missing(self, cfg):
        needs = dict(self.needs, **({} if cfg.src else {"git": "git"}))
        for program, package in needs.items():
            if not shutil.which(program):
                return f"{program} is not on PATH: apt install {package}"
        self.found = self.installed()
        if not self.found:
            return f"{self.library} is not installed: apt install {self.install} (scripts/setup.sh)"
        if cfg.src:
            root = os.path.join(cfg.src, self.checkout)
            lacking = [f for f in self.files if not os.path.isfile(os.path.join(root, f))]
            if lacking:
                return (f"--src {cfg.src}: {self.checkout}/{lacking[0]} is missing; check out {self.repo} at "
                        f"{self.tag()} as {root}")
        return None

    def prepare(self, cfg):
        root = os.path.join(cfg.src, self.checkout) if cfg.src else self.clone(cfg.work)
        self.tools = self.build(root, cfg.work)

    def clone(self, work):
        dest = os.path.join(work, "src", self.checkout)
        r = subprocess.run(["git", "clone", "--quiet", "--depth", "1", "--branch", self.tag(), self.repo, dest],
                           capture_output=True, text=True, env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
        if r.returncode != 0:
            raise RuntimeError(f"git clone {self.repo} at {self.tag()} failed ({' '.join(r.stderr.split())[-160:]}); "
                               f"without network, give --src DIR holding {self.checkout}/ at {self.tag()}")
        return dest

    def points(self, cfg):
        out = []
        for pattern in ("roundtrip", "throughput"):
            for placement in ("same", "cross"):
                for size in SIZES:
                    if placement == "cross" and len(cfg.cpus) < 2 or self.not_run(pattern, size, placement):
                        continue
                    if pattern == "roundtrip":
                        what, tool_is = "time per round trip", "'average latency' x 2"
                    else:
                        what = tool_is = "received"
                    out.append(Point(f"{pattern} {size} {placement}", UNIT[pattern], what, tool_is, BAND,
                                     {"pattern": pattern, "size": size, "placement": placement}))
        return out

    def not_run(self, pattern, size, placement):
        return False

    def ipclab_args(self, pattern):
        raise NotImplementedError

    def run_ipclab(self, point, cfg):
        s = point.spec
        env = {**os.environ, "TMPDIR": cfg.work}
        [rec] = ipclab_records(cfg, [f"libs/{self.name}", "-p", f"pattern={s['pattern']}", "-p", f"size={s['size']}",
                                     "-p", "mode=processes", "-p", f"placement={s['placement']}",
                                     *self.ipclab_args(s["pattern"]), "-p", "verify=sample",
                                     "--cpus", f"{cfg.cpus[0]},{cfg.cpus[-1]}"], env=env)
        self.rate = rec["ops"] / rec["wall_s"]
        return (rec["time_per_op_ns"] / 1000 if s["pattern"] == "roundtrip" else self.rate), ""

    def run_tool(self, point, cfg, ipclab_figure):
        s = point.spec
        pin = [cfg.cpus[0], cfg.cpus[-1]] if s["placement"] == "cross" else [cfg.cpus[0]] * 2
        count = max(MIN_COUNT[s["pattern"]], int(self.rate * cfg.seconds))  # about as long as ipclab's run
        try:
            return self.run_once(s["pattern"], SIZES[s["size"]], pin, count, cfg)
        finally:
            self.procs.kill_all()


class PerfPair(LibTool):
    """zmq and nng: a server (local_*) and a client (remote_*) over a Unix socket."""

    def run_once(self, pattern, size, cpus, count, cfg):
        server_name, client_name = ("local_lat", "remote_lat") if pattern == "roundtrip" else ("local_thr", "remote_thr")
        url, path, _ = Address("ipc", cfg.work).fresh()
        procs = self.procs
        server = procs.start(["taskset", "-c", str(cpus[1]), *self.tools[server_name], url, str(size), str(count)])
        try:
            deadline = time.monotonic() + 10
            while not os.path.exists(path):  # nng's dial fails at once where nothing listens yet
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{self.name} {server_name} did not listen on {url}: {server.communicate()}")
                time.sleep(0.01)
            client = procs.start(["taskset", "-c", str(cpus[0]), *self.tools[client_name], url, str(size), str(count)])
            limit = 60 + count * 1e-3  # a millisecond a message: far past any working run
            client_out = procs.finish(client, limit)
            server_out = procs.finish(server, limit)
        finally:
            if os.path.exists(path):
                os.unlink(path)
        if pattern == "roundtrip":
            m = re.search(r"average latency:\s*([0-9.]+)\s*\[us\]", client_out)
            if not m:
                raise RuntimeError(f"{self.name} {client_name} printed no average latency: {client_out[-300:]!r}")
            return 2 * float(m.group(1))  # half a round trip, as both tools print it
        m = re.search(r"throughput:\s*([0-9.]+)\s*\[msg/s\]", server_out)
        if not m:
            raise RuntimeError(f"{self.name} {server_name} printed no throughput: {server_out[-300:]!r}")
        return float(m.group(1))
