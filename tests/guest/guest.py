"""Emulated machines: boot a QEMU guest of a given shape (sockets, dies, cores, threads, NUMA
nodes) on the host's own kernel image and root file system, run one command in it, and stop it,
leaving nothing behind. The guest tests (tests/guest/test_shapes.py) boot each shape once; a person
can boot one by hand:

    python3 tests/guest/guest.py A [--rwdir DIR] -- /usr/bin/nproc

The launcher is virtme-ng (PyPI `virtme-ng`): it boots a kernel with the host's root file system
shared read-only over 9p (writes to /tmp, /etc, … land in a tmpfs overlay), plus one read-write
folder for results, so the guest runs the very binary under test with no disk image, initramfs or
network of our own to build and keep. QEMU itself (Debian's qemu-system-x86) does the emulation,
under TCG: a nested KVM guest hangs on these machines, and TCG's CPU models give any shape. The
CPU model is Nehalem (x86-64-v2): an Intel model, since TCG shows SMT siblings only for one, and
the ISA the bundle build is compiled for (`make bundle`; the release build's -march=native may use
instructions TCG lacks). Timing inside means nothing: dozens of emulated vCPUs share the host's.
"""
import dataclasses
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time


@dataclasses.dataclass(frozen=True)
class Shape:
    name: str
    what: str
    sockets: int
    dies: int
    cores: int  # per die
    threads: int
    nodes: int  # NUMA nodes, each an equal run of consecutive CPUs (a socket's, when nodes = sockets)
    memory_gib: int
    boot_timeout_s: int  # wall time from start to the command's end, on a 2-CPU host under TCG
    # QEMU's TCG: one host thread per vCPU (multi-threaded, the default) or all vCPUs taking turns
    # on one (thread=single). More vCPU threads than host CPUs stall the guest's kernel now and
    # then: a vCPU spins on a lock or waits on an IPI whose holder's thread the host is not running.
    # Multi-threaded, the 72-CPU boot took from 90 s to past 10 minutes (twice in CI), and an 8-CPU
    # guest once did not finish in 7 minutes; taking turns, a spinning vCPU's PAUSE hands the turn
    # on (QEMU ends its turn there), and the 72-CPU boot takes ~30 s, every time. Every wait of
    # ipclab's that spins pauses, so its work goes on too.
    accel: str = "tcg,thread=single"

    @property
    def cpus(self) -> int:
        return self.sockets * self.dies * self.cores * self.threads


SHAPES = {
    "A": Shape("A", "2 sockets x 2 cores x 2 threads, 2 NUMA nodes", 2, 1, 2, 2, 2, 4, 420),
    # An AMD part's two CCDs: one socket, one node, two last-level caches. QEMU 7.2's x86 has no
    # clusters, but its dies do it: CPUID leaf 4 shares the L3 among a die's cores, so each die
    # is one LLC (Linux reads it as such); an AMD CPU model would lose the SMT (no topoext
    # under TCG), which this shape does not need.
    "B": Shape("B", "1 socket, 2 dies x 4 cores (two last-level caches), 1 NUMA node", 1, 2, 4, 1, 1, 2, 420),
    # Large: past 64 CPUs, where `topo` samples its matrix. Its boot takes ~30 s of TCG, its vCPUs taking turns.
    "C": Shape("C", "4 sockets x 9 cores x 2 threads (72 CPUs), 4 NUMA nodes", 4, 1, 9, 2, 4, 4, 480),
}


BOOTED = "ipclab-guest: booted"


class GuestError(Exception):
    """The guest did not boot or did not finish: one line, with the reason."""


def kernel_image():
    """The newest /boot/vmlinuz-* with its modules installed, or None."""
    found = []
    for path in glob.glob("/boot/vmlinuz-*"):
        release = path[len("/boot/vmlinuz-"):]
        if os.access(path, os.R_OK) and os.path.isdir(f"/lib/modules/{release}"):
            found.append((tuple(int(x) for x in re.findall(r"\d+", release)[:3]), path))
    return max(found)[1] if found else None


def vng():
    """virtme-ng's launcher: on PATH, or beside this Python (pip's scripts folder, where a pyenv
    shim may not have been made for it yet)."""
    beside = os.path.join(os.path.dirname(sys.executable), "vng")
    return shutil.which("vng") or (beside if os.access(beside, os.X_OK) else None)


def missing():
    """Why guests cannot boot on this host (one line: what to install), or None."""
    if not shutil.which("qemu-system-x86_64"):
        return "no qemu-system-x86_64: install Debian's qemu-system-x86 (scripts/setup.sh does)"
    if not vng():
        return "no vng: install virtme-ng from PyPI (scripts/setup.sh does)"
    if not shutil.which("busybox"):
        return "no busybox: install Debian's busybox-static (scripts/setup.sh does)"
    if kernel_image() is None:
        return ("no kernel image with its modules in /boot: install Debian's linux-image-amd64 "
                "(scripts/setup.sh does)")
    return None


def command(shape: Shape, rwdir: str, script: list, kernel: str):
    """The vng command line booting `shape` and running `script` (argv) in it."""
    numa = []
    per = shape.cpus // shape.nodes
    if shape.nodes > 1:
        mem = shape.memory_gib // shape.nodes
        for n in range(shape.nodes):
            numa += ["--numa", f"{mem}G,cpus={n * per}-{(n + 1) * per - 1}"]
    smp = f"{shape.cpus},sockets={shape.sockets},dies={shape.dies},cores={shape.cores},threads={shape.threads}"
    # no_timer_check: under TCG on a busy host the kernel's early check that the timer ticks may
    # fail and panic the boot ("IO-APIC + timer doesn't work!"). The kernel's console is not shown
    # (--verbose would, at some 20 s a boot of emulated serial port): a boot that fails says so.
    return [vng(), "--run", kernel, "--append", "no_timer_check", "--disable-kvm", "--force-9p",
            "--cpus", str(shape.cpus),
            "--memory", f"{shape.memory_gib}G", *numa, "--rwdir", rwdir,
            f"--qemu-opts=-accel {shape.accel} -cpu Nehalem -smp {smp}",
            "--exec", " ".join(_quote(a) for a in script)]


def _quote(arg: str) -> str:
    if re.fullmatch(r"[\w@%+=:,./-]+", arg):
        return arg
    return "'" + arg.replace("'", "'\\''") + "'"


def _ours(marker: str):
    """The processes whose command line names `marker` (this boot's private folder)."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    pids.append(int(d))
        except OSError:
            pass
    return pids


def boot(shape: Shape, rwdir: str, script: list, *, kernel=None, timeout_s=None, extra_qemu=""):
    """Boot `shape`, run `script` in it with `rwdir` shared read-write at the same path, and stop it.
    Returns (exit status of the script, seconds of wall time, the guest's console output). Raises
    GuestError, with one line, when the guest does not boot or does not finish in time; either way
    no process of it is left, and nothing outside `rwdir` and its own private folder (removed here)."""
    why = missing()
    if why:
        raise GuestError(why)
    kernel = kernel or kernel_image()
    if not os.access(kernel, os.R_OK):
        raise GuestError(f"no kernel image at {kernel}; give a readable /boot/vmlinuz-* of an installed kernel")
    timeout_s = timeout_s or shape.boot_timeout_s
    private = tempfile.mkdtemp(prefix="ipclab-guest-")
    argv = command(shape, rwdir, script, kernel)
    if extra_qemu:
        i = next(i for i, a in enumerate(argv) if a.startswith("--qemu-opts="))
        argv[i] += " " + extra_qemu
    # vng and QEMU keep their own files (the exit-status channel) in TMPDIR: the private folder,
    # whose name is thus on QEMU's command line: every process of this boot is found by it, and
    # none of another. The guest says it booted before it runs the script.
    argv[-1] = f"echo {BOOTED}; exec {argv[-1]}"
    env = dict(os.environ, TMPDIR=private)
    start = time.monotonic()
    log = os.path.join(private, "console")
    try:
        with open(log, "w+") as out:
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                 env=env, start_new_session=True, cwd=private)
            try:
                rc = p.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                _stop(p, private)
                raise GuestError(f"guest {shape.name} ({shape.what}) did not finish within {timeout_s} s; "
                                 f"its console's last line: {_last_line(out)}")
            finally:
                _stop(p, private)
            out.seek(0)
            console = out.read()
        wall = time.monotonic() - start
        if BOOTED not in console:
            raise GuestError(f"guest {shape.name} ({shape.what}) did not boot: {_reason(console)}")
        return rc, wall, console
    finally:
        shutil.rmtree(private, ignore_errors=True)


def _stop(p, private):
    """The boot's whole process group, then anything else naming its private folder, killed and reaped."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            pass
        for pid in _ours(private):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and (p.poll() is None or _ours(private)):
            time.sleep(0.05)
        if p.poll() is not None and not _ours(private):
            return
    p.wait()


def _last_line(f) -> str:
    f.seek(0)
    lines = [line.strip() for line in f.read().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(nothing)"


def _reason(console: str) -> str:
    lines = [line.strip() for line in console.splitlines() if line.strip()]
    for line in lines:
        if "Kernel panic" in line:
            return line[:300]
    for line in lines:
        if "qemu-system" in line or "error" in line.lower():
            return line[:300]
    return lines[-1][:300] if lines else ("QEMU stopped before the guest printed anything (a kernel panic: "
                                          "vng --verbose shows the kernel's console)")


def main(argv):
    rwdir = None
    if len(argv) > 2 and argv[1] == "--rwdir":
        rwdir = argv[2]
        del argv[1:3]
    if len(argv) < 3 or argv[0] not in SHAPES or argv[1] != "--" or (rwdir and not os.path.isdir(rwdir)):
        print("usage: guest.py A|B|C [--rwdir DIR] -- COMMAND [ARG...]  (DIR: an existing folder the guest "
              "writes to, at the same path; shapes: " + "; ".join(f"{k}: {s.what}" for k, s in SHAPES.items())
              + ")", file=sys.stderr)
        return 2
    rw = rwdir or tempfile.mkdtemp(prefix="ipclab-guest-rw-")
    try:
        rc, wall, console = boot(SHAPES[argv[0]], os.path.abspath(rw), argv[2:])
    except GuestError as e:
        print(f"guest: {e}", file=sys.stderr)
        return 1
    finally:
        if not rwdir:
            shutil.rmtree(rw, ignore_errors=True)
    sys.stdout.write(console)
    print(f"guest: exit {rc} after {wall:.0f} s", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
