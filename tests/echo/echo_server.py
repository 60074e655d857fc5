#!/usr/bin/env python3
"""A minimal peer echo server following docs/echo.md (used by echo_test's exec path)."""
import selectors
import socket
import sys

sel = selectors.DefaultSelector()
lsock = socket.socket()
lsock.bind(("127.0.0.1", 0))
lsock.listen(128)
lsock.setblocking(False)
sel.register(lsock, selectors.EVENT_READ)
print(lsock.getsockname()[1], flush=True)
while True:
    for key, _ in sel.select():
        if key.fileobj is lsock:
            conn, _ = lsock.accept()
            conn.setblocking(True)
            sel.register(conn, selectors.EVENT_READ)
            continue
        try:
            data = key.fileobj.recv(65536)
            if data:
                key.fileobj.sendall(data)
                continue
        except ConnectionError:  # a client that resets at the end of the run: as a close
            pass
        sel.unregister(key.fileobj)
        key.fileobj.close()
