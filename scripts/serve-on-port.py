#!/usr/bin/env python3
"""Runs a server that takes its address on the command line under the port contract of
servers/peer and echo/peer (docs/servers.md): picks a free loopback port, starts the server on it,
waits until it listens, prints the port as one line, and runs until killed; the server
dies with it. For servers that cannot print their own port, such as reference 001's
(hello-io-cxx: `01-ss-1th 127.0.0.1 8080`):

    ipclab run servers/peer -p server=$PWD/scripts/serve-on-port.py -p server_args=/path/to/01-ss-1th

Usage: serve-on-port.py SERVER [ARG...]. `{host}` and `{port}` in the arguments are replaced by
the address; without them, `127.0.0.1 PORT` is appended. The server's own output is discarded
(it would otherwise fill the pipe the harness reads the port from)."""
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1


def die_with_parent():
    # The server must not outlive this wrapper, whatever kills it (the harness uses SIGKILL).
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def listening(port):
    """Whether a TCP socket listens on `port`, from /proc/net/tcp{,6}: a probe connection would
    be a client to the server, and a server of the protocol may not survive one that sends no
    line (reference 001's answers EOF with a send, and dies of SIGPIPE)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    local, state = line.split()[1], line.split()[3]
                    if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                        return True
        except FileNotFoundError:
            continue
    return False


def main(argv):
    if not argv:
        print("usage: serve-on-port.py SERVER [ARG...]  ({host} and {port} in ARGs are replaced)",
              file=sys.stderr)
        return 2
    # A free port: the kernel's choice for a socket that is closed again at once. Another process
    # could take it in between; the server then fails to bind and this wrapper says so.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = [a.replace("{host}", "127.0.0.1").replace("{port}", str(port)) for a in argv[1:]]
    if not any("{port}" in a for a in argv[1:]):
        args += ["127.0.0.1", str(port)]
    server = subprocess.Popen([argv[0], *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, preexec_fn=die_with_parent)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: (server.kill(), sys.exit(0)))
    deadline = time.monotonic() + 10
    while True:
        if server.poll() is not None:
            print(f"serve-on-port.py: {argv[0]} exited with {server.returncode} before it accepted "
                  f"connections on port {port}", file=sys.stderr)
            return 1
        if listening(port):
            break
        if time.monotonic() > deadline:
            server.kill()
            print(f"serve-on-port.py: {argv[0]} did not listen on port {port} within 10 s",
                  file=sys.stderr)
            return 1
        time.sleep(0.01)
    print(port, flush=True)
    return server.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
