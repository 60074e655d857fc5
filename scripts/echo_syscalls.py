#!/usr/bin/env python3
"""Syscalls and context switches per echo of an echo server, counted by `perf stat` on the server
process only (software tracepoints, no sampling) while `ipclab run` measures it; with --profile,
where its CPU per echo goes instead: `perf record` samples of its CPU clock (a software event, so
no hardware counters needed), each sample's function put in one of a few parts (CATEGORIES).

perf attaches to the forked server for a window inside the measured phase; per-echo figures divide
its counts by echoes/s (the run's record) x the window. Needs perf and tracefs (root).

usage: scripts/echo_syscalls.py path/to/ipclab echo/uring [-p loop=raw] [-p connections=16]
           [--duration 4] [--window 2] [--cpus 0,1] [--profile]
"""
import argparse
import collections
import json
import os
import re
import subprocess
import tempfile
import time

EVENTS = ["raw_syscalls:sys_enter", "syscalls:sys_enter_io_uring_enter", "syscalls:sys_enter_epoll_wait",
          "syscalls:sys_enter_recvfrom", "syscalls:sys_enter_sendto", "syscalls:sys_enter_read",
          "syscalls:sys_enter_write", "syscalls:sys_enter_epoll_ctl", "context-switches", "task-clock"]


# The parts of a server's CPU per echo, by the kernel function a sample fell in (first matching
# prefix wins); the server's own code is its user-space samples. Over loopback the sender's CPU
# also runs the receiver's TCP input (softirq on the same CPU), so the stack's share is large and
# the same for every server: only the event loop's part differs between them.
CATEGORIES = [
    ("io_uring", ("io_", "__io_", "__do_sys_io_uring")),
    ("syscalls, epoll, file lookup", ("do_syscall", "entry_SYSCALL", "syscall_", "x64_sys", "__x64_sys", "__sys_",
                                      "ep_", "do_epoll", "__fget", "fget", "fput", "__fput", "sock_recvmsg",
                                      "sock_sendmsg", "__sock_sendmsg", "security_socket", "sock_poll",
                                      "import_ubuf", "move_addr_to_user", "__put_user", "srso_", "__x86_")),
    ("scheduler, wake-ups", ("schedule", "__schedule", "try_to_wake", "ttwu", "enqueue_task", "dequeue_task",
                             "pick_", "update_curr", "select_task", "psi_", "finish_task", "__wake_up",
                             "autoremove_wake", "default_wake", "context_switch", "sched")),
    ("TCP/IP stack (both ends over loopback)", ("tcp", "__tcp", "inet", "__inet", "ip", "__ip", "skb", "__skb",
                                                "sk_", "__sk", "sock_", "dev_", "__dev", "net", "__net", "napi",
                                                "bbr", "process_backlog", "lock_sock", "release_sock",
                                                "__release_sock", "enqueue_to_backlog", "loopback", "validate_xmit",
                                                "raw_local_deliver", "raw_v4", "security_sock", "bpf_skops",
                                                "do_softirq", "handle_softirqs", "__local_bh", "csum", "dst_")),
    ("memory: slab, copies, checks", ("kmem_cache", "kmalloc", "__kmalloc", "kfree", "__slab", "___slab",
                                      "slab_", "__free", "simple_copy", "__check_object", "_copy", "copy_",
                                      "__virt_addr_valid", "is_vmalloc", "__memcpy", "memcpy", "memset")),
    ("locks, timers, clocks", ("_raw_spin", "__raw_callee", "__pv_queued", "queued_spin", "read_tsc", "ktime",
                               "__mod_timer", "mod_timer", "__usecs_to", "rcu", "__rcu", "rb_", "_find_")),
]


def part_of(sym, kernel):
    if not kernel:
        return "the server's own code (user space)"
    for name, prefixes in CATEGORIES:
        if sym.startswith(prefixes):
            return name
    return "other kernel"


def print_profile(samples, rec):
    """Prints the server's CPU per echo by part, from perf record's `samples` of its CPU clock."""
    rep = subprocess.run(["perf", "report", "-i", samples, "--stdio", "--no-children", "--sort", "sym", "-g", "none"],
                         capture_output=True, text=True, check=True).stdout
    parts, top = collections.Counter(), collections.defaultdict(list)
    for line in rep.splitlines():
        m = re.match(r"\s+([\d.]+)%\s+\[(.)\]\s+(\S+)", line)
        if m:
            part = part_of(m.group(3), m.group(2) == "k")
            parts[part] += float(m.group(1))
            top[part].append(m.group(3))
    per_echo = rec["extra"]["server_cpu_per_echo_ns"]
    for part, share in parts.most_common():
        print(f"  {part:<42} {share:5.1f}%  {share * per_echo / 100:6.0f} ns per echo  ({', '.join(top[part][:3])})")


def print_header(rec):
    print(f"{rec['name']}: {rec['rates']['echoes_per_s']:,.0f} echoes/s, server CPU/echo "
          f"{rec['extra']['server_cpu_per_echo_ns'] / 1e3:.2f} us (record), load {open('/proc/loadavg').read().split()[:3]}")


def launch(ipclab, benchmark, params, duration, cpus, out):
    """Starts `ipclab run BENCHMARK` (0.5 s warm-up, one repetition, --json OUT)."""
    cmd = [ipclab, "run", benchmark, "--duration", str(duration), "--warmup", "0.5", "--repetitions", "1",
           "--cpus", cpus, "--json", out]
    for p in params:
        cmd += ["-p", p]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL)


def server_of(run):
    """The pid of the run's server process, looked up when perf attaches: a child forked before it
    (a probe of the kernel's features) may have come and gone."""
    for _ in range(500):
        kids = subprocess.run(["pgrep", "-P", str(run.pid)], capture_output=True, text=True).stdout.split()
        if kids:
            return sorted(kids, key=int)[0]
        time.sleep(0.01)
    run.kill()
    raise SystemExit("the server process never appeared")


def finish(run, out):
    """Waits for the run and returns its (first) measured record."""
    if run.wait() != 0:
        raise SystemExit("ipclab run failed")
    return next(b for b in json.load(open(out))["benchmarks"] if b.get("run_type") == "iteration")


def arguments(doc, duration, window):
    """The command line: ipclab BENCHMARK [-p ...] [--duration] [--window] [--cpus]."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("ipclab")
    ap.add_argument("benchmark", help="e.g. echo/uring")
    ap.add_argument("-p", dest="params", action="append", default=[], help="parameter, as for ipclab run")
    ap.add_argument("--duration", type=float, default=duration)
    ap.add_argument("--window", type=float, default=window, help="seconds perf watches, inside the measured phase")
    ap.add_argument("--cpus", default="0,1")
    ap.add_argument("--profile", action="store_true", help="where the server's CPU per echo goes (perf record)")
    a = ap.parse_args()
    if a.window + 1.0 > a.duration:
        ap.error("--window must be at least 1 s shorter than --duration")
    return a


def main():
    a = arguments(__doc__, 4.0, 2.0)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        run = launch(a.ipclab, a.benchmark, a.params, a.duration, a.cpus, out)
        time.sleep(0.5 + (a.duration - a.window) / 2)  # warm-up, then the middle of the measured phase
        server = server_of(run)
        if a.profile:
            samples = os.path.join(tmp, "perf.data")
            perf = subprocess.run(["perf", "record", "-e", "cpu-clock", "-F", "4000", "-p", server, "-o",
                                   samples, "--", "sleep", str(a.window)], capture_output=True, text=True)
            rec = finish(run, out)
            if perf.returncode:
                raise SystemExit(f"perf record failed: {perf.stderr.strip()}")
            print_header(rec)
            print_profile(samples, rec)
            return
        perf = subprocess.run(["perf", "stat", "-x", ",", "-e", ",".join(EVENTS), "-p", server, "--",
                               "sleep", str(a.window)], capture_output=True, text=True)
        rec = finish(run, out)
    counts = {}
    for line in perf.stderr.splitlines():
        f = line.split(",")
        if len(f) > 2 and f[2] in EVENTS:
            try:
                counts[f[2]] = float(f[0])
            except ValueError:
                counts[f[2]] = float("nan")  # <not supported> / <not counted>
    echoes = rec["rates"]["echoes_per_s"] * a.window
    print_header(rec)
    for ev in EVENTS:
        if ev in counts:
            v = counts[ev] * (1e6 if ev == "task-clock" else 1)  # task-clock is in ms
            unit = " ns" if ev == "task-clock" else ""
            print(f"  {ev.split(':')[-1]:<24} {v / echoes:8.3f}{unit} per echo")


if __name__ == "__main__":
    main()
