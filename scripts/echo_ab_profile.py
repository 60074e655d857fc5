#!/usr/bin/env python3
"""Where each echo server's CPU goes, both profiled in the same `echo/ab` run.

`echo/ab` loads two servers in alternating slices of one run; this script attaches one
`perf record -e cpu-clock -g` to each server for the same window, so both profiles see the same
placements of the vCPUs, and turns each profile's shares into microseconds per echo with that
server's CPU per echo from the run's record. Rows: the kernel's TCP send (and the part of it that is
the peer's receive path, which loopback runs in the sender), the TCP receive, the wait, and the
self time of the functions only one of the two servers runs (its own IO machinery: syscalls and
epoll, or io_uring). The profiler itself adds to both servers' CPU. Needs perf (root).

usage: scripts/echo_ab_profile.py path/to/ipclab [-p connections=16] [-p a=epoll] [-p b=uring]
           [--duration 10] [--window 7] [--cpus 0,1]
"""
import os
import re
import subprocess
import tempfile
import time

from echo_syscalls import arguments, finish, launch

# (row, kernel functions whose inclusive share it is: the first one a profile has counts)
ROWS = [
    ("the send (tcp_sendmsg)", ["tcp_sendmsg"]),
    ("  of which the peer's receive path (do_softirq)", ["do_softirq", "do_softirq.part.0"]),
    ("the receive (tcp_recvmsg)", ["tcp_recvmsg"]),
    ("the wait", ["do_epoll_wait", "io_cqring_wait"]),
]
LINE = re.compile(r"^\s+([0-9.]+)%\s+(?:([0-9.]+)%\s+)?\[[k.]\]\s+(\S+)")


def shares(data, children):
    """{symbol: percent of the profile's samples}: inclusive (children) or self."""
    mode = "--children" if children else "--no-children"
    out = subprocess.run(["perf", "report", "-i", data, "--stdio", mode, "-g", "none", "--sort", "sym"],
                         capture_output=True, text=True).stdout
    got = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if m and (m.group(2) is not None) == children:
            got.setdefault(m.group(3), float(m.group(1)))
    return got


def main():
    ap, a = arguments(__doc__, 10.0, 7.0, benchmark=False)
    if any(p.startswith("connections=") and "," in p for p in a.params):
        ap.error("one value of connections per run")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        run, servers = launch(a.ipclab, "echo/ab", a.params, a.duration, a.cpus, out, 2)
        time.sleep(0.5 + (a.duration - a.window) / 2)
        data = [os.path.join(tmp, f"{side}.data") for side in "ab"]
        perfs = [subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-g", "-p", pid, "-o", d, "--",
                                   "sleep", str(a.window)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for pid, d in zip(servers, data)]
        if any(p.wait() != 0 for p in perfs):
            run.kill()
            raise SystemExit("perf record failed (perf installed? run as root)")
        rec = finish(run, out)
        inclusive = [shares(d, True) for d in data]
        own = [shares(d, False) for d in data]
    x = rec["extra"]
    sides = [x["a"], x["b"]]
    us = [s["server_cpu_per_echo_ns"] / 1e3 for s in sides]
    print(f"{rec['name']}: CPU per echo b/a {x['cpu_per_echo_ratio_b_over_a']['median']:.3f} (pair median), "
          f"load {' '.join(open('/proc/loadavg').read().split()[:3])}")
    print(f"{'us per echo (share of the server)':<48} {sides[0]['server']:>16} {sides[1]['server']:>16}")
    print(f"{'server CPU per echo':<48} {us[0]:16.2f} {us[1]:16.2f}")
    for row, names in ROWS:
        cells = []
        for side in range(2):
            pct = next((inclusive[side][n] for n in names if n in inclusive[side]), 0.0)
            cells.append(f"{pct * us[side] / 100:7.2f} ({pct:5.1f}%)")
        print(f"{row:<48} {cells[0]:>16} {cells[1]:>16}")
    only = [sum(v for k, v in own[s].items() if k not in own[1 - s]) for s in range(2)]
    cells = [f"{only[s] * us[s] / 100:7.2f} ({only[s]:5.1f}%)" for s in range(2)]
    print(f"{'self time of functions only this server runs':<48} {cells[0]:>16} {cells[1]:>16}")


if __name__ == "__main__":
    main()
