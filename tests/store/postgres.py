"""A private PostgreSQL server for tests: Debian's server binaries (the `postgresql` package,
scripts/setup.sh), a fresh cluster in a temporary folder, reachable only on a Unix socket in that
folder, stopped and removed when the test ends, whatever way it ends. Never the machine's service.

    from postgres import private_postgres          # tests/store on sys.path
    with private_postgres(tmp_path) as pg:
        psycopg.connect(pg.url)                      # or libpq: the same URL
        print(pg.version)                            # "postgres (PostgreSQL) 15.x"

As root the server runs as the unprivileged `postgres` user (PostgreSQL refuses root), started
with setpriv, which execs it: the postmaster is this process's child, waited for here, and gets
SIGQUIT (an immediate shutdown) should this process die first.

Where its folder goes: inside `tmp_dir` when the server's user can reach it and the socket's
path fits the 107 bytes a Unix socket name may have; otherwise (pytest's folders are 0700 under
root's /tmp/pytest-of-root, and long test names make long paths) a short folder of its own under
the system's temporary folder. Either way the folder is the server's alone and removed on exit.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

SERVER_USER = "postgres"        # Debian's; the server's user when this runs as root
SOCKET_NAME_MAX = 107           # sun_path, less its terminating NUL
START_SECONDS = 60


def server_bin():
    """The newest /usr/lib/postgresql/<version>/bin holding initdb, pg_ctl and postgres; None if none."""
    found = [d for d in glob.glob("/usr/lib/postgresql/*/bin")
             if all(os.access(os.path.join(d, b), os.X_OK) for b in ("initdb", "pg_ctl", "postgres", "createdb"))]
    number = lambda d: [int(x) for x in re.findall(r"\d+", d.split("/")[-2])]  # noqa: E731
    return max(found, key=number) if found else None


def free_port() -> int:
    """A TCP port nobody listens on. The server listens on no TCP port at all: the number only names
    its socket (.s.PGSQL.<port>), and one that is not 5432 means a URL that lost its host= fails
    rather than reaching the machine's own server on the default socket."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env() -> dict:
    """The environment without PG* variables, so that nothing points a tool at another server."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PG")}


class PrivatePostgres:
    """A running private server: its URL, socket folder, port, database, version and folder."""

    def __init__(self, root, bindir, port, dbname, as_user):
        self.root = root                                  # removed on exit
        self.bindir = bindir
        self.data = os.path.join(root, "data")
        self.socket_dir = os.path.join(root, "sock")
        self.log = os.path.join(root, "server.log")
        self.port = port
        self.dbname = dbname
        self.as_user = as_user                            # command prefix that runs as the server's user
        self.version = ""                                 # `postgres --version`
        self.process = None                               # the postmaster (a child of this process)

    def url_for(self, dbname: str) -> str:
        """A URL of database `dbname` on this server, as libpq and psycopg read it."""
        return f"postgresql:///{dbname}?host={self.socket_dir}&port={self.port}&user=postgres"

    @property
    def url(self) -> str:
        return self.url_for(self.dbname)

    @property
    def pid(self):
        return self.process.pid if self.process else None

    def tool(self, name, *args, user=False, check=True):
        """Runs bin/`name` with `args` (as the server's user when `user`); its output."""
        cmd = [*([*self.as_user, "--"] if user else []), os.path.join(self.bindir, name), *args]
        r = subprocess.run(cmd, cwd=self.root, env=clean_env(), capture_output=True, text=True, timeout=120)
        if check and r.returncode != 0:
            raise RuntimeError(f"{name} failed (exit {r.returncode}): {(r.stderr or r.stdout).strip()}")
        return r.stdout

    def start(self):
        self.version = self.tool("postgres", "--version").strip()
        self.tool("initdb", "-D", self.data, "--auth=trust", "-U", "postgres", "--no-sync", "--encoding=UTF8",
                  "--locale=C", user=True)
        cmd = [*self.as_user, "--pdeathsig", "SIGQUIT", "--", os.path.join(self.bindir, "postgres"),
               "-D", self.data, "-p", str(self.port), "-c", "listen_addresses=",
               "-c", f"unix_socket_directories={self.socket_dir}", "-c", "fsync=off", "-c", "full_page_writes=off"]
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(cmd, cwd=self.root, env=clean_env(), stdin=subprocess.DEVNULL,
                                            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_SECONDS
        while True:
            ready = subprocess.run([os.path.join(self.bindir, "pg_isready"), "-q", "-h", self.socket_dir,
                                    "-p", str(self.port)], env=clean_env(), timeout=30).returncode == 0
            if ready:
                break
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the private PostgreSQL did not start (exit {self.process.poll()}); "
                                   f"its log: {self.log_tail()}")
            time.sleep(0.1)
        self.create_database(self.dbname)

    def create_database(self, dbname, *options) -> str:
        """A new database `dbname` (createdb `options`, e.g. --locale-provider=icu), its URL."""
        self.tool("createdb", "-h", self.socket_dir, "-p", str(self.port), "-U", "postgres", *options, dbname)
        return self.url_for(dbname)

    def log_tail(self, lines=20) -> str:
        try:
            with open(self.log, encoding="utf-8", errors="replace") as f:
                return " | ".join(f.read().splitlines()[-lines:])
        except OSError:
            return "(none)"

    def stop(self):
        """Immediate shutdown, then the postmaster waited for (killed if it will not go)."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.tool("pg_ctl", "stop", "-D", self.data, "-m", "immediate", "-w", "-t", "30",
                      user=True, check=False)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.send_signal(signal.SIGKILL)
                self.process.wait(timeout=30)


def _user_prefix():
    """(command prefix running a program as the server's user, its uid and gid); the prefix is
    setpriv alone (no change of user) when this is not root. Skips the test when it cannot be."""
    if not shutil.which("setpriv"):
        pytest.skip("setpriv (util-linux) is not installed: it starts the private PostgreSQL")
    if os.geteuid() != 0:
        return ["setpriv"], os.geteuid(), os.getegid()
    try:
        pw = pwd.getpwnam(SERVER_USER)
    except KeyError:
        pytest.skip(f"running as root and there is no `{SERVER_USER}` user to run PostgreSQL as "
                    "(Debian's postgresql package makes it: scripts/setup.sh)")
    return ["setpriv", f"--reuid={pw.pw_uid}", f"--regid={pw.pw_gid}", "--init-groups"], pw.pw_uid, pw.pw_gid


def _folder(tmp_dir, prefix, port):
    """The server's own new folder: in `tmp_dir` if the server's user reaches it and the socket's
    path fits, else under the system's temporary folder (see the module's text)."""
    socket_tail = len("/pg-XXXXXXXX/sock/.s.PGSQL.") + len(str(port)) + len(".lock")
    base = os.path.abspath(tmp_dir)
    reachable = subprocess.run([*prefix, "--", "test", "-x", base, "-a", "-d", base], env=clean_env()).returncode == 0
    if not reachable or len(base) + socket_tail > SOCKET_NAME_MAX:
        base = tempfile.gettempdir()
    return tempfile.mkdtemp(prefix="pg-", dir=base)


@contextlib.contextmanager
def private_postgres(tmp_dir, dbname="ipclab"):
    """A private PostgreSQL server with database `dbname`, yielded as a PrivatePostgres (`.url`);
    stopped, and its folder removed, on every way out. Skips when the server binaries are absent."""
    bindir = server_bin()
    if bindir is None:
        pytest.skip("PostgreSQL's server binaries (/usr/lib/postgresql/*/bin) are not installed: "
                    "apt-get install postgresql (scripts/setup.sh installs it)")
    prefix, uid, gid = _user_prefix()
    port = free_port()
    root = _folder(tmp_dir, prefix, port)
    server = PrivatePostgres(root, bindir, port, dbname, prefix)
    try:
        os.mkdir(server.socket_dir, 0o700)
        for path in (root, server.socket_dir):
            os.chown(path, uid, gid)
        server.start()
        yield server
    finally:
        try:
            server.stop()
        finally:
            shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def postgres_server(tmp_path):
    """The fixture form: `from postgres import postgres_server` in a test module, then a test's
    `postgres_server` argument is a running PrivatePostgres."""
    with private_postgres(tmp_path) as server:
        yield server
