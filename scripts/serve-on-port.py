#!/usr/bin/env python3
"""Runs a server that takes its address on the command line under the port contract of
servers/peer and echo/peer (docs/servers.md): picks a free loopback port, becomes the server on
it (exec: the process the harness started, pinned, watches, charges and kills is the server
itself), and prints the port once the server listens. For servers that cannot print their own
port, such as reference 001's (hello-io-cxx: `01-ss-1th 127.0.0.1 8080`):

    ipclab run servers/peer -p server=/path/to/01-ss-1th -p address=argv

Usage: serve-on-port.py SERVER [ARG...]. `{host}` and `{port}` in the arguments are replaced by
the address; without them, `127.0.0.1 PORT` is appended. The server's own output is discarded
(it would otherwise fill the pipe the harness reads the port from)."""
import ctypes
import os
import signal
import socket
import sys
import time

PR_SET_PDEATHSIG = 1


def listening(port):
    """Whether a TCP socket listens on `port`, from /proc/net/tcp{,6}: a probe connection would
    be a client to the server, and a server of the protocol may not survive one that sends no
    line (reference 001's answers EOF with a send, and dies of SIGPIPE)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                        return True
        except FileNotFoundError:
            continue
    return False


def announce(port, server_pid, name):
    """In a child of the server: print the port once it listens, then exit. Dies with the server."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while not listening(port):
        if os.getppid() != server_pid:
            os._exit(1)  # the server died before it listened: the harness sees its death
        if time.monotonic() > deadline:
            print(f"serve-on-port.py: {name} did not listen on port {port} within 10 s", file=sys.stderr)
            os._exit(1)
        time.sleep(0.01)
    print(port, flush=True)
    os._exit(0)


def main(argv):
    if not argv:
        print("usage: serve-on-port.py SERVER [ARG...]  ({host} and {port} in ARGs are replaced)",
              file=sys.stderr)
        return 2
    # A free port: the kernel's choice for a socket that is closed again at once. Another process
    # could take it in between; the server then fails to bind, and its exit fails the run.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = [a.replace("{host}", "127.0.0.1").replace("{port}", str(port)) for a in argv[1:]]
    if not any("{port}" in a for a in argv[1:]):
        args += ["127.0.0.1", str(port)]
    me = os.getpid()
    if os.fork() == 0:
        announce(port, me, argv[0])  # keeps the harness's stdout; never returns
    # The server: this process, its output discarded (the announcer has its own stdout).
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.execv(argv[0], [argv[0], *args])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
