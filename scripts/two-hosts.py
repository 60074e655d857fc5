#!/usr/bin/env python3
"""Runs `ipclab run ... --remote` between two hosts made on this machine: two network namespaces
joined by a veth pair, Debian's sshd in the far one (generated keys, a checked host key), and
optionally a delay each way (`tc netem` on the pair, or the delay wire where the kernel has no
netem). The rig is report/ipclab_report/netpair.py, the one `ipclab agree remote` and tests/remote
use; all of it is taken down on every way out. Needs root, iproute2 and openssh-server
(scripts/setup.sh installs them). ipclab's output and exit status are passed through.

    scripts/two-hosts.py [--ipclab BIN] [--delay US] -- SELECTION [RUN OPTIONS...]
    e.g. scripts/two-hosts.py -- echo/epoll echo/uring -p connections=16,64 --remote-role client
         scripts/two-hosts.py --delay 200 -- messaging/tcp -p pattern=roundtrip -p size=64
"""

import argparse
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
from ipclab_report import netpair  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], usage=__doc__.split("\n\n")[1].strip())
    ap.add_argument("--ipclab", default="build/release/ipclab", help="the ipclab binary (build/release/ipclab)")
    ap.add_argument("--delay", type=int, default=0, metavar="US", help="microseconds each way (0: none)")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="after --: what `ipclab run` takes")
    a = ap.parse_args()
    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    binary = os.path.abspath(a.ipclab)

    def refuse(why):
        print(f"two-hosts: {why}", file=sys.stderr)
        return 2

    if not args:
        return refuse("name what `ipclab run` runs after --, e.g. -- messaging/tcp -p pattern=roundtrip")
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        return refuse(f"--ipclab {a.ipclab}: no ipclab binary there; build it (make build) or name it")
    if not 0 <= a.delay <= 10_000_000:
        return refuse(f"--delay {a.delay}: give 0 to 10000000 microseconds, e.g. --delay 200")
    if netpair.missing():
        return refuse(netpair.missing())
    with tempfile.TemporaryDirectory(prefix="ipclab-two-hosts.") as work:
        try:
            with netpair.Pair(Path(work) / "pair") as pair:
                return run(pair, binary, a.delay, args)
        except RuntimeError as e:
            print(f"two-hosts: cannot make the two hosts here: {e}", file=sys.stderr)
            return 1


def run(pair, binary, delay, args) -> int:
    pair.check_ssh()
    address = []
    if delay:
        why = pair.ready_delay(delay)
        if why:
            raise RuntimeError(why)
        pair.wire_spin = bool(pair.wire)
        pair.delay(delay)
        address = ["--remote-address", pair.data_ip] if pair.wire else []
        how = f"the delay wire ({pair.wire_note})" if pair.wire else "netem on both ends of the pair"
        print(f"two-hosts: {delay} µs each way by {how}", file=sys.stderr, flush=True)
    print(f"two-hosts: root@{pair.far_ip} over the veth pair {pair.veth_near}-{pair.veth_far}", file=sys.stderr,
          flush=True)
    cmd = pair.in_near(binary, "run", *args, *pair.remote_args(binary), *address)
    global child
    child = subprocess.Popen(cmd, env=pair.near_env())
    rc = child.wait()
    return 128 - rc if rc < 0 else rc


child = None  # ipclab, while it runs


def on_signal(signum, _frame):
    """While ipclab runs, it gets the signal (and removes what it made); the pair comes down once
    it has ended. Before, or after, the signal ends this script through the pair's clean-up."""
    if child is not None and child.poll() is None:
        child.send_signal(signum)
    else:
        raise SystemExit(128 + signum)


if __name__ == "__main__":
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, on_signal)
    sys.exit(main())
