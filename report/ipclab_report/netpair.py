"""Two hosts on one machine, for `ipclab run --remote`: two network namespaces joined by a veth
pair, Debian's OpenSSH server in the far one (its own port, a generated host key, a generated
client key, a generated known_hosts: host keys are checked, not waived), and a delay on the path —
`tc netem` on both ends of the pair, or, in a kernel built without netem, a second link between
the namespaces, delay_wire.c beside this file (two TUN devices and a program that holds each packet
for the delay; built with cc).

One rig for everything that needs it: `ipclab agree remote` (agree/remote.py), the two-hosts tests
(tests/remote) and scripts/two-hosts.py. Everything it creates has a name of its own run
(namespaces, veth pair, devices, files under the folder it is given) and is removed by close() on
every exit path; nothing it did not create is touched. sshd needs /run/sshd (its privilege
separation folder, fixed when OpenSSH is built): a name of the whole machine, which the rig makes
only when it is missing and removes once no rig uses it, under a lock (PrivsepFolder).

Optionally (`skew_s`) sshd, and so the remote side, runs in a time namespace whose CLOCK_MONOTONIC
is that far ahead, as another host's would be (where util-linux's unshare can make one).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
WIRE_SRC = Path(__file__).with_name("delay_wire.c")


def sh(*args, check=True, **kw):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, check=check, **kw)


def missing() -> str | None:
    """Why the pair cannot be had here, one line naming the fix; None when it can."""
    if os.geteuid() != 0:
        return "network namespaces need root: run it as root"
    for tool, pkg in (("ip", "iproute2"), ("tc", "iproute2"), ("ssh", "openssh-client"),
                      ("ssh-keygen", "openssh-client")):
        if not shutil.which(tool):
            return f"{tool} is missing: apt install {pkg} (scripts/setup.sh does)"
    if not os.access(SSHD, os.X_OK):
        return "sshd is missing: apt install openssh-server (scripts/setup.sh does)"
    return None


class PrivsepFolder:
    """/run/sshd for the rigs of every process on this machine. A rig holds a shared flock on the
    folder while its sshd runs. The folder is made, with a mark inside it, only when missing, and
    the rig that finds no other holder as it lets go removes it when the mark says a rig made it
    (a rig killed before it could remove it leaves it to the next one). Each step runs under an
    exclusive flock on /run itself, so that none interleaves with another rig's. A folder that was
    there before any rig (the system's sshd's) has no mark and is never removed."""

    MARK = ".made-by-ipclab-netpair"

    def __init__(self, path="/run/sshd"):
        self.path = path
        self.fd = None

    @contextlib.contextmanager
    def _steps(self):
        fd = os.open(os.path.dirname(self.path), os.O_RDONLY | os.O_DIRECTORY)
        try:
            deadline = time.monotonic() + 30  # a few file operations per holder: never long
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"another process has held a lock on {os.path.dirname(self.path)} "
                                           "for 30 s; try again once it is done") from None
                    time.sleep(0.01)
            yield
        finally:
            os.close(fd)  # and its lock

    def acquire(self):
        with self._steps():
            if not os.path.isdir(self.path):
                os.mkdir(self.path, 0o755)
                os.close(os.open(os.path.join(self.path, self.MARK), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            self.fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY)
            fcntl.flock(self.fd, fcntl.LOCK_SH)

    def release(self):
        if self.fd is None:
            return
        with self._steps():
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # granted only where no rig holds it
                mark = os.path.join(self.path, self.MARK)
                if os.path.exists(mark):
                    os.unlink(mark)
                    os.rmdir(self.path)
            except BlockingIOError:
                pass  # another rig's sshd uses it: the last one out removes it
            finally:
                os.close(self.fd)
                self.fd = None


def why(e: Exception) -> str:
    """One line of what went wrong in a step of the rig."""
    if isinstance(e, subprocess.CalledProcessError):
        return (e.stderr or "").strip() or f"{' '.join(map(str, e.cmd))} exited {e.returncode}"
    return str(e)


class Pair:
    """The two namespaces, the veth pair, sshd in the far one, the keys; and, where netem is
    missing, the delay wire. open() builds it, close() takes every part of it down."""

    def __init__(self, root: Path, skew_s: int = 0):
        tag = f"{os.getpid() % 10000}{random.randrange(36**3):03x}"
        self.root = Path(root)
        self.near, self.far = f"ipclr{tag}n", f"ipclr{tag}f"
        self.veth_near, self.veth_far = f"vr{tag}a", f"vr{tag}b"
        a, b = random.randrange(16, 250), random.randrange(0, 250)
        self.near_ip, self.far_ip = f"10.{a}.{b}.1", f"10.{a}.{b}.2"
        self.port = random.randrange(20000, 60000)
        # The delay wire, where netem is missing: its own /30 beside the veth pair's.
        self.wire = None
        self.wire_spin = False  # the wire polls without sleeping (its cost the same at every delay)
        self.wire_near, self.wire_far = f"wr{tag}a", f"wr{tag}b"
        self.wire_near_ip, self.wire_far_ip = f"10.{a}.{b}.5", f"10.{a}.{b}.6"
        self.wire_note = ""  # the wire's own line ("ready (wake-up margin ...)")
        self.netem = None  # after ready_delay(): "" when a delay can be had, else why not
        self.skew_s, self.skew_ns = skew_s, 0
        self.created = []  # namespaces, in the order created
        self.sshd = None
        self.sshd_log = None
        self.privsep = PrivsepFolder()
        self.remote_tmp = self.root / "remote-tmp"
        self.local_tmp = self.root / "local-tmp"

    def __enter__(self):
        try:
            self.open()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    # -- set-up, each step undone by close() ---------------------------------------------------
    def open(self):
        """Builds the pair and starts sshd; RuntimeError (its reason, one line) when a step fails.
        What was made before the failure is close()'s to take down."""
        try:
            self.root.mkdir(mode=0o700, exist_ok=True)
            self._namespaces()
            cfg = self._keys_and_config()
            self._start_sshd(cfg)
        except (subprocess.CalledProcessError, OSError) as e:
            raise RuntimeError(why(e)) from None

    def _namespaces(self):
        for ns in (self.near, self.far):
            sh("ip", "netns", "add", ns)
            self.created.append(ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "link", "add", self.veth_near, "netns", self.near, "type", "veth", "peer", "name",
           self.veth_far, "netns", self.far)
        for ns, dev, ip in ((self.near, self.veth_near, self.near_ip), (self.far, self.veth_far, self.far_ip)):
            sh("ip", "-n", ns, "addr", "add", f"{ip}/30", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")

    def _keys_and_config(self) -> Path:
        """The server's host key, the client's key, one the server does not accept; sshd_config."""
        keys = self.root / "keys"
        keys.mkdir(mode=0o700)
        for name in ("host", "client", "stranger"):
            sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", keys / name)
        (keys / "authorized_keys").write_text((keys / "client.pub").read_text())
        host_pub = (keys / "host.pub").read_text().split()
        (keys / "known_hosts").write_text(f"[{self.far_ip}]:{self.port} {host_pub[0]} {host_pub[1]}\n")
        self.remote_tmp.mkdir(mode=0o700)
        self.local_tmp.mkdir(mode=0o700)
        cfg = self.root / "sshd_config"
        cfg.write_text(
            f"Port {self.port}\nListenAddress {self.far_ip}\nHostKey {keys / 'host'}\n"
            f"AuthorizedKeysFile {keys / 'authorized_keys'}\nPidFile {self.root / 'sshd.pid'}\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n"
            "PermitRootLogin prohibit-password\nStrictModes no\nPrintMotd no\n"
            f"SetEnv TMPDIR={self.remote_tmp} XDG_STATE_HOME={self.root / 'remote-state'}\n")
        return cfg

    def _start_sshd(self, cfg: Path):
        self.privsep.acquire()
        self.sshd_log = open(self.root / "sshd.log", "w")
        sshd = ["ip", "netns", "exec", self.far, SSHD, "-D", "-e", "-f", str(cfg)]
        skewed = ["unshare", "--time", "--monotonic", str(self.skew_s), "--fork", *sshd]
        if self.skew_s and shutil.which("unshare") and sh(*skewed[:5], "true", check=False).returncode == 0:
            sshd, self.skew_ns = skewed, self.skew_s * 10**9
        self.sshd = subprocess.Popen(sshd, stdout=self.sshd_log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.sshd.poll() is not None:
                raise RuntimeError(f"sshd ended: {(self.root / 'sshd.log').read_text().strip()}")
            if f":{self.port}" in sh("ip", "netns", "exec", self.far, "ss", "-Hltn").stdout:
                return
            time.sleep(0.05)
        raise RuntimeError("sshd did not listen within 10 s")

    def check_ssh(self):
        """RuntimeError when ssh itself cannot get in (an account locked without PAM, say: this
        machine's matter, named in ssh's own words)."""
        opts = [w for o in self.ssh_options()[1::2] for w in o.split()]
        r = sh("ip", "netns", "exec", self.near, "ssh", *opts, "-o", "BatchMode=yes", f"root@{self.far_ip}",
               "true", check=False, timeout=30)
        if r.returncode != 0:
            raise RuntimeError(f"ssh into the far namespace fails here: {r.stderr.strip()}")

    def ready_delay(self, us: int, cpu: int | None = None) -> str:
        """Makes a delay of `us` each way available: netem on the pair, else the delay wire (on
        `cpu`, default this process's last). Returns (and keeps in self.netem) "" when it can be
        had, else why not."""
        try:
            self.delay(us)
            self.delay(0)
            self.netem = ""
        except subprocess.CalledProcessError as e:
            no_netem = f"tc netem is not available in this kernel ({e.stderr.strip()})"
            try:
                self.open_wire(cpu)
                self.netem = ""
            except (subprocess.CalledProcessError, RuntimeError, OSError) as w:
                self.netem = f"{no_netem}, and the delay wire cannot be had ({why(w)})"
        return self.netem

    def open_wire(self, cpu: int | None = None):
        """The delay wire between the namespaces (netem's stand-in): built with cc, started, its
        devices given their addresses. Its devices are its own: they go when it ends."""
        exe = self.root / "delay_wire"
        sh("cc", "-O2", "-o", exe, WIRE_SRC)
        # On a CPU of its own where there are two or more: a round trip's sides run on the first.
        cpus = sorted(os.sched_getaffinity(0))
        cpu = cpus[-1] if cpu is None else cpu
        pin = ["taskset", "-c", str(cpu)] if len(cpus) > 1 and shutil.which("taskset") else []
        self.wire = subprocess.Popen([*pin, exe, self.near, self.wire_near, self.far, self.wire_far, "0"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        ready = self.wire.stdout.readline()
        if not ready.startswith("ready"):
            raise RuntimeError(f"delay_wire: {ready.strip() or 'ended'}")
        self.wire_note = ready.strip()
        for ns, dev, ip in ((self.near, self.wire_near, self.wire_near_ip), (self.far, self.wire_far, self.wire_far_ip)):
            sh("ip", "-n", ns, "addr", "add", f"{ip}/30", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")

    def close(self):
        if self.wire and self.wire.poll() is None:
            self.wire.terminate()
            self.wire.wait()
        if self.sshd and self.sshd.poll() is None:
            # sshd itself: unshare, its parent when the clock is skewed, passes no signal on (and
            # ends once sshd has); while it runs, its sshd runs, whose pid is the one in the file.
            try:
                os.kill(int((self.root / "sshd.pid").read_text()), signal.SIGTERM)
            except (OSError, ValueError):
                self.sshd.terminate()
            try:
                self.sshd.wait(5)
            except subprocess.TimeoutExpired:
                self.sshd.kill()
                self.sshd.wait()
        if self.sshd_log:
            self.sshd_log.close()
        # The far namespace's processes are ours (sshd's sessions): none may outlive it.
        for ns in reversed(self.created):
            for pid in sh("ip", "netns", "pids", ns, check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
            sh("ip", "netns", "del", ns, check=False)  # takes its end of the veth pair with it
        self.created = []
        self.privsep.release()  # after sshd and its sessions have ended

    # -- use -------------------------------------------------------------------------------------
    @property
    def data_ip(self) -> str:
        """Where a delayed data path goes: the wire's far end where there is a wire, else the pair's."""
        return self.wire_far_ip if self.wire else self.far_ip

    def delay(self, us: int):
        """`us` each way on the delayed path (0: none); CalledProcessError where netem is missing
        and there is no wire."""
        if self.wire:
            self.wire.stdin.write(f"{us} spin\n" if self.wire_spin else f"{us}\n")
            self.wire.stdin.flush()
            return
        for ns, dev in ((self.near, self.veth_near), (self.far, self.veth_far)):
            verb = "replace" if us else "del"
            extra = ["netem", "delay", f"{us}us"] if us else []
            sh("tc", "-n", ns, "qdisc", verb, "dev", dev, "root", *extra, check=bool(us))

    def ssh_options(self, key="client", port=None) -> list:
        keys = self.root / "keys"
        return ["--ssh-option", f"-p {port or self.port}", "--ssh-option", f"-i {keys / key}",
                "--ssh-option", "-F /dev/null", "--ssh-option", "-o IdentitiesOnly=yes",
                "--ssh-option", f"-o UserKnownHostsFile={keys / 'known_hosts'}",
                "--ssh-option", "-o StrictHostKeyChecking=yes"]

    def remote_args(self, ipclab: str, key="client", port=None) -> list:
        """What `ipclab run` needs to take the far namespace for its remote host."""
        return ["--remote", f"root@{self.far_ip}", *self.ssh_options(key, port), "--remote-ipclab", ipclab]

    def near_env(self, **extra) -> dict:
        """The environment of an ipclab run from the near namespace: its own temporary and state
        folders under the pair's folder."""
        return dict(os.environ, TMPDIR=str(self.local_tmp), XDG_STATE_HOME=str(self.root / "local-state"), **extra)

    def in_near(self, *argv) -> list:
        return ["ip", "netns", "exec", self.near, *map(str, argv)]

    def in_far(self, *argv) -> list:
        return ["ip", "netns", "exec", self.far, *map(str, argv)]
