#!/usr/bin/env python3
"""A minimal external server of the servers suite's protocol, following docs/servers.md (the default
of servers/peer): every line but `exit` is answered `pong`; after `exit` the connection is closed.
`serve` takes the reply as a function, so that tests/servers/faulty_server.py is this server with
faults. Given `HOST PORT`, it listens there and prints nothing, as reference 001's servers do
(servers/peer `address=argv`)."""
import selectors
import socket
import sys


def pong(index, n):
    return b"pong\n"


def serve(reply=pong, backlog=4096, address=None):
    """Serves forever. reply(index, n): the bytes to send for the n-th line (from 1) of the
    index-th connection accepted (from 0); None closes the connection instead. address: (host,
    port) to listen on, or None for a port of the kernel's choice, printed."""
    sel = selectors.DefaultSelector()
    lsock = socket.socket()
    lsock.bind(address or ("127.0.0.1", 0))
    lsock.listen(backlog)
    lsock.setblocking(False)
    sel.register(lsock, selectors.EVENT_READ)
    if not address:
        print(lsock.getsockname()[1], flush=True)
    conns = {}  # connection -> [index, lines seen, unfinished line]
    accepted = 0
    while True:
        for key, _ in sel.select():
            if key.fileobj is lsock:
                try:
                    conn, _ = lsock.accept()
                except BlockingIOError:
                    continue
                conn.setblocking(True)  # replies are a few bytes: a send never waits
                sel.register(conn, selectors.EVENT_READ)
                conns[conn] = [accepted, 0, b""]
                accepted += 1
                continue
            conn = key.fileobj
            st = conns[conn]
            try:
                data = conn.recv(4096)
            except ConnectionError:
                data = b""
            done = not data
            *lines, st[2] = (st[2] + data).split(b"\n")
            out = b""
            for line in lines:
                st[1] += 1
                r = None if line == b"exit" else reply(st[0], st[1])
                if r is None:
                    done = True
                    break
                out += r
            try:
                if out:
                    conn.sendall(out)
            except ConnectionError:
                done = True
            if done:
                sel.unregister(conn)
                del conns[conn]
                conn.close()


if __name__ == "__main__":
    serve(address=(sys.argv[1], int(sys.argv[2])) if len(sys.argv) == 3 else None)
