"""Runs inside a guest booted by tests/guest/guest.py: reads the guest's own sysfs, runs ipclab's
steps for its shape, and leaves every answer in OUT (the read-write 9p folder) for the host's
tests to judge. It asserts nothing itself: what it finds and what ipclab said are compared on the
host, where a failure can say both.

    inside.py IPCLAB OUT SHAPE

OUT/<step>.json|.out|.err|.rc per step; OUT/sysfs.json; OUT/steps.json (each step's argv and
seconds) written last, so that its absence says the guest stopped part way."""
import glob
import json
import os
import subprocess
import sys
import time

IPCLAB, OUT, SHAPE = sys.argv[1:4]
# Timing inside a TCG guest means nothing: the shortest windows that still run every point.
SHORT = ["--duration", "0.05", "--warmup", "0", "--repetitions", "1"]
# For steps whose every point must complete operations: under TCG a 0.05 s window may hold none
# (echo's 64 connections, in guest A; a pipe round trip in the files step, in guest B).
COMPLETES = ["--duration", "0.3", "--warmup", "0", "--repetitions", "1"]
steps = []


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def cpulist(text):
    cpus = []
    for part in (text or "").split(","):
        if "-" in part:
            a, b = part.split("-")
            cpus += range(int(a), int(b) + 1)
        elif part:
            cpus.append(int(part))
    return cpus


def sysfs():
    """The guest's shape as its kernel states it, read here independently of ipclab."""
    cpus = {}
    for d in glob.glob("/sys/devices/system/cpu/cpu[0-9]*"):
        c = int(d.rsplit("cpu", 1)[1])
        t = d + "/topology/"
        llc = None
        for idx in sorted(glob.glob(d + "/cache/index*")):
            if read(idx + "/type") in ("Unified", "Data"):
                level = int(read(idx + "/level", "0"))
                if llc is None or level >= llc[0]:
                    llc = (level, cpulist(read(idx + "/shared_cpu_list")))
        cpus[c] = {"package": int(read(t + "physical_package_id")), "die": int(read(t + "die_id", "0")),
                   "core": int(read(t + "core_id")), "siblings": cpulist(read(t + "thread_siblings_list")),
                   "llc": llc[1] if llc else [c], "node": None}
    for n in glob.glob("/sys/devices/system/node/node[0-9]*"):
        node = int(n.rsplit("node", 1)[1])
        for c in cpulist(read(n + "/cpulist")):
            cpus[c]["node"] = node
    mounts = {}
    for line in open("/proc/mounts"):
        f = line.split()
        mounts[f[1]] = f[2]
    return {"cpus": {str(c): v for c, v in sorted(cpus.items())}, "mounts": mounts,
            "nproc": os.cpu_count(), "kernel": os.uname().release}


def step(name, args, *, json_to=None, stdout_json=False, timeout=600):
    """One ipclab command; its stdout, stderr and exit status in OUT/name.*."""
    argv = [IPCLAB, *args]
    if json_to is not None:
        argv += ["--json", json_to]
    start = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                           env=dict(os.environ, TMPDIR="/tmp", XDG_STATE_HOME="/tmp/ipclab-guest-state"))
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out, err = "timeout", e.stdout or "", (e.stderr or "") + f"\n(timed out after {timeout} s)"
        out = out.decode() if isinstance(out, bytes) else out
        err = err.decode() if isinstance(err, bytes) else err
    steps.append({"name": name, "argv": argv, "s": round(time.monotonic() - start, 1), "rc": rc})
    with open(f"{OUT}/{name}.out", "w") as f:
        f.write(out)
    with open(f"{OUT}/{name}.err", "w") as f:
        f.write(err)
    with open(f"{OUT}/{name}.rc", "w") as f:
        f.write(str(rc))


def classes(name, *mechanisms_and_params):
    step(name, ["run", *mechanisms_and_params, "-p", "placement=smt,llc,cross_llc,cross_numa", *SHORT],
         json_to=f"{OUT}/{name}.json")


def plans():
    """The quick preset's grids as planned for this many CPUs."""
    for name, args in GRIDS.items():
        step("plan_" + name, ["run", *args, "--preset", "quick", "--plan"])


def grids():
    """Every point of those grids, run, its integrity checked by the host."""
    for name, args in GRIDS.items():
        step("grid_" + name, ["run", *args, "--preset", "quick", *COMPLETES, "--budget", "none"],
             json_to=f"{OUT}/grid_{name}.json")


# The scaling grids the presets derive from the CPU count, one wait each: the points that scale.
GRIDS = {
    "pingpong": ["pingpong/thread", "-p", "wait=adaptive_futex", "-p", "round_trips=2000"],
    "mpmc": ["messaging/shm_mpmc", "-p", "pattern=throughput"],
    "servers": ["servers/epoll_reuseport", "-p", "pattern=closed", "-p", "concurrency=16"],
    "echo": ["echo/epoll", "-p", "connections=64"],
}

facts = sysfs()
with open(f"{OUT}/sysfs.json", "w") as f:
    json.dump(facts, f)
step("topo", ["topo", "--json", "--no-measure"])
step("env", ["env"])

if SHAPE in ("A", "B"):
    classes("classes", "messaging/shm_spsc", "pingpong/thread", "-p", "pattern=roundtrip", "-p", "size=64",
            "-p", "wait=spin", "-p", "round_trips=2000")
    step("matrix", ["run", "messaging/shm_spsc", "-p", "pattern=roundtrip", "-p", "size=64", "-p", "wait=spin",
                    "--cpu-matrix", "class", *SHORT], json_to=f"{OUT}/matrix.json")
    # Where an antagonist lands, class by class, beside sides on the first CPU: the idle stand-in, so
    # that only the placement is at stake (stress-ng's start under TCG is not).
    for where in ("smt", "llc", "cross_numa", "others"):
        step("antagonist_" + where, ["run", "messaging/pipe", "-p", "pattern=roundtrip", "-p", "placement=same",
                                     "--cpus", str(min(os.sched_getaffinity(0))), "--antagonist", "none@" + where,
                                     "--unpaired", *SHORT], json_to=f"{OUT}/antagonist_{where}.json")
    plans()
    grids()
    # Results on tmpfs as on the 9p folder: the same run, whole in both.
    tmpfs = "/tmp/ipclab-guest-tmpfs"
    os.makedirs(tmpfs, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "none", tmpfs], check=True)
    for where, folder in (("tmpfs", tmpfs + "/out"), ("9p", OUT + "/out_9p")):
        step("files_" + where, ["run", "messaging/pipe", "messaging/shm_spsc", "-p", "size=64", *COMPLETES,
                                "--out", folder])
    for name in ("results.json", "results.csv", "results.md"):
        data = read(f"{tmpfs}/out/{name}", "")
        with open(f"{OUT}/files_tmpfs.{name}", "w") as f:
            f.write(data)
    subprocess.run(["umount", tmpfs], check=True)
    # The adaptive waits on a machine whose vCPUs are descheduled at every turn (8 emulated vCPUs
    # on the host's few): they must complete, spinning no longer than their budget.
    step("waits", ["run", "pingpong/thread", "-p", "wait=adaptive,adaptive_futex", "-p", "pairs=4",
                   "-p", "placement=cross", "-p", "round_trips=2000", *SHORT], json_to=f"{OUT}/waits.json")
    step("waits_shm", ["run", "messaging/shm_spsc", "-p", "pattern=roundtrip", "-p", "wait=adaptive",
                       "-p", "placement=cross", *SHORT], json_to=f"{OUT}/waits_shm.json")

if SHAPE == "C":
    plans()
    # The quick preset under its own budget, and under one too small for its points at their floors.
    step("dry_run", ["run", "--preset", "quick", "--dry-run"])
    step("dry_run_small", ["run", "--preset", "quick", "--budget", "1m", "--dry-run"])
    # Sides on CPUs past 64: each records the CPU it ran on.
    last = os.cpu_count() - 1
    step("high_cpus", ["run", "messaging/shm_spsc", "-p", "pattern=roundtrip", "-p", "placement=cross",
                       "--cpus", f"{last - 1},{last}", *SHORT], json_to=f"{OUT}/high_cpus.json")
    step("matrix_class_plan", ["run", "messaging/shm_spsc", "-p", "pattern=roundtrip", "--cpu-matrix", "class",
                               "--plan"])
    step("matrix_every", ["run", "messaging/shm_spsc", "--cpu-matrix", "every", "--plan"])
    step("topo_measured", ["topo", "--json"])

# Where shared memory lives (-p memory=), each suite's shared-memory mechanism. On a shape of several
# nodes: every policy, the writer on node 0's first CPU and the reader on node 1's (placement=cross:
# only that pair is measured), node:N the last node (on C, neither side's). On one node: a policy
# that chooses between nodes is refused, and first_touch and node:0 run.
MEMORY = ["messaging/shm_spsc", "messaging/eventfd", "pingpong/thread", "bulk/shm_bulk", "bulk/memfd",
          "-p", "pattern=roundtrip",
          "-p", "size=4K", "-p", "mode=processes", "-p", "handoff=ring", "-p", "round_trips=2000"]
node_cpus = {}
for cpu, c in facts["cpus"].items():
    node_cpus.setdefault(c["node"], []).append(int(cpu))
nodes = sorted(node_cpus)
if len(nodes) > 1:
    step("memory", ["run", *MEMORY, "-p", "placement=cross", "--cpus",
                    f"{min(node_cpus[nodes[0]])},{min(node_cpus[nodes[1]])}",
                    "-p", f"memory=writer,reader,interleave,node:{nodes[-1]}", *SHORT], json_to=f"{OUT}/memory.json")
else:
    step("memory_one_node", ["run", "messaging/shm_spsc", "-p", "memory=writer", *SHORT])
    step("memory", ["run", *MEMORY, "-p", "placement=same", "-p", "memory=first_touch,node:0", *SHORT],
         json_to=f"{OUT}/memory.json")

with open(f"{OUT}/steps.json", "w") as f:
    json.dump(steps, f)
