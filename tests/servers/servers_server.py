#!/usr/bin/env python3
"""A minimal external server of the servers suite's protocol, following docs/servers.md (the default
of servers/peer): every line but `exit` is answered `pong`; after `exit` the connection is closed."""
import selectors
import socket

sel = selectors.DefaultSelector()
lsock = socket.socket()
lsock.bind(("127.0.0.1", 0))
lsock.listen(4096)
lsock.setblocking(False)
sel.register(lsock, selectors.EVENT_READ)
print(lsock.getsockname()[1], flush=True)
pending = {}  # connection -> bytes of an unfinished line
while True:
    for key, _ in sel.select():
        if key.fileobj is lsock:
            try:
                conn, _ = lsock.accept()
            except BlockingIOError:
                continue
            conn.setblocking(True)  # replies are a few bytes: a send never waits
            sel.register(conn, selectors.EVENT_READ)
            pending[conn] = b""
            continue
        conn = key.fileobj
        try:
            data = conn.recv(4096)
        except ConnectionError:
            data = b""
        done = not data
        *lines, pending[conn] = (pending[conn] + data).split(b"\n")
        reply = b""
        for line in lines:
            if line == b"exit":
                done = True
                break
            reply += b"pong\n"
        try:
            if reply:
                conn.sendall(reply)
        except ConnectionError:
            done = True
        if done:
            sel.unregister(conn)
            del pending[conn]
            conn.close()
