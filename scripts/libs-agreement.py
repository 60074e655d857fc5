#!/usr/bin/env python3
"""The libraries' own benchmark programs beside ipclab's libs suite: libzmq's perf tools
(local_lat/remote_lat, local_thr/remote_thr) and nng's perf tool (src/tools/perf/perf.c), built
from their published sources at the tag of the *installed* library version and linked against
that installed library, each run alternately with the ipclab benchmark set up as the tool is, N
rounds, at 64 B, 4 KiB and 64 KiB, on one CPU and across two, round trips and throughput, the two
sides as processes, over the same transport.

    scripts/libs-agreement.py --ipclab build/release/ipclab --src /tmp/libsrc --json out.json
    scripts/libs-agreement.py --from out.json --markdown      (the table of an earlier run)

Sources: with --src DIR, DIR/libzmq and DIR/nng are checkouts (or `git archive` extractions) of
libzmq and nng at the installed versions' tags (v4.3.4, v1.5.2 here); without it the script
`git clone --depth 1 --branch <tag>`s them from GitHub into a temporary folder of its own. It
writes only in that temporary folder (sources, tools, sockets, ipclab's TMPDIR), removed on every
way out, and in --json's file; it starts every process itself, each in a process group of its
own (in this script's session: see Processes.start), pinned with taskset, and kills what is left
of them on every way out. Bad input is refused with exit 2 and one line naming the fix, before
anything is created.

What is matched (ipclab's side), and what is not:
  zmq round trip:  socket=reqrep (local_lat binds a REP and sends each request back as it came,
                   remote_lat connects a REQ), message=msg (zmq_msg_t handed over, as the tools).
  zmq throughput:  socket=pushpull (local_thr binds a PULL, remote_thr connects a PUSH),
                   message=msg.
  nng round trip:  pair1, buffers=0 (the latency tool leaves nng's default queues), message=msg
                   (one nng_msg sent back and forth, the server echoing the message it received).
  nng throughput:  pair1, buffers=128 (the throughput tool sets NNG_OPT_SENDBUF/RECVBUF to 128),
                   message=msg (an nng_msg_alloc and nng_sendmsg per message, as the tool).
  both:            verify=sample — the tools check only each message's size, never its bytes,
                   while ipclab still writes and checks its header, one word per 4 KiB and the
                   tail; mode=processes; the tool's transport (endpoint=ipc: ipc:// on a Unix
                   socket; or tcp, 127.0.0.1); same = both sides on the first CPU, cross = the
                   client/sender (remote_*) on the first and the server/receiver (local_*) on the
                   second.
  not matched:     remote_lat sends one message back and forth, ipclab's client a new one per
                   request (each is checked); the tools time one run from start to end (warm-up
                   included, nng with its millisecond clock), ipclab a window after a warm-up.

Units, so that both columns mean the same thing:
  round trip:  µs per round trip, the mean over the run. libzmq's remote_lat and nng's perf print
               "average latency" as elapsed / (2 x round trips), half a round trip: the script
               doubles it. ipclab's figure is its time per op (window / round trips).
  throughput:  messages per second received (local_thr's figure; ipclab's ops per second).

iceoryx: its iceperf (iceoryx_examples/iceperf at the installed version's tag, v2.0.3 here),
built as published: it links iceoryx_binding_c for its C-API variant, which Debian's iceoryx
packages do not ship, so the script first builds that library from the same tag (a static
library, against the installed iceoryx_posh) and then iceperf against both; its RouDi is the
example's own (iceperf-roudi, a static configuration). iceoryx 2.0 gives every RouDi the same
machine-wide names (/tmp/roudi, /dev/shm/iceoryx_mgmt, ...), and iceperf's leader unlinks fixed
message-queue and socket names as it starts, so the three programs run in a mount and IPC
namespace of their own (unshare; root, or a user namespace), with empty tmpfs mounts on /tmp and
/dev/shm: they never see, remove or block on another RouDi's names (ipclab's own included), and
everything they make goes with the namespace. Matched: iceperf measures round trips only, its
follower spinning on its subscriber (take() in a loop) — ipclab runs -p wait=spin, and only
across two CPUs (two spinning sides on one CPU wait out each other's time slices; ipclab refuses
that pairing); its sizes are 1 kB to 4 MB, so 4K and 64K only (no 64-byte point). It prints the
half round trip with two significant digits (elapsed / (2 x round trips)); the script doubles it.
Not matched: iceperf's messages carry a 12-byte header and nothing else is written or read,
where ipclab with verify=sample writes and checks one word per 4 KiB page, and its server copies
those words into the echo (docs/libs.md).

It measures: run it with nothing else running; the figures of a busy machine say little.
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

TOOLS = {  # library -> (GitHub repository, the tag of a version, the files the script needs)
    "zmq": ("https://github.com/zeromq/libzmq", "v{}",
            ["perf/local_lat.cpp", "perf/remote_lat.cpp", "perf/local_thr.cpp", "perf/remote_thr.cpp"]),
    "nng": ("https://github.com/nanomsg/nng", "v{}", ["src/tools/perf/perf.c"]),
    "iceoryx": ("https://github.com/eclipse-iceoryx/iceoryx", "v{}",
                ["iceoryx_binding_c/CMakeLists.txt", "iceoryx_examples/iceperf/CMakeLists.txt",
                 "iceoryx_examples/iceperf/roudi_main_static_config.cpp"]),
}
CHECKOUT = {"zmq": "libzmq", "nng": "nng", "iceoryx": "iceoryx"}  # folder names under --src
LIBS = list(TOOLS)
LIBRARY = {"zmq": "libzmq", "nng": "nng", "iceoryx": "iceoryx"}  # names in the record and in ipclab's context
SIZES = {"64": 64, "4K": 4096, "64K": 65536}
MIN_COUNT = {"roundtrip": 2000, "throughput": 20000}
UNITS = {"roundtrip": "µs per round trip (mean)", "throughput": "messages/s"}


def refuse(line):
    print(f"libs-agreement: {line}", file=sys.stderr)
    sys.exit(2)


# ---------------------------------------------------------------------------------------------
# Input, checked before anything is created.

class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, naming the fix, exit 2 (argparse's own prints the usage too)
        refuse(f"{message}: see --help")


def parse_args(argv):
    ap = Parser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ipclab", default="build/release/ipclab", help="the ipclab binary")
    ap.add_argument("--src", help="a folder holding libzmq/, nng/ and iceoryx/ checkouts at the installed "
                                   "versions' tags")
    ap.add_argument("--libs", default=",".join(LIBS), help="among zmq, nng and iceoryx (default: all three)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds, each running the tool and ipclab once (3)")
    ap.add_argument("--sizes", default="64,4K,64K", help="message sizes among 64, 4K, 64K")
    ap.add_argument("--placements", default="same,cross", help="same, cross or both")
    ap.add_argument("--patterns", default="roundtrip,throughput", help="roundtrip, throughput or both")
    ap.add_argument("--endpoint", default="ipc", choices=["ipc", "tcp"], help="ipc:// (default) or tcp:// loopback")
    ap.add_argument("--cpus", help="two CPUs A,B (default: the first two this process may use)")
    ap.add_argument("--seconds", type=float, default=1.0,
                    help="about how long each run measures, tool and ipclab alike (1.0)")
    ap.add_argument("--json", help="write every figure here")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--from", dest="from_json", help="print the table of an earlier --json file; runs nothing")
    ap.add_argument("--keep-going", action="store_true", help="record a failed run and go on (default: stop)")
    return ap.parse_args(argv)


def split(text, allowed, what):
    values = [v for v in text.split(",") if v]
    bad = [v for v in values if v not in allowed]
    if not values or bad:
        refuse(f"--{what} {text!r}: use a comma-separated list of {', '.join(allowed)}")
    return list(dict.fromkeys(values))


def header_version(path, define):
    """MAJOR.MINOR.PATCH from the #defines of a C header (`define` with {} where MAJOR, MINOR and
    PATCH go); None when the header or a part is missing."""
    try:
        text = open(path).read()
    except OSError:
        return None
    parts = [re.search(define.format(p) + r"\s+(\d+)", text) for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(m.group(1) for m in parts) if all(parts) else None


def installed_versions(libs):
    """The installed libraries' versions: pkg-config for libzmq, nng's header (Debian ships no
    nng.pc) for nng, its versions header for iceoryx."""
    found = {}
    if "zmq" in libs:
        r = subprocess.run(["pkg-config", "--modversion", "libzmq"], capture_output=True, text=True)
        if r.returncode != 0:
            refuse("libzmq is not installed (pkg-config libzmq): apt install libzmq3-dev, or leave zmq out of --libs")
        found["zmq"] = r.stdout.strip()
    if "nng" in libs:
        header = "/usr/include/nng/nng.h"
        found["nng"] = header_version(header, "#define NNG_{}_VERSION")
        if not found["nng"]:
            refuse(f"nng is not installed, or {header} names no NNG_MAJOR/MINOR/PATCH_VERSION: "
                   "apt install libnng-dev, or leave nng out of --libs")
    if "iceoryx" in libs:
        headers = sorted(glob.glob("/usr/include/iceoryx/v*/iceoryx_versions.hpp"))
        found["iceoryx"] = header_version(headers[-1], "#define ICEORYX_VERSION_{}") if headers else None
        if not found["iceoryx"]:
            refuse("iceoryx is not installed (/usr/include/iceoryx/v*/iceoryx_versions.hpp): "
                   "apt install libiceoryx-posh-dev, or leave iceoryx out of --libs")
    return found


# iceperf's three programs in a mount and IPC namespace of their own (see the docstring), run by
# this shell from the folder they were built in: it holds that folder as its working directory
# before the empty /tmp is mounted over the one that folder lies in. Arguments: the leader's CPU,
# the follower's, RouDi's, the round trips per size. RouDi is stopped with SIGTERM, as its
# documentation asks; on any other way out (a program that fails, `set -e`) the shell kills the
# two it started in the background before it exits, each only while it is still its unreaped
# child; a run killed outright (the process group) takes the namespace, and all it made, with it.
ICEPERF_SH = r"""
set -eu
roudi= follower=
trap 'for p in $follower $roudi; do kill -KILL "$p" 2> /dev/null || true; done' EXIT
mount -t tmpfs -o mode=1777 libs-agreement /tmp
mount -t tmpfs -o mode=1777 libs-agreement /dev/shm
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


def check_src(src, libs, versions):
    """--src: each library's files there, and a checkout's tag the installed version's."""
    if not os.path.isdir(src):
        refuse(f"--src {src}: no such folder; give one holding {' and '.join(CHECKOUT[l] + '/' for l in libs)}")
    for lib in libs:
        root = os.path.join(src, CHECKOUT[lib])
        for f in TOOLS[lib][2]:
            if not os.path.isfile(os.path.join(root, f)):
                refuse(f"--src {src}: {CHECKOUT[lib]}/{f} is missing; check out {TOOLS[lib][0]} at "
                       f"{TOOLS[lib][1].format(versions[lib])} as {os.path.join(src, CHECKOUT[lib])}")
        tag = git_tag(root)
        want = TOOLS[lib][1].format(versions[lib])
        if tag is not None and tag != want:
            refuse(f"--src {root} is checked out at {tag}, the installed {lib} is {versions[lib]}: "
                   f"check out {want} there")


def git_tag(root):
    """The tag a git checkout stands on exactly; None for an extraction (no .git)."""
    if not os.path.exists(os.path.join(root, ".git")):
        return None
    r = subprocess.run(["git", "-C", root, "describe", "--tags", "--exact-match"], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else "(no tag)"


# ---------------------------------------------------------------------------------------------
# Processes: every one the script starts, killed on every way out.

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


def run_checked(argv, what, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise RuntimeError(f"{what} failed: {(r.stdout + r.stderr).strip()[-800:]}")
    return r.stdout


# ---------------------------------------------------------------------------------------------
# The tools, built from their sources against the installed libraries.

def fetch_sources(libs, versions, src, work):
    """Each library's source folder: under --src, or cloned into `work`."""
    roots = {}
    for lib in libs:
        if src:
            roots[lib] = os.path.join(src, CHECKOUT[lib])
            continue
        url, tag = TOOLS[lib][0], TOOLS[lib][1].format(versions[lib])
        dest = os.path.join(work, "src", CHECKOUT[lib])
        r = subprocess.run(["git", "clone", "--quiet", "--depth", "1", "--branch", tag, url, dest],
                           capture_output=True, text=True, env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
        if r.returncode != 0:
            raise RuntimeError(f"git clone {url} at {tag} failed ({r.stderr.strip().splitlines()[-1:]}); "
                               f"without network, give --src DIR holding {CHECKOUT[lib]}/ at {tag}")
        roots[lib] = dest
    return roots


def build_tools(libs, roots, work):
    """{lib: {tool name: argv prefix}}. libzmq's perf sources include "../include/zmq.h": they
    are compiled in a copy of perf/ beside an include/ holding the installed header, so that
    header and library are the installed version's. nng's perf.c is one program for every
    mode (-m local_lat ...), built with the protocol its modes use (pair1)."""
    tools = {}
    if "zmq" in libs:
        inc = run_checked(["pkg-config", "--variable=includedir", "libzmq"], "pkg-config libzmq").strip()
        base = os.path.join(work, "zmq")
        os.makedirs(os.path.join(base, "perf"))
        os.makedirs(os.path.join(base, "include"))
        for h in ("zmq.h", "zmq_utils.h"):
            if os.path.exists(os.path.join(inc, h)):
                os.symlink(os.path.join(inc, h), os.path.join(base, "include", h))
        libsflags = run_checked(["pkg-config", "--libs", "libzmq"], "pkg-config libzmq").split()
        tools["zmq"] = {}
        for name in ("local_lat", "remote_lat", "local_thr", "remote_thr"):
            srcfile = os.path.join(base, "perf", name + ".cpp")
            shutil.copyfile(os.path.join(roots["zmq"], "perf", name + ".cpp"), srcfile)
            exe = os.path.join(base, name)
            run_checked(["c++", "-O2", "-o", exe, srcfile, *libsflags, "-lpthread"], f"building libzmq's {name}")
            tools["zmq"][name] = [exe]
    if "nng" in libs:
        exe = os.path.join(work, "nng-perf")
        run_checked(["cc", "-O2", "-DNNG_HAVE_PAIR1", "-o", exe, os.path.join(roots["nng"], "src/tools/perf/perf.c"),
                     "-lnng", "-lpthread"], "building nng's perf")
        tools["nng"] = {name: [exe, "-m", name] for name in ("local_lat", "remote_lat", "local_thr", "remote_thr")}
    if "iceoryx" in libs:
        # iceoryx_binding_c as a static library, so that iceperf needs nothing from the work folder
        # at run time (its namespace hides that folder behind an empty /tmp); then the example,
        # finding both through CMake as its CMakeLists.txt asks.
        base = os.path.join(work, "iceoryx")
        prefix, jobs = os.path.join(base, "prefix"), str(max(1, len(os.sched_getaffinity(0))))
        for what, source, build, configure, target in (
                ("iceoryx_binding_c", "iceoryx_binding_c", "binding_c",
                 ["-DBUILD_SHARED_LIBS=OFF", f"-DCMAKE_INSTALL_PREFIX={prefix}"], ["--target", "install"]),
                ("iceperf", "iceoryx_examples/iceperf", "iceperf", [f"-DCMAKE_PREFIX_PATH={prefix}"], [])):
            folder = os.path.join(base, build)
            run_checked(["cmake", "-S", os.path.join(roots["iceoryx"], source), "-B", folder,
                         "-DCMAKE_BUILD_TYPE=Release", *configure], f"configuring iceoryx's {what}")
            run_checked(["cmake", "--build", folder, "-j", jobs, *target], f"building iceoryx's {what}")
        folder = os.path.join(base, "iceperf")
        tools["iceoryx"] = {name: [os.path.join(folder, name)]
                            for name in ("iceperf-roudi", "iceperf-bench-leader", "iceperf-bench-follower")}
    return tools


def linked_library(exe):
    """The library file the dynamic loader gives `exe` for libzmq, nng or iceoryx (its name holds
    the version)."""
    out = run_checked(["ldd", exe], f"ldd {exe}")
    m = re.search(r"lib(zmq|nng|iceoryx_posh)\.so[.\d]* => (\S+)", out)
    return os.path.realpath(m.group(2)) if m else None


# ---------------------------------------------------------------------------------------------
# One run of each.

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


def tool_run(procs, tools, lib, pattern, size, cpus, addresses, count):
    """One run of the library's tool pair; its figure in the table's unit."""
    server_name, client_name = ("local_lat", "remote_lat") if pattern == "roundtrip" else ("local_thr", "remote_thr")
    url, path, port = addresses.fresh()
    server = procs.start(["taskset", "-c", str(cpus[1]), *tools[lib][server_name], url, str(size), str(count)])
    try:
        deadline = time.monotonic() + 10
        while not listening(path, port):  # nng's dial fails at once where nothing listens yet
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{lib} {server_name} did not listen on {url}: {server.communicate()}")
            time.sleep(0.01)
        client = procs.start(["taskset", "-c", str(cpus[0]), *tools[lib][client_name], url, str(size), str(count)])
        limit = 60 + count * 1e-3  # a millisecond a message: far past any working run
        client_out = procs.finish(client, limit)
        server_out = procs.finish(server, limit)
    finally:
        procs.kill_all()
        if path and os.path.exists(path):
            os.unlink(path)
    if pattern == "roundtrip":
        m = re.search(r"average latency:\s*([0-9.]+)\s*\[us\]", client_out)
        if not m:
            raise RuntimeError(f"{lib} {client_name} printed no average latency: {client_out!r}")
        return 2 * float(m.group(1))  # half a round trip, as both tools print it
    m = re.search(r"throughput:\s*([0-9.]+)\s*\[msg/s\]", server_out)
    if not m:
        raise RuntimeError(f"{lib} {server_name} printed no throughput: {server_out!r}")
    return float(m.group(1))


def iceperf_run(procs, tools, size, cpus, count, namespace):
    """One run of iceperf (C++ API): µs per round trip at `size` bytes, from the row of the
    table it prints for every size (each `count` round trips)."""
    folder = os.path.dirname(tools["iceoryx"]["iceperf-roudi"][0])
    p = procs.start([*namespace, "sh", "-c", ICEPERF_SH, "iceperf", str(cpus[0]), str(cpus[1]),
                     f"{cpus[0]},{cpus[1]}", str(count)], cwd=folder)
    out = procs.finish(p, 60 + 13 * count * 1e-3)  # 13 sizes; a millisecond a round trip is far past any working run
    m = re.search(rf"^\|\s*{size // 1024}\s*\|\s*([0-9.e+]+)\s*\|", out, re.M)
    if not m:
        raise RuntimeError(f"iceperf-bench-leader printed no row for {size // 1024} kB: {out[-600:]!r}")
    return 2 * float(m.group(1))  # half a round trip, as iceperf prints it


def not_run(lib, pattern, size_text, placement):
    """Why a cell of the grid is not measured for `lib`, or None."""
    if lib != "iceoryx":
        return None
    if pattern != "roundtrip":
        return "iceperf measures round trips only"
    if placement == "same":
        return "iceperf's follower spins: two spinning sides on one CPU wait out each other's time slices"
    if SIZES[size_text] % 1024:
        return "iceperf's sizes are 1 kB to 4 MB"
    return None


def ipclab_args(lib, pattern):
    """The ipclab parameters that make its run the tool's (see the docstring)."""
    if lib == "zmq":
        common = ["-p", "message=msg", "-p", "socket=" + ("reqrep" if pattern == "roundtrip" else "pushpull")]
    elif lib == "nng":
        common = ["-p", "message=msg", "-p", "buffers=" + ("0" if pattern == "roundtrip" else "128")]
    else:
        common = ["-p", "wait=spin"]
    return common + ["-p", "verify=sample"]


def ipclab_run(procs, binary, lib, pattern, size_text, placement, endpoint, cpus, seconds, work):
    """One ipclab run: its figure in the table's unit, its rate (ops/s) and its record's name."""
    out = os.path.join(work, "ipclab.json")
    argv = [binary, "run", f"libs/{lib}", "-p", f"pattern={pattern}", "-p", f"size={size_text}",
            "-p", "mode=processes", "-p", f"placement={placement}",
            *([] if lib == "iceoryx" else ["-p", f"endpoint={endpoint}"]),  # iceoryx has one way only
            *ipclab_args(lib, pattern), "--cpus", f"{cpus[0]},{cpus[1]}", "--duration", str(seconds),
            "--warmup", str(min(0.5, seconds / 4)), "--repetitions", "1", "--json", out]
    p = procs.start(argv, env={**os.environ, "TMPDIR": work})
    procs.finish(p, 120 + 5 * seconds)
    with open(out) as f:
        doc = json.load(f)
    os.unlink(out)
    [rec] = [b for b in doc["benchmarks"] if b["run_type"] == "iteration"]
    if rec["status"] != "ok":
        raise RuntimeError(f"ipclab {rec['name']}: {rec['status']}: {rec['error']}")
    ops_per_s = rec["ops"] / rec["wall_s"]
    figure = rec["time_per_op_ns"] / 1000 if pattern == "roundtrip" else ops_per_s
    return figure, ops_per_s, rec["name"], doc.get("context", {}).get("libraries", {})


# ---------------------------------------------------------------------------------------------
# The table.

def paired_ratio(cell):
    """Each round's ipclab figure over the tool's run right after it, the median of those: two
    runs next to each other share the machine's state (on a VM, where the host has put the two
    vCPUs), which the two columns' medians need not. None without a whole round."""
    pairs = [i / t for i, t in zip(cell["ipclab"], cell["tool"]) if t]
    return statistics.median(pairs) if pairs else None


def table(doc, markdown):
    lines = []
    head = ["library", "pattern", "size", "placement", "tool", "ipclab", "ipclab / tool", "rounds (tool | ipclab)"]
    info = (f"# {doc['endpoint']} endpoint (zmq, nng), processes, medians of {doc['rounds']} alternating rounds; "
            f"round trip: {UNITS['roundtrip']} (the tools' 'average latency' x 2, ipclab's time per op); "
            f"throughput: {UNITS['throughput']} received; ipclab / tool: the median of the rounds' ratios. "
            f"Versions: {', '.join(f'{k} {v}' for k, v in doc['versions'].items())}. "
            f"Load {doc['load'][0]:.2f} before, {doc['load'][1]:.2f} after; {doc['when']}.")
    rows = []
    for c in doc["cells"]:
        def fmt(v, pattern=c["pattern"]):
            if v is None:
                return "—"
            return f"{v:.1f} µs" if pattern == "roundtrip" else f"{v / 1000:.1f} k/s"
        r = paired_ratio(c)
        ratio = f"{r:.2f}" if r is not None else "—"
        rounds = ", ".join(f"{v:.1f}" if c["pattern"] == "roundtrip" else f"{v / 1000:.0f}k" for v in c["tool"])
        rounds += " | " + ", ".join(f"{v:.1f}" if c["pattern"] == "roundtrip" else f"{v / 1000:.0f}k"
                                    for v in c["ipclab"])
        if c.get("error"):
            rounds += f" (failed: {c['error'][:80]})"
        rows.append([c["library"], c["pattern"], c["size"], c["placement"], fmt(c["tool_median"]),
                     fmt(c["ipclab_median"]), ratio, rounds])
    if markdown:
        lines.append(info.lstrip("# "))
        lines.append("")
        def md(cells):  # a '|' inside a cell would end it
            return "| " + " | ".join(str(x).replace("|", "\\|") for x in cells) + " |"
        lines.append(md(head))
        lines.append("|" + "|".join(["---"] * 4 + ["--:"] * 3 + ["---"]) + "|")
        lines += [md(r) for r in rows]
    else:
        lines.append(info)
        widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
        lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
        lines += ["  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip() for r in rows]
    if doc.get("not_run"):
        lines.append("")
        lines.append("Not run:" if markdown else "# not run:")
        grouped = {}
        for n in doc["not_run"]:
            grouped.setdefault(n["why"], []).append(n["cell"])
        lines += [f"{'- ' if markdown else '#   '}{', '.join(cells)}: {why}" for why, cells in grouped.items()]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------

def main(argv):
    a = parse_args(argv)
    if a.from_json:
        try:
            with open(a.from_json) as f:
                text = table(json.load(f), a.markdown)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            refuse(f"--from {a.from_json}: not a file this script wrote ({e!r}); give the file of an earlier --json")
        print(text)
        return 0
    libs = split(a.libs, LIBS, "libs")
    sizes = split(a.sizes, list(SIZES), "sizes")
    placements = split(a.placements, ["same", "cross"], "placements")
    patterns = split(a.patterns, ["roundtrip", "throughput"], "patterns")
    if a.rounds < 1:
        refuse(f"--rounds {a.rounds}: give 1 or more")
    if not 0.05 <= a.seconds <= 60:
        refuse(f"--seconds {a.seconds}: give 0.05 to 60")
    binary = os.path.abspath(a.ipclab)
    if not os.access(binary, os.X_OK):
        refuse(f"--ipclab {a.ipclab}: no such executable; build it (cmake --build --preset release) or name it")
    allowed = sorted(os.sched_getaffinity(0))
    if a.cpus:
        try:
            cpus = [int(c) for c in a.cpus.split(",")]
        except ValueError:
            cpus = []
        if len(cpus) != 2 or cpus[0] == cpus[1] or not set(cpus) <= set(allowed):
            refuse(f"--cpus {a.cpus}: give two different CPUs this process may use, of {allowed}")
    elif len(allowed) < 2 and "cross" in placements:
        refuse(f"only CPU {allowed} may be used here: give --placements same")
    else:
        cpus = allowed[:2] if len(allowed) >= 2 else allowed * 2
    needed = {"taskset": "util-linux", "cc": "gcc", "c++": "g++", "ldd": "libc-bin", "pkg-config": "pkg-config"}
    if not a.src:
        needed["git"] = "git"
    if "iceoryx" in libs:
        needed.update({"cmake": "cmake", "unshare": "util-linux", "sh": "dash"})
    for tool, package in needed.items():
        if not shutil.which(tool):
            refuse(f"{tool} is not installed: apt install {package}")
    if a.json and not os.path.isdir(os.path.dirname(os.path.abspath(a.json))):
        refuse(f"--json {a.json}: its folder does not exist; create it or name another file")
    versions = installed_versions(libs)
    if a.src:
        check_src(a.src, libs, versions)
    namespace = None
    if "iceoryx" in libs:
        namespace = namespace_argv()  # makes a namespace and leaves it at once: nothing to remove
        if namespace is None:
            refuse("iceperf needs a mount and IPC namespace of its own (unshare --mount --ipc), which this "
                   "user cannot make: run as root, allow user namespaces, or --libs zmq,nng")

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)  # through the finally below: processes killed, folder removed

    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # before there is anything to remove
        signal.signal(s, on_signal)
    procs = Processes()
    work = tempfile.mkdtemp(prefix="libs-agreement.")
    try:
        roots = fetch_sources(libs, versions, a.src, work)
        tools = build_tools(libs, roots, work)
        doc = {
            "script": "scripts/libs-agreement.py",
            "when": time.strftime("%Y-%m-%d %H:%M:%S %z"),
            "versions": {LIBRARY[l]: versions[l] for l in libs},
            "sources": {l: {"root": os.path.abspath(roots[l]) if a.src else TOOLS[l][0],
                            "tag": TOOLS[l][1].format(versions[l])} for l in libs},
            "linked": {l: linked_library(next(iter(tools[l].values()))[0]) for l in libs},
            "ipclab": binary,
            "endpoint": a.endpoint,
            "cpus": cpus,
            "rounds": a.rounds,
            "seconds": a.seconds,
            "load": [os.getloadavg()[0], None],
            "settings": {l: {p: ipclab_args(l, p)[1::2] for p in patterns} for l in libs},
            "units": UNITS,
            "cells": [],
            "not_run": [],
        }
        addresses = Address(a.endpoint, work)
        for lib in libs:
            for pattern in patterns:
                for placement in placements:
                    for size_text in sizes:
                        size = SIZES[size_text]
                        why = not_run(lib, pattern, size_text, placement)
                        if why:
                            doc["not_run"].append({"cell": f"{lib} {pattern} {size_text} {placement}", "why": why})
                            continue
                        pin = cpus if placement == "cross" else [cpus[0], cpus[0]]
                        cell = {"library": lib, "pattern": pattern, "size": size_text, "placement": placement,
                                "cpus": pin, "tool": [], "ipclab": [], "counts": [], "ipclab_name": None}
                        try:
                            for _ in range(a.rounds):  # alternately: ipclab, then the tool for as long
                                fig, rate, name, libraries = ipclab_run(procs, binary, lib, pattern, size_text,
                                                                        placement, a.endpoint, cpus, a.seconds, work)
                                cell["ipclab"].append(fig)
                                cell["ipclab_name"] = name
                                key = LIBRARY[lib]
                                if libraries.get(key) and libraries[key] != versions[lib]:
                                    raise RuntimeError(f"ipclab links {key} {libraries[key]}, the tools "
                                                       f"{versions[lib]}: rebuild ipclab here")
                                count = max(MIN_COUNT[pattern], int(rate * a.seconds))
                                cell["counts"].append(count)
                                if lib == "iceoryx":
                                    cell["tool"].append(iceperf_run(procs, tools, size, pin, count, namespace))
                                else:
                                    cell["tool"].append(tool_run(procs, tools, lib, pattern, size, pin, addresses,
                                                                 count))
                        except RuntimeError as e:
                            if not a.keep_going:
                                raise
                            cell["error"] = str(e)
                        cell["tool_median"] = statistics.median(cell["tool"]) if cell["tool"] else None
                        cell["ipclab_median"] = statistics.median(cell["ipclab"]) if cell["ipclab"] else None
                        cell["ratio"] = paired_ratio(cell)
                        doc["cells"].append(cell)
                        print(f"# {lib} {pattern} {size_text} {placement}: tool {cell['tool']}, "
                              f"ipclab {cell['ipclab']}", file=sys.stderr, flush=True)
        doc["load"][1] = os.getloadavg()[0]
        if a.json:
            with open(a.json, "w") as f:
                json.dump(doc, f, indent=1, ensure_ascii=False)
                f.write("\n")
        print(table(doc, a.markdown))
        return 0
    except RuntimeError as e:
        print(f"libs-agreement: {e}", file=sys.stderr)
        return 1
    finally:
        procs.kill_all()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
